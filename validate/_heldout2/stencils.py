"""Stencils straight from global memory: a naive 2-D convolution (zero padding, 16x16 blocks,
the filter read from a global array) with a 3x3 and a 5x5 filter, a naive 27-point 3-D
stencil on a 3-D grid of 8x8x8 blocks (weights from a global 3x3x3 array), and a 7-point
3-D stencil in which each thread of a 2-D grid of 32x8 blocks marches along z keeping the
planes below, at and above in registers. The 3-D stencils copy the boundary.

Images and weights are small integers stored as float32 (filters: Sobel-like outer
products of integer taps), so every output is exact in any order; the numpy references
apply the filters separably.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

from programs.base import Case
from validate._heldout2 import blocks, small_ints

CONV_BLOCK = (16, 16)
CUBE_BLOCK = (8, 8, 8)
MARCH_BLOCK = (32, 8)
TAPS = {3: (np.array([1, 2, 1]), np.array([1, 0, -1])),
        5: (np.array([1, 4, 6, 4, 1]), np.array([1, 2, 0, -2, -1]))}


@cuda.jit(device=True)
def _conv_at(img, mask, r, y, x):
    acc = float32(0)
    for dy in range(-r, r + 1):
        yy = y + dy
        if 0 <= yy < img.shape[0]:
            for dx in range(-r, r + 1):
                xx = x + dx
                if 0 <= xx < img.shape[1]:
                    acc += img[yy, xx] * mask[dy + r, dx + r]
    return acc


@cuda.jit
def conv2d_3x3_global(img, mask, out):
    x, y = cuda.grid(2)
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = _conv_at(img, mask, 1, y, x)


@cuda.jit
def conv2d_5x5_global(img, mask, out):
    x, y = cuda.grid(2)
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = _conv_at(img, mask, 2, y, x)


@cuda.jit
def stencil3d_27pt(u, w, out):
    x, y, z = cuda.grid(3)
    nz, ny, nx = u.shape
    if z < nz and y < ny and x < nx:
        if 0 < z < nz - 1 and 0 < y < ny - 1 and 0 < x < nx - 1:
            acc = float32(0)
            for dz in range(-1, 2):
                for dy in range(-1, 2):
                    for dx in range(-1, 2):
                        acc += w[dz + 1, dy + 1, dx + 1] * u[z + dz, y + dy, x + dx]
            out[z, y, x] = acc
        else:
            out[z, y, x] = u[z, y, x]


@cuda.jit
def stencil3d_7pt_zmarch(u, out, c0, c1):
    x, y = cuda.grid(2)
    nz, ny, nx = u.shape
    if y < ny and x < nx:
        inside = 0 < y < ny - 1 and 0 < x < nx - 1
        below = u[0, y, x]
        cur = u[1, y, x]
        out[0, y, x] = below
        for z in range(1, nz - 1):
            above = u[z + 1, y, x]
            if inside:
                out[z, y, x] = c0 * cur + c1 * (below + above + u[z, y, x - 1] + u[z, y, x + 1]
                                                + u[z, y - 1, x] + u[z, y + 1, x])
            else:
                out[z, y, x] = cur
            below = cur
            cur = above
        out[nz - 1, y, x] = cur


# ---- references and builders --------------------------------------------------------

def _taps_along(a: np.ndarray, taps: np.ndarray, axis: int) -> np.ndarray:
    """sum_k taps[k] * a shifted by k - r along `axis`, zero outside (a correlation)."""
    r = len(taps) // 2
    n = a.shape[axis]
    out = np.zeros_like(a)
    for k, t in enumerate(taps):
        if t == 0:
            continue
        d = k - r
        dst = [slice(None)] * a.ndim
        src = [slice(None)] * a.ndim
        dst[axis] = slice(max(0, -d), min(n, n - d))
        src[axis] = slice(max(0, d), min(n, n + d))
        out[tuple(dst)] += np.float32(t) * a[tuple(src)]
    return out


def build_conv2d(rng, h, w, k):
    if k not in TAPS:
        raise ValueError(f"conv2d: filter size must be 3 or 5, got {k}")
    img = small_ints(rng, (h, w), -8, 8)
    u, v = TAPS[k]
    mask = np.outer(u, v).astype(np.float32)
    want = _taps_along(_taps_along(img, v, 1), u, 0)
    kernel = conv2d_3x3_global if k == 3 else conv2d_5x5_global
    grid = (blocks(w, CONV_BLOCK[0]), blocks(h, CONV_BLOCK[1]))
    return Case(kernel.py_func.__name__, kernel, grid, CONV_BLOCK,
                (img, mask, np.full((h, w), np.nan, np.float32)), {2: want})


def _taps_valid(a: np.ndarray, taps, axis: int) -> np.ndarray:
    """sum_k taps[k] * a[k : k + n - len(taps) + 1] along `axis` (only where all taps fall inside)."""
    n, w = a.shape[axis], len(taps)
    part = lambda k: a[(slice(None),) * axis + (slice(k, n - w + 1 + k),)]
    out = np.float32(taps[0]) * part(0)
    for k in range(1, w):
        out += np.float32(taps[k]) * part(k) if taps[k] != 1 else part(k)
    return out


def build_stencil27(rng, d, h, w):
    u = small_ints(rng, (d, h, w), -8, 8)
    t = (1, 2, 1)
    wts = np.einsum("i,j,k->ijk", t, t, t).astype(np.float32)
    want = u.copy()
    want[1:-1, 1:-1, 1:-1] = _taps_valid(_taps_valid(_taps_valid(u, t, 2), t, 1), t, 0)
    grid = tuple(blocks(n, b) for n, b in zip((w, h, d), CUBE_BLOCK))
    return Case("stencil3d_27pt", stencil3d_27pt, grid, CUBE_BLOCK,
                (u, wts, np.full((d, h, w), np.nan, np.float32)), {2: want})


def build_stencil7_zmarch(rng, d, h, w, c0=2.0, c1=1.0):
    if d < 2:
        raise ValueError(f"stencil3d_7pt_zmarch: needs at least 2 planes, got d={d}")
    u = small_ints(rng, (d, h, w), -8, 8)
    c0, c1 = np.float32(c0), np.float32(c1)
    acc = u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1]
    for nb in (u[1:-1, 1:-1, :-2], u[1:-1, 1:-1, 2:], u[1:-1, :-2, 1:-1], u[1:-1, 2:, 1:-1]):
        acc += nb
    acc *= c1
    acc += c0 * u[1:-1, 1:-1, 1:-1]
    want = u.copy()
    want[1:-1, 1:-1, 1:-1] = acc
    grid = (blocks(w, MARCH_BLOCK[0]), blocks(h, MARCH_BLOCK[1]))
    return Case("stencil3d_7pt_zmarch", stencil3d_7pt_zmarch, grid, MARCH_BLOCK,
                (u, np.full((d, h, w), np.nan, np.float32), c0, c1), {1: want})
