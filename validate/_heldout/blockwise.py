"""Held-out block-level kernels: a float64 sum (grid-stride, shared float64 tree, one
partial per block), an inclusive scan per block built from warp shuffles (shfl_up_sync)
and a shared array of warp totals, a full bitonic sort of 1,024 keys per block in shared
memory (55 compare-exchange steps, each behind a barrier), and a layernorm over rows
(one block per row, warp-shuffle plus shared-memory float32 reductions, two passes).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32, float64, int32

from programs.base import Case
from validate._heldout import blocks, small_ints

BLOCK = 256
WARPS = BLOCK // 32
FULL_MASK = 0xFFFFFFFF
SORT_N, SORT_THREADS = 1024, 512        # keys per block, threads per block (one pair each)


@cuda.jit
def reduce_f64(x, partial):
    sdata = cuda.shared.array(BLOCK, float64)
    tid = cuda.threadIdx.x
    acc = float64(0)
    i = cuda.grid(1)
    while i < x.size:
        acc += x[i]
        i += cuda.gridsize(1)
    sdata[tid] = acc
    cuda.syncthreads()
    s = BLOCK // 2
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = sdata[0]


@cuda.jit
def warp_scan(x, out):
    warp_sums = cuda.shared.array(WARPS, float32)
    tid = cuda.threadIdx.x
    lane = tid % 32
    wid = tid // 32
    i = cuda.grid(1)
    v = float32(0)
    if i < x.size:
        v = x[i]
    d = 1
    while d < 32:
        t = cuda.shfl_up_sync(FULL_MASK, v, d)
        if lane >= d:
            v += t
        d *= 2
    if lane == 31:
        warp_sums[wid] = v
    cuda.syncthreads()
    if wid == 0:                            # the first warp scans the warp totals
        s = float32(0)
        if lane < WARPS:
            s = warp_sums[lane]
        d = 1
        while d < WARPS:
            t = cuda.shfl_up_sync(FULL_MASK, s, d)
            if lane >= d:
                s += t
            d *= 2
        if lane < WARPS:
            warp_sums[lane] = s
    cuda.syncthreads()
    if wid > 0:
        v += warp_sums[wid - 1]
    if i < x.size:
        out[i] = v


@cuda.jit
def bitonic_sort_block(keys, out):
    s = cuda.shared.array(SORT_N, int32)
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * SORT_N
    s[t] = keys[base + t]
    s[t + SORT_THREADS] = keys[base + t + SORT_THREADS]
    cuda.syncthreads()
    k = 2
    while k <= SORT_N:
        j = k // 2
        while j > 0:
            i = 2 * t - (t & (j - 1))       # lower index of this thread's pair (i, i + j)
            a = s[i]
            b = s[i + j]
            if (a > b) == ((i & k) == 0):   # ascending where bit k of i is clear
                s[i] = b
                s[i + j] = a
            cuda.syncthreads()
            j //= 2
        k *= 2
    out[base + t] = s[t]
    out[base + t + SORT_THREADS] = s[t + SORT_THREADS]


@cuda.jit(device=True)
def _block_sum(v, buf):
    """Sum of v over the block, returned to every thread; buf: WARPS float32 in shared."""
    lane = cuda.threadIdx.x % 32
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(FULL_MASK, v, offset)
        offset //= 2
    if lane == 0:
        buf[cuda.threadIdx.x // 32] = v
    cuda.syncthreads()
    total = float32(0)
    for w in range(WARPS):
        total += buf[w]
    cuda.syncthreads()                      # all have read buf before it is reused
    return total


@cuda.jit
def layernorm_rows(x, gamma, beta, y, eps):
    buf = cuda.shared.array(WARPS, float32)
    row = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    cols = x.shape[1]
    n = float32(cols)
    s = float32(0)
    for j in range(tid, cols, BLOCK):
        s += x[row, j]
    mean = _block_sum(s, buf) / n
    q = float32(0)
    for j in range(tid, cols, BLOCK):
        d = x[row, j] - mean
        q += d * d
    rstd = float32(1) / math.sqrt(_block_sum(q, buf) / n + eps)
    for j in range(tid, cols, BLOCK):
        y[row, j] = (x[row, j] - mean) * rstd * gamma[j] + beta[j]


# ---- builders ----------------------------------------------------------------------

def build_reduce_f64(rng, n, grid=1056):
    x = rng.random(n)                                   # float64 in [0, 1): no cancellation
    padded = np.zeros(blocks(n, grid * BLOCK) * grid * BLOCK)
    padded[:n] = x
    want = padded.reshape(-1, grid, BLOCK).sum(axis=(0, 2))    # element i goes to block (i // 256) % grid
    return Case("reduce_f64", reduce_f64, (grid,), (BLOCK,), (x, np.full(grid, np.nan)), {1: want}, rtol=1e-12)


def build_warp_scan(rng, n):
    x = small_ints(rng, n, -100, 100)                   # |prefix| <= 25,600: exact in float32
    grid = blocks(n, BLOCK)
    padded = np.zeros(grid * BLOCK, np.float32)
    padded[:n] = x
    want = np.cumsum(padded.reshape(grid, BLOCK), axis=1).reshape(-1)[:n]
    return Case("warp_scan", warp_scan, (grid,), (BLOCK,), (x, np.full(n, np.nan, np.float32)), {1: want})


def build_bitonic(rng, n):
    if n % SORT_N:
        raise ValueError(f"bitonic_sort_block: n must be a multiple of {SORT_N}, got {n}")
    keys = rng.integers(-(1 << 31), 1 << 31, n, dtype=np.int32)
    want = np.sort(keys.reshape(-1, SORT_N), axis=1).reshape(-1)
    return Case("bitonic_sort_block", bitonic_sort_block, (n // SORT_N,), (SORT_THREADS,),
                (keys, np.zeros(n, np.int32)), {1: want})


def build_layernorm(rng, rows, cols, eps=1e-5):
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    gamma = rng.uniform(0.5, 1.5, cols).astype(np.float32)
    beta = rng.uniform(-0.5, 0.5, cols).astype(np.float32)
    xd = x.astype(np.float64)
    xd -= xd.mean(axis=1, keepdims=True)
    xd *= 1 / np.sqrt(np.mean(xd * xd, axis=1, keepdims=True) + eps)
    xd *= gamma
    xd += beta
    want = xd.astype(np.float32)
    # float32 sums over <= 1024 values of N(0, 1) and rsqrt: ~1e-6 absolute on outputs <= ~8.
    return Case("layernorm_rows", layernorm_rows, (rows,), (BLOCK,),
                (x, gamma, beta, np.full((rows, cols), np.nan, np.float32), np.float32(eps)), {3: want},
                rtol=1e-5, atol=1e-5)
