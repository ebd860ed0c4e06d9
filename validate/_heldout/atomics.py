"""Held-out atomics: one global counter hit by about half of all threads (same address,
at scale), a 65,536-bin global histogram of uniform keys (low contention, scattered
lines), and shared-memory histograms with 256 and 4,096 bins (grid-stride, per-block
privatised bins merged with global atomics). Counts are exact int32.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, int32

from programs.base import Case
from validate._heldout import blocks

BLOCK = 256
HIST_BLOCKS = 528                       # 4 blocks of 256 threads per SM on 132 SMs


@cuda.jit
def count_positive(x, counter):
    i = cuda.grid(1)
    if i < x.size and x[i] > 0:
        cuda.atomic.add(counter, 0, 1)


@cuda.jit
def histogram_global_wide(keys, bins):
    i = cuda.grid(1)
    if i < keys.size:
        cuda.atomic.add(bins, keys[i], 1)


@cuda.jit(device=True)
def _privatised_histogram(keys, bins, sbins, nbins):
    tid = cuda.threadIdx.x
    for b in range(tid, nbins, cuda.blockDim.x):
        sbins[b] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    while i < keys.size:
        cuda.atomic.add(sbins, keys[i], 1)
        i += cuda.gridsize(1)
    cuda.syncthreads()
    for b in range(tid, nbins, cuda.blockDim.x):
        c = sbins[b]
        if c != 0:
            cuda.atomic.add(bins, b, c)


@cuda.jit
def histogram_shared_256(keys, bins):
    sbins = cuda.shared.array(256, int32)
    _privatised_histogram(keys, bins, sbins, 256)


@cuda.jit
def histogram_shared_4096(keys, bins):
    sbins = cuda.shared.array(4096, int32)
    _privatised_histogram(keys, bins, sbins, 4096)


# ---- builders ----------------------------------------------------------------------

def build_counter(rng, n):
    x = rng.standard_normal(n, dtype=np.float32)
    want = np.array([np.count_nonzero(x > 0)], np.int32)
    return Case("count_positive", count_positive, (blocks(n, BLOCK),), (BLOCK,), (x, np.zeros(1, np.int32)), {1: want})


def build_histogram_wide(rng, n, nbins=65536):
    keys = rng.integers(0, nbins, n, dtype=np.int32)
    want = np.bincount(keys, minlength=nbins).astype(np.int32)
    return Case("histogram_global_wide", histogram_global_wide, (blocks(n, BLOCK),), (BLOCK,),
                (keys, np.zeros(nbins, np.int32)), {1: want})


def build_histogram_shared(rng, n, nbins, grid=HIST_BLOCKS):
    if nbins == 256:
        kernel, keys = histogram_shared_256, rng.integers(0, 256, n, dtype=np.uint8)
    elif nbins == 4096:
        kernel, keys = histogram_shared_4096, rng.integers(0, 4096, n, dtype=np.uint16)
    else:
        raise ValueError(f"histogram_shared: nbins must be 256 or 4096, got {nbins}")
    want = np.bincount(keys, minlength=nbins).astype(np.int32)
    return Case(kernel.py_func.__name__, kernel, (grid,), (BLOCK,), (keys, np.zeros(nbins, np.int32)), {1: want})
