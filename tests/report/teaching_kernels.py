"""Small kernels whose waste and whose fix are known, for the verdict's time estimates:
each comes with its counterfactual (the same work without the waste), so a test can
compare the estimated time saved with what the timing model gives the fixed kernel."""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

BX, BY = 32, 8
TILE_Y, TILE_X = BY + 2, BX + 2                # the 2-D stencil's tile with its one-element halo
MODULUS = 65521


@cuda.jit
def strided_copy(a, b, stride):
    i = cuda.grid(1)
    if i < b.size:
        b[i] = a[i * stride]                   # stride 8: each lane its own sector


@cuda.jit
def trip_loop(trips, out):
    i = cuda.grid(1)
    if i < out.size:
        acc = i
        for t in range(trips[i]):              # data-dependent trip count
            acc = (5 * acc + t) % MODULUS
        out[i] = acc


@cuda.jit
def parity_loop(x, out, uniform):
    i = cuda.grid(1)
    v = x[i]
    side = (i // 32) % 2 if uniform else cuda.laneid % 2     # uniform: the same side for a whole warp
    for t in range(64):
        if side == 0:
            v = v * 3 + t                      # ptxas predicates both sides: no branch
        else:
            v = (v ^ t) * 5
    out[i] = v


@cuda.jit
def stencil2d(x, out):
    j, i = cuda.grid(2)
    h, w = x.shape
    if i < h and j < w:
        if 0 < i < h - 1 and 0 < j < w - 1:
            out[i, j] = float32(4) * x[i, j] - x[i - 1, j] - x[i + 1, j] - x[i, j - 1] - x[i, j + 1]
        else:
            out[i, j] = x[i, j]


@cuda.jit
def stencil2d_tiled(x, out):
    tile = cuda.shared.array((TILE_Y, TILE_X), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    j = cuda.blockIdx.x * BX + tx
    i = cuda.blockIdx.y * BY + ty
    h, w = x.shape
    if i < h and j < w:
        tile[ty + 1, tx + 1] = x[i, j]
        if tx == 0 and j > 0:
            tile[ty + 1, 0] = x[i, j - 1]
        if tx == BX - 1 and j < w - 1:
            tile[ty + 1, BX + 1] = x[i, j + 1]
        if ty == 0 and i > 0:
            tile[0, tx + 1] = x[i - 1, j]
        if ty == BY - 1 and i < h - 1:
            tile[BY + 1, tx + 1] = x[i + 1, j]
    cuda.syncthreads()
    if i < h and j < w:
        if 0 < i < h - 1 and 0 < j < w - 1:
            out[i, j] = (float32(4) * tile[ty + 1, tx + 1] - tile[ty, tx + 1] - tile[ty + 2, tx + 1]
                         - tile[ty + 1, tx] - tile[ty + 1, tx + 2])
        else:
            out[i, j] = x[i, j]


def stencil_launch(kernel, h: int = 256, w: int = 512):
    x = np.random.default_rng(0).integers(0, 10, (h, w)).astype(np.float32)
    return kernel, ((w + BX - 1) // BX, (h + BY - 1) // BY), (BX, BY), (x, np.zeros_like(x))
