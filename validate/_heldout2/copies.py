"""Copies: n int32 elements copied with neighbouring lanes `stride` elements apart (4 B, 32 B
and 128 B: one sector per lane from 32 B, one line per lane at 128 B), and float32 matrices
copied and transposed with 32x32 tiles and 32x8 blocks (each thread 4 rows), as in the
classic transpose exercise: a tiled copy (the bandwidth to compare against), the naive
transpose (reads coalesced, writes 32 rows apart), a shared-memory tile without padding
(32-way bank conflicts when the tile is read by columns) and with one word of padding.
Matrix sides are multiples of 32.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

from programs.base import Case
from validate._heldout2 import blocks

BLOCK = 256
TILE, ROWS = 32, 8                      # 32x32 tiles, blocks of 32x8 threads
PADDED = TILE + 1


@cuda.jit
def strided_copy(src, dst, n, stride):
    i = cuda.grid(1)
    if i < n:
        dst[i * stride] = src[i * stride]


@cuda.jit
def copy2d_tile(src, dst):
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for k in range(0, TILE, ROWS):
        dst[y + k, x] = src[y + k, x]


@cuda.jit
def transpose_naive_2d(src, dst):
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for k in range(0, TILE, ROWS):
        dst[x, y + k] = src[y + k, x]


@cuda.jit
def transpose_tiled_2d(src, dst):
    tile = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for k in range(0, TILE, ROWS):
        tile[ty + k, tx] = src[y + k, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for k in range(0, TILE, ROWS):
        dst[y + k, x] = tile[tx, ty + k]


@cuda.jit
def transpose_padded_2d(src, dst):
    tile = cuda.shared.array((TILE, PADDED), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for k in range(0, TILE, ROWS):
        tile[ty + k, tx] = src[y + k, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for k in range(0, TILE, ROWS):
        dst[y + k, x] = tile[tx, ty + k]


# ---- builders ----------------------------------------------------------------------

def build_strided_copy(rng, n, stride):
    values = rng.integers(-(1 << 31), 1 << 31, n, dtype=np.int32)
    src = np.zeros(n * stride, np.int32)
    src[::stride] = values
    dst = np.full(n * stride, -1, np.int32)
    want = dst.copy()                   # the elements between the lanes' are left alone
    want[::stride] = values
    return Case("strided_copy", strided_copy, (blocks(n, BLOCK),), (BLOCK,),
                (src, dst, np.int64(n), np.int64(stride)), {1: want})


_MATRIX_KERNELS = {"copy2d_tile": copy2d_tile, "transpose_naive_2d": transpose_naive_2d,
                   "transpose_tiled_2d": transpose_tiled_2d, "transpose_padded_2d": transpose_padded_2d}


def _build_matrix(name, rng, rows, cols):
    if rows % TILE or cols % TILE:
        raise ValueError(f"{name}: rows and cols must be multiples of {TILE}, got {rows} x {cols}")
    src = rng.standard_normal((rows, cols), dtype=np.float32)
    want = src.copy() if name == "copy2d_tile" else np.ascontiguousarray(src.T)
    return Case(name, _MATRIX_KERNELS[name], (cols // TILE, rows // TILE), (TILE, ROWS),
                (src, np.full(want.shape, np.nan, np.float32)), {1: want})


def build_copy2d(rng, rows, cols):
    return _build_matrix("copy2d_tile", rng, rows, cols)


def build_transpose_naive(rng, rows, cols):
    return _build_matrix("transpose_naive_2d", rng, rows, cols)


def build_transpose_tiled(rng, rows, cols):
    return _build_matrix("transpose_tiled_2d", rng, rows, cols)


def build_transpose_padded(rng, rows, cols):
    return _build_matrix("transpose_padded_2d", rng, rows, cols)
