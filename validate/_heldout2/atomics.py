"""Atomics: histograms of uniform int32 keys with one global atomic per key (32 and 256 bins:
heavy contention on a few lines; 2^20 bins: scattered), the same histograms privatised in
shared memory (each thread 32 keys, block-strided so loads coalesce; the block's bins
merged with one global atomic per nonzero bin), and a float32 sum with one atomic per
thread on a single address (the per-thread member of the reductions in course.py).
Counts are exact int32; float sums are of small integers, exact in any order.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, int32

from programs.base import Case
from validate._heldout2 import blocks, small_ints

BLOCK = 256
ITEMS = 32                              # hist_shared_priv: keys per thread
MAX_SHARED_BINS = 4096


@cuda.jit
def hist_global_atomic(keys, bins):
    i = cuda.grid(1)
    if i < keys.size:
        cuda.atomic.add(bins, keys[i], 1)


@cuda.jit
def hist_shared_priv(keys, bins):
    sbins = cuda.shared.array(MAX_SHARED_BINS, int32)
    t = cuda.threadIdx.x
    nbins = bins.size
    for b in range(t, nbins, BLOCK):
        sbins[b] = 0
    cuda.syncthreads()
    base = cuda.blockIdx.x * (BLOCK * ITEMS) + t
    for k in range(ITEMS):
        i = base + k * BLOCK
        if i < keys.size:
            cuda.atomic.add(sbins, keys[i], 1)
    cuda.syncthreads()
    for b in range(t, nbins, BLOCK):
        c = sbins[b]
        if c != 0:
            cuda.atomic.add(bins, b, c)


@cuda.jit
def atomic_add_single_f32(x, total):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(total, 0, x[i])


# ---- builders ----------------------------------------------------------------------

def _keys(rng, n, nbins):
    keys = rng.integers(0, nbins, n, dtype=np.int32)
    return keys, np.bincount(keys, minlength=nbins).astype(np.int32)


def build_hist_global(rng, n, nbins):
    keys, want = _keys(rng, n, nbins)
    return Case("hist_global_atomic", hist_global_atomic, (blocks(n, BLOCK),), (BLOCK,),
                (keys, np.zeros(nbins, np.int32)), {1: want})


def build_hist_shared(rng, n, nbins):
    if not 0 < nbins <= MAX_SHARED_BINS:
        raise ValueError(f"hist_shared_priv: nbins must be in 1..{MAX_SHARED_BINS}, got {nbins}")
    keys, want = _keys(rng, n, nbins)
    return Case("hist_shared_priv", hist_shared_priv, (blocks(n, BLOCK * ITEMS),), (BLOCK,),
                (keys, np.zeros(nbins, np.int32)), {1: want})


def build_atomic_single(rng, n):
    x = small_ints(rng, n, -8, 8)
    want = np.array([x.sum(dtype=np.int64)], np.float32)
    return Case("atomic_add_single_f32", atomic_add_single_f32, (blocks(n, BLOCK),), (BLOCK,),
                (x, np.zeros(1, np.float32)), {1: want})
