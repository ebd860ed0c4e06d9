"""Held-out kernels whose inputs are reused through L1/L2 (or a shared tile): 2-D 5- and
9-point stencils and a 5x5 box blur reading global memory only, a 3-D 7-point stencil
on a 3-D grid, and a 5x5 convolution staged through a shared-memory tile with its halo.

Inputs are small integers stored as float32 (or uint8 pixels), so every sum is exact and
the references compare exactly. Borders: the stencils copy the input on the border, the
blur and the convolution clamp indices to the edge (numpy's `mode="edge"`).
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

from programs.base import Case
from validate._heldout import blocks, small_ints

BX, BY = 32, 8                         # 2-D launches: a warp is one 32-wide row segment
R = 2                                  # box blur and convolution radius (5x5)
TILE = 16                              # convolution output tile per block (16x16 threads)
HALO = TILE + 2 * R                    # the shared tile with its halo: 20x20
INV25 = np.float32(1 / 25)


@cuda.jit
def stencil2d_5pt(x, out):
    j, i = cuda.grid(2)
    h, w = x.shape
    if i < h and j < w:
        if 0 < i < h - 1 and 0 < j < w - 1:
            out[i, j] = float32(4) * x[i, j] - x[i - 1, j] - x[i + 1, j] - x[i, j - 1] - x[i, j + 1]
        else:
            out[i, j] = x[i, j]


@cuda.jit
def stencil2d_9pt(x, out):
    j, i = cuda.grid(2)
    h, w = x.shape
    if i < h and j < w:
        if 0 < i < h - 1 and 0 < j < w - 1:
            up = x[i - 1, j - 1] + float32(2) * x[i - 1, j] + x[i - 1, j + 1]
            mid = float32(2) * x[i, j - 1] + float32(4) * x[i, j] + float32(2) * x[i, j + 1]
            down = x[i + 1, j - 1] + float32(2) * x[i + 1, j] + x[i + 1, j + 1]
            out[i, j] = up + mid + down
        else:
            out[i, j] = x[i, j]


@cuda.jit
def box_blur_5x5(img, out):
    j, i = cuda.grid(2)
    h, w = img.shape
    if i < h and j < w:
        acc = 0
        for dy in range(-R, R + 1):
            ii = min(max(i + dy, 0), h - 1)
            for dx in range(-R, R + 1):
                jj = min(max(j + dx, 0), w - 1)
                acc += img[ii, jj]
        out[i, j] = float32(acc) * INV25


@cuda.jit
def stencil3d_7pt(x, out):
    k, j, i = cuda.grid(3)              # k: fastest (x), j: rows (y), i: planes (z)
    d, h, w = x.shape
    if i < d and j < h and k < w:
        if 0 < i < d - 1 and 0 < j < h - 1 and 0 < k < w - 1:
            out[i, j, k] = (float32(6) * x[i, j, k] - x[i - 1, j, k] - x[i + 1, j, k]
                            - x[i, j - 1, k] - x[i, j + 1, k] - x[i, j, k - 1] - x[i, j, k + 1])
        else:
            out[i, j, k] = x[i, j, k]


@cuda.jit
def conv2d_shared_tile(img, wts, out):
    tile = cuda.shared.array((HALO, HALO), float32)
    h, w = img.shape
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row0 = cuda.blockIdx.y * TILE - R
    col0 = cuda.blockIdx.x * TILE - R
    t = ty * TILE + tx
    while t < HALO * HALO:              # 400 cells by 256 threads: the second round is partial
        sy = t // HALO
        sx = t % HALO
        gy = min(max(row0 + sy, 0), h - 1)
        gx = min(max(col0 + sx, 0), w - 1)
        tile[sy, sx] = img[gy, gx]
        t += TILE * TILE
    cuda.syncthreads()
    i = cuda.blockIdx.y * TILE + ty
    j = cuda.blockIdx.x * TILE + tx
    if i < h and j < w:
        acc = float32(0)
        for dy in range(2 * R + 1):
            for dx in range(2 * R + 1):
                acc += wts[dy, dx] * tile[ty + dy, tx + dx]
        out[i, j] = acc


# ---- builders ----------------------------------------------------------------------

def _grid2(h, w):
    return (blocks(w, BX), blocks(h, BY)), (BX, BY)


def _stencil_case(name, kernel, x, want):
    grid, block = _grid2(*x.shape)
    return Case(name, kernel, grid, block, (x, np.full(x.shape, np.nan, np.float32)), {1: want})


def build_stencil_5pt(rng, h, w):
    x = small_ints(rng, (h, w), -8, 8)
    want = x.copy()
    want[1:-1, 1:-1] = 4 * x[1:-1, 1:-1] - x[:-2, 1:-1] - x[2:, 1:-1] - x[1:-1, :-2] - x[1:-1, 2:]
    return _stencil_case("stencil2d_5pt", stencil2d_5pt, x, want)


def build_stencil_9pt(rng, h, w):
    x = small_ints(rng, (h, w), -8, 8)
    want = x.copy()
    c = lambda di, dj: x[1 + di:h - 1 + di, 1 + dj:w - 1 + dj]
    want[1:-1, 1:-1] = (c(-1, -1) + 2 * c(-1, 0) + c(-1, 1) + 2 * c(0, -1) + 4 * c(0, 0) + 2 * c(0, 1)
                        + c(1, -1) + 2 * c(1, 0) + c(1, 1))
    return _stencil_case("stencil2d_9pt", stencil2d_9pt, x, want)


def build_box_blur(rng, h, w):
    img = rng.integers(0, 256, (h, w), dtype=np.uint8)
    pad = np.pad(img, R, mode="edge").astype(np.int32)
    acc = np.zeros((h, w), np.int32)
    for dy in range(2 * R + 1):
        for dx in range(2 * R + 1):
            acc += pad[dy:dy + h, dx:dx + w]
    want = acc.astype(np.float32) * INV25               # one float32 rounding, as on the GPU
    grid, block = _grid2(h, w)
    return Case("box_blur_5x5", box_blur_5x5, grid, block, (img, np.full((h, w), np.nan, np.float32)), {1: want})


def build_stencil3d(rng, d, h, w, block=(32, 4, 2)):
    x = small_ints(rng, (d, h, w), -8, 8)
    want = x.copy()
    inner = (slice(1, -1),) * 3
    acc = 6 * x[inner]
    for axis in range(3):
        for off in (-1, 1):
            sl = [slice(1, -1)] * 3
            sl[axis] = slice(1 + off, x.shape[axis] - 1 + off)
            acc -= x[tuple(sl)]
    want[inner] = acc
    grid = (blocks(w, block[0]), blocks(h, block[1]), blocks(d, block[2]))
    return Case("stencil3d_7pt", stencil3d_7pt, grid, block, (x, np.full(x.shape, np.nan, np.float32)), {1: want})


def build_conv2d(rng, h, w):
    img = small_ints(rng, (h, w), -8, 8)
    wts = small_ints(rng, (2 * R + 1, 2 * R + 1), -2, 2)
    pad = np.pad(img, R, mode="edge")
    want = np.zeros((h, w), np.float32)
    for dy in range(2 * R + 1):
        for dx in range(2 * R + 1):
            want += wts[dy, dx] * pad[dy:dy + h, dx:dx + w]
    grid = (blocks(w, TILE), blocks(h, TILE))
    return Case("conv2d_shared_tile", conv2d_shared_tile, grid, (TILE, TILE),
                (img, wts, np.full((h, w), np.nan, np.float32)), {2: want})
