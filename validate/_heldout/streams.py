"""Held-out streaming kernels: a 2-D matrix copy launched with blocks of different shapes
(32x8 down to 1x256: from full 128-byte rows per warp to one column of 32 rows), an
in-place x[i] += a*y[i] with a grid-stride loop, a scatter through a random permutation
(every 4-byte store alone in its sector), and a byte-wise memset with a grid-stride loop.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from programs.base import Case
from validate._heldout import blocks, small_ints

BLOCK = 256
STRIDE_BLOCKS = 1056                    # grid-stride launches: 8 blocks of 256 threads per SM, 132 SMs


@cuda.jit
def matrix_copy2d(src, dst):
    j, i = cuda.grid(2)
    if i < src.shape[0] and j < src.shape[1]:
        dst[i, j] = src[i, j]


@cuda.jit
def axpy_inplace(a, x, y):
    i = cuda.grid(1)
    while i < x.size:
        x[i] += a * y[i]
        i += cuda.gridsize(1)


@cuda.jit
def scatter_store(x, perm, out):
    i = cuda.grid(1)
    if i < x.size:
        out[perm[i]] = x[i]


@cuda.jit
def memset_bytes(buf, value):
    i = cuda.grid(1)
    while i < buf.size:
        buf[i] = value
        i += cuda.gridsize(1)


# ---- builders ----------------------------------------------------------------------

def build_copy2d(rng, rows, cols, bx, by):
    if bx * by > 1024:
        raise ValueError(f"matrix_copy2d: block {bx}x{by} has more than 1024 threads")
    src = rng.standard_normal((rows, cols), dtype=np.float32)
    return Case("matrix_copy2d", matrix_copy2d, (blocks(cols, bx), blocks(rows, by)), (bx, by),
                (src, np.full((rows, cols), np.nan, np.float32)), {1: src})


def build_axpy(rng, n, a=2.0, grid=STRIDE_BLOCKS):
    x = small_ints(rng, n, -100, 100)                  # integers, a = 2: exact, fused or not
    y = small_ints(rng, n, -100, 100)
    alpha = np.float32(a)
    return Case("axpy_inplace", axpy_inplace, (grid,), (BLOCK,), (alpha, x, y), {1: x + alpha * y})


def build_scatter(rng, n):
    x = rng.integers(-(1 << 30), 1 << 30, n, dtype=np.int32)
    perm = rng.permutation(n).astype(np.int32)
    want = np.empty(n, np.int32)
    want[perm] = x
    return Case("scatter_store", scatter_store, (blocks(n, BLOCK),), (BLOCK,),
                (x, perm, np.zeros(n, np.int32)), {2: want})


def build_memset(rng, n, value=0xA5, grid=STRIDE_BLOCKS):
    buf = np.zeros(n, np.uint8)
    return Case("memset_bytes", memset_bytes, (grid,), (BLOCK,), (buf, np.uint8(value)),
                {0: np.full(n, value, np.uint8)})
