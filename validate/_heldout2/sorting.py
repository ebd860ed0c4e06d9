"""Sorting: one compare-exchange step of a bitonic sort over a large array in global memory
(a full sort launches this once per (k, j) step; each size here is one such launch: partners
far apart, partners within a warp, and a larger array), and a block-local rank sort: 512 keys
per block in shared memory, each thread counting the keys that sort before its own (ties by
position) and writing its key to that rank -- no barriers in the O(n^2) loop.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, int32

from programs.base import Case
from validate._heldout2 import blocks

BLOCK = 256
RANK_N = 512                            # keys per block = threads per block


@cuda.jit
def bitonic_step_global(keys, j, k):
    i = cuda.grid(1)
    if i < keys.size:
        ixj = i ^ j
        if ixj > i:
            a = keys[i]
            b = keys[ixj]
            if (i & k) == 0:
                if a > b:
                    keys[i] = b
                    keys[ixj] = a
            elif a < b:
                keys[i] = b
                keys[ixj] = a


@cuda.jit
def rank_sort_block(keys, out):
    s = cuda.shared.array(RANK_N, int32)
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * RANK_N
    v = keys[base + t]
    s[t] = v
    cuda.syncthreads()
    rank = 0
    for m in range(RANK_N):
        u = s[m]
        if u < v or (u == v and m < t):
            rank += 1
    out[base + rank] = v


# ---- builders ----------------------------------------------------------------------

def bitonic_step(keys: np.ndarray, j: int, k: int) -> np.ndarray:
    """The array after one compare-exchange step (k, j) of a bitonic sort (j < k, powers of
    two): in each aligned group of 2j keys, element i pairs with i + j, ascending where bit k
    of the group's start is clear."""
    groups = keys.reshape(-1, 2, j)
    a, b = groups[:, 0, :], groups[:, 1, :]
    up = ((np.arange(len(groups)) * (2 * j)) & k == 0)[:, None]
    swap = np.where(up, a > b, a < b)
    out = np.empty_like(groups)
    out[:, 0, :] = np.where(swap, b, a)
    out[:, 1, :] = np.where(swap, a, b)
    return out.reshape(-1)


def build_bitonic_step(rng, n, j, k):
    if n & (n - 1) or not 0 < j < k <= n or j & (j - 1) or k & (k - 1):
        raise ValueError(f"bitonic_step_global: n, j, k must be powers of two with j < k <= n, got {n}, {j}, {k}")
    keys = rng.integers(-(1 << 31), 1 << 31, n, dtype=np.int32)
    want = bitonic_step(keys, j, k)
    return Case("bitonic_step_global", bitonic_step_global, (blocks(n, BLOCK),), (BLOCK,),
                (keys, np.int64(j), np.int64(k)), {0: want})


def build_rank_sort(rng, n, key_range=1000):
    if n % RANK_N:
        raise ValueError(f"rank_sort_block: n must be a multiple of {RANK_N}, got {n}")
    keys = rng.integers(0, key_range, n, dtype=np.int32)    # many ties
    want = np.sort(keys.reshape(-1, RANK_N), axis=1).reshape(-1)
    return Case("rank_sort_block", rank_sort_block, (n // RANK_N,), (RANK_N,),
                (keys, np.full(n, -1, np.int32)), {1: want})
