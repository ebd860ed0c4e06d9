"""2-D neighbour reuse through the L1 (issue 24: a naive 3x3 convolution on 4096^2 with
16x16 blocks, neighbours read from global memory, predicted 67-72% too slow): how often
a stencil's overlapping row reads hit the L1, and what its requests cost.

One thread per interior output of an (n, n) float32 image (borders untouched), 2-D
blocks of (bx, by) threads: a warp covers 32 / bx rows of bx columns, so each of its
loads spans 32 / bx rows and 1-3 sectors of each (the -1 / +1 columns cross into the
neighbouring sectors).
- `stencil_3x3`: out = sum of w[dy, dx] * x[y + dy - 1, x + dx - 1], the 9 weights read
  from a global 3x3 array (9 warp-uniform loads, one sector each) beside the 9 image
  loads; `stencil_3x3_sum`: the same window, no weights;
- `stencil_1x3` (a row), `stencil_3x1` (a column): the reuse along one axis only;
- `copy2d_1x1` (`copies.py`) is the one-point window.
Values are small integers, so the float sums are exact in any order.
What each size decides: docs/mechanisms_24.md.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

from programs.base import Case, ProgramSpec


@cuda.jit
def stencil_3x3(x, w, out):
    n = x.shape[0]
    c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    r = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if 0 < r < n - 1 and 0 < c < n - 1:
        acc = float32(0)
        for dy in range(3):
            for dx in range(3):
                acc += w[dy, dx] * x[r + dy - 1, c + dx - 1]
        out[r, c] = acc


@cuda.jit
def stencil_3x3_sum(x, w, out):
    n = x.shape[0]
    c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    r = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if 0 < r < n - 1 and 0 < c < n - 1:
        acc = float32(0)
        for dy in range(3):
            for dx in range(3):
                acc += x[r + dy - 1, c + dx - 1]
        out[r, c] = acc


@cuda.jit
def stencil_1x3(x, w, out):
    n = x.shape[0]
    c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    r = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if 0 < r < n - 1 and 0 < c < n - 1:
        out[r, c] = x[r, c - 1] + x[r, c] + x[r, c + 1]


@cuda.jit
def stencil_3x1(x, w, out):
    n = x.shape[0]
    c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    r = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if 0 < r < n - 1 and 0 < c < n - 1:
        out[r, c] = x[r - 1, c] + x[r, c] + x[r + 1, c]


_KERNELS = {"3x3": stencil_3x3, "3x3_sum": stencil_3x3_sum, "1x3": stencil_1x3, "3x1": stencil_3x1}


def build(rng, n, window, bx, by):
    if n % bx or n % by:
        raise ValueError(f"stencil: n {n} must be a multiple of the block ({bx}, {by})")
    i = np.arange(n, dtype=np.int64)
    x = ((i[:, None] * 7 + i[None, :] * 3) % 16).astype(np.float32)
    w = (np.arange(9, dtype=np.float32) + 1).reshape(3, 3)
    ww = np.ones((3, 3), np.float32) if window == "3x3_sum" else w
    want = np.zeros((n, n), np.float32)
    inner = want[1:-1, 1:-1]
    if window in ("3x3", "3x3_sum"):
        for dy in range(3):
            for dx in range(3):
                inner += ww[dy, dx] * x[dy:n - 2 + dy, dx:n - 2 + dx]
    elif window == "1x3":
        inner += x[1:-1, :-2] + x[1:-1, 1:-1] + x[1:-1, 2:]
    else:
        inner += x[:-2, 1:-1] + x[1:-1, 1:-1] + x[2:, 1:-1]
    return Case("stencil", _KERNELS[window], (n // bx, n // by), (bx, by), (x, w, np.zeros((n, n), np.float32)),
                {2: want})


SPECS = (
    ProgramSpec("stencil", "naive 2-D stencils from global memory: 3x3 with global weights, 3x3 sum, 1x3, 3x1",
                build, sizes={
                    "default": {"n": 96, "window": "3x3", "bx": 16, "by": 16},
                    **{f"3x3_n{n}_16x16": {"n": n, "window": "3x3", "bx": 16, "by": 16} for n in (1024, 2048, 4096, 8192)},
                    **{f"3x3_n4096_{bx}x{by}": {"n": 4096, "window": "3x3", "bx": bx, "by": by}
                       for bx, by in ((32, 8), (8, 32), (32, 32))},
                    "3x3_sum_n4096_16x16": {"n": 4096, "window": "3x3_sum", "bx": 16, "by": 16},
                    "1x3_n4096_16x16": {"n": 4096, "window": "1x3", "bx": 16, "by": 16},
                    "3x1_n4096_16x16": {"n": 4096, "window": "3x1", "bx": 16, "by": 16}},
                tags=("l1", "stencil", "reuse")),
)
