"""Classic course kernels: a STREAM-style triad, three reductions (warp shuffles with one
float atomic per warp, a shared-memory tree unrolled for the last warp with one atomic per
block, and -- in atomics.py -- one atomic per thread), a work-efficient (Blelloch) exclusive
scan of 1,024 elements per block in shared memory, and two GEMVs: a row-major matrix with
one warp per row and a column-major (Fortran-order) matrix with one thread per row.

Values are small integers stored as float32, so every sum is exact in any order (float
atomics included) and with or without fused multiply-adds.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

from programs.base import Case
from validate._heldout2 import blocks, small_ints

BLOCK = 256
FULL_MASK = 0xFFFFFFFF
TREE_THREADS, TREE_ITEMS = 512, 4       # reduce_unrolled_tree: 2,048 elements per block
SCAN_THREADS = 512                      # scan_blelloch_block: 1,024 elements per block
SCAN_N = 2 * SCAN_THREADS


@cuda.jit
def vec_triad(a, b, c, s):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = b[i] + s * c[i]


@cuda.jit
def reduce_warp_atomic_f32(x, total):
    i = cuda.grid(1)
    v = float32(0)
    if i < x.size:
        v = x[i]
    off = 16
    while off > 0:
        v += cuda.shfl_down_sync(FULL_MASK, v, off)
        off //= 2
    if cuda.threadIdx.x % 32 == 0:
        cuda.atomic.add(total, 0, v)


@cuda.jit
def reduce_unrolled_tree(x, total):
    s = cuda.shared.array(TREE_THREADS, float32)
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * (TREE_THREADS * TREE_ITEMS) + t
    acc = float32(0)
    for k in range(TREE_ITEMS):
        i = base + k * TREE_THREADS
        if i < x.size:
            acc += x[i]
    s[t] = acc
    cuda.syncthreads()
    step = TREE_THREADS // 2
    while step > 32:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t < 32:                          # the last 64 partials: one warp, no barriers
        v = s[t] + s[t + 32]
        off = 16
        while off > 0:
            v += cuda.shfl_down_sync(FULL_MASK, v, off)
            off //= 2
        if t == 0:
            cuda.atomic.add(total, 0, v)


@cuda.jit
def scan_blelloch_block(x, out):
    temp = cuda.shared.array(SCAN_N, float32)
    t = cuda.threadIdx.x
    a = cuda.blockIdx.x * SCAN_N + t
    b = a + SCAN_THREADS
    temp[t] = x[a] if a < x.size else float32(0)
    temp[t + SCAN_THREADS] = x[b] if b < x.size else float32(0)
    offset = 1
    d = SCAN_THREADS
    while d > 0:                        # up-sweep: partial sums in place
        cuda.syncthreads()
        if t < d:
            ai = offset * (2 * t + 1) - 1
            bi = offset * (2 * t + 2) - 1
            temp[bi] += temp[ai]
        offset *= 2
        d //= 2
    if t == 0:
        temp[SCAN_N - 1] = float32(0)
    d = 1
    while d < SCAN_N:                   # down-sweep
        offset //= 2
        cuda.syncthreads()
        if t < d:
            ai = offset * (2 * t + 1) - 1
            bi = offset * (2 * t + 2) - 1
            v = temp[ai]
            temp[ai] = temp[bi]
            temp[bi] += v
        d *= 2
    cuda.syncthreads()
    if a < x.size:
        out[a] = temp[t]
    if b < x.size:
        out[b] = temp[t + SCAN_THREADS]


@cuda.jit
def gemv_warp_row(a, x, y):
    row = cuda.grid(1) // 32
    lane = cuda.threadIdx.x % 32
    if row < a.shape[0]:                # the same for the whole warp
        acc = float32(0)
        for j in range(lane, a.shape[1], 32):
            acc += a[row, j] * x[j]
        off = 16
        while off > 0:
            acc += cuda.shfl_down_sync(FULL_MASK, acc, off)
            off //= 2
        if lane == 0:
            y[row] = acc


@cuda.jit
def gemv_colmajor(a, x, y):
    r = cuda.grid(1)
    if r < a.shape[0]:
        acc = float32(0)
        for j in range(a.shape[1]):
            acc += a[r, j] * x[j]
        y[r] = acc


# ---- builders ----------------------------------------------------------------------

def build_triad(rng, n):
    b = small_ints(rng, n, -100, 100)
    c = small_ints(rng, n, -100, 100)
    s = np.float32(3)
    return Case("vec_triad", vec_triad, (blocks(n, BLOCK),), (BLOCK,),
                (np.full(n, np.nan, np.float32), b, c, s), {0: b + s * c})


def build_reduce_warp_atomic(rng, n):
    x = small_ints(rng, n, -8, 8)                # every partial sum far below 2^24
    want = np.array([x.sum(dtype=np.int64)], np.float32)
    return Case("reduce_warp_atomic_f32", reduce_warp_atomic_f32, (blocks(n, BLOCK),), (BLOCK,),
                (x, np.zeros(1, np.float32)), {1: want})


def build_reduce_tree(rng, n):
    x = small_ints(rng, n, -8, 8)
    want = np.array([x.sum(dtype=np.int64)], np.float32)
    return Case("reduce_unrolled_tree", reduce_unrolled_tree, (blocks(n, TREE_THREADS * TREE_ITEMS),),
                (TREE_THREADS,), (x, np.zeros(1, np.float32)), {1: want})


def build_scan_blelloch(rng, n):
    x = small_ints(rng, n, -100, 100)            # |prefix| <= 102,400: exact
    grid = blocks(n, SCAN_N)
    padded = np.zeros(grid * SCAN_N, np.float32)
    padded[:n] = x
    incl = np.cumsum(padded.reshape(grid, SCAN_N), axis=1, dtype=np.float32)
    want = (incl - padded.reshape(grid, SCAN_N)).reshape(-1)[:n]
    return Case("scan_blelloch_block", scan_blelloch_block, (grid,), (SCAN_THREADS,),
                (x, np.full(n, np.nan, np.float32)), {1: want})


def build_gemv_warp_row(rng, rows, cols):
    a = small_ints(rng, (rows, cols), -2, 2)
    x = small_ints(rng, cols, -2, 2)
    return Case("gemv_warp_row", gemv_warp_row, (blocks(rows * 32, BLOCK),), (BLOCK,),
                (a, x, np.full(rows, np.nan, np.float32)), {2: a @ x})


def build_gemv_colmajor(rng, rows, cols):
    a = np.asfortranarray(small_ints(rng, (cols, rows), -2, 2).T)    # column j contiguous
    x = small_ints(rng, cols, -2, 2)
    return Case("gemv_colmajor", gemv_colmajor, (blocks(rows, BLOCK),), (BLOCK,),
                (a, x, np.full(rows, np.nan, np.float32)), {2: a @ x})
