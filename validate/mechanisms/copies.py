"""Copies and transposes of square float32 matrices (issue 24: 2-D copies and tiled
transposes at 1024^2-4096^2 predicted 17-33% too fast, the naive transpose at 4096^2
32-41% too slow): the same bytes moved by 1-D and 2-D copies, read-only and write-only
halves of a copy, and transposes by block shape and direction, at 1024^2..8192^2
(4 MiB, inside the L2, to 256 MiB per matrix).

- `copy1d`: b[i] = a[i], one element per thread, 256 threads a block;
- `copy2d_1x1`: b[y, x] = a[y, x], one element per thread, (bx, by) blocks;
- `copy2d_tile`: Harris's layout, a 32x32 tile per (32, 8) block, 4 rows a thread;
  `read2d_tile` / `write2d_tile`: its loads alone (summed, one store per thread) / its
  stores alone;
- `transpose_1x1`: b[x, y] = a[y, x] (read coalesced, write strided) or, `colread`,
  b[y, x] = a[x, y] (read strided, write coalesced), one element per thread, (bx, by)
  blocks;
- `transpose_naive` / `transpose_padded` / `transpose_shared` of `programs/` (Harris's
  32x8-thread tiles) at other sizes than the programs' own.
What each size decides: docs/mechanisms_24.md.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

from programs._transpose import BLOCK_ROWS, TILE
from programs.base import Case, ProgramSpec
from programs.transpose_naive import transpose_naive
from programs.transpose_padded import transpose_padded
from programs.transpose_shared import transpose_shared


@cuda.jit
def copy1d(a, b):
    i = cuda.grid(1)
    if i < a.size:
        b[i] = a[i]


@cuda.jit
def copy2d_1x1(a, b):
    x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if y < a.shape[0] and x < a.shape[1]:
        b[y, x] = a[y, x]


@cuda.jit
def copy2d_tile(a, b):
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for j in range(0, TILE, BLOCK_ROWS):
        if x < a.shape[1] and y + j < a.shape[0]:
            b[y + j, x] = a[y + j, x]


@cuda.jit
def read2d_tile(a, out):
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    acc = float32(0)
    for j in range(0, TILE, BLOCK_ROWS):
        if x < a.shape[1] and y + j < a.shape[0]:
            acc += a[y + j, x]
    out[(cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x) * cuda.blockDim.x * cuda.blockDim.y
        + cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x] = acc


@cuda.jit
def write2d_tile(a, b):
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for j in range(0, TILE, BLOCK_ROWS):
        if x < b.shape[1] and y + j < b.shape[0]:
            b[y + j, x] = float32((y + j) & 1023)


@cuda.jit
def transpose_1x1(a, b):
    x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if y < a.shape[0] and x < a.shape[1]:
        b[x, y] = a[y, x]


@cuda.jit
def transpose_1x1_colread(a, b):
    x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if y < b.shape[0] and x < b.shape[1]:
        b[y, x] = a[x, y]


_TILED = {"copy2d_tile": copy2d_tile, "transpose_naive": transpose_naive, "transpose_padded": transpose_padded,
          "transpose_shared": transpose_shared}


def _matrix(n: int) -> np.ndarray:
    return (np.arange(n * n, dtype=np.int64) % 65521).astype(np.float32).reshape(n, n)


def build(rng, kernel, n, bx=32, by=8):
    a = _matrix(n)
    b = np.full((n, n), np.nan, np.float32)
    if kernel == "copy1d":
        return Case("copy1d", copy1d, ((n * n + 255) // 256,), (256,), (a.ravel(), b.ravel()), {1: a.ravel()})
    if kernel in _TILED:
        want = a if kernel == "copy2d_tile" else np.ascontiguousarray(a.T)
        return Case(kernel, _TILED[kernel], (n // TILE, n // TILE), (TILE, BLOCK_ROWS), (a, b), {1: want})
    if kernel == "read2d_tile":
        t = a.reshape(n // TILE, TILE // BLOCK_ROWS, BLOCK_ROWS, n // TILE, TILE)   # by, j, ty, bx, tx
        out = np.full(n * n // (TILE // BLOCK_ROWS), np.nan, np.float32)
        return Case("read2d_tile", read2d_tile, (n // TILE, n // TILE), (TILE, BLOCK_ROWS), (a, out),
                    {1: _block_order(t)})
    if kernel == "write2d_tile":
        want = np.repeat((np.arange(n) & 1023).astype(np.float32)[:, None], n, axis=1)
        return Case("write2d_tile", write2d_tile, (n // TILE, n // TILE), (TILE, BLOCK_ROWS), (a, b), {1: want})
    if n % bx or n % by:
        raise ValueError(f"{kernel}: n {n} must be a multiple of the block ({bx}, {by})")
    fn = {"copy2d_1x1": copy2d_1x1, "transpose_1x1": transpose_1x1, "transpose_1x1_colread": transpose_1x1_colread}
    want = a if kernel == "copy2d_1x1" else np.ascontiguousarray(a.T)
    return Case(kernel, fn[kernel], (n // bx, n // by), (bx, by), (a, b), {1: want})


def _block_order(t: np.ndarray) -> np.ndarray:
    """read2d_tile's outputs: per block (by, bx) in launch order, per thread (ty, tx), the
    sum over the 4 rows ty + 8j of the block's tile column (small integers: exact)."""
    s = t.sum(axis=1, dtype=np.float64).astype(np.float32)           # (by, ty, bx, tx)
    return np.ascontiguousarray(s.transpose(0, 2, 1, 3)).reshape(-1)


def _sizes(kernel, ns, **kw):
    tag = "".join(f"_{bx}x{by}" for bx, by in [(kw["bx"], kw["by"])]) if "bx" in kw else ""
    return {f"{kernel}_n{n}{tag}": {"kernel": kernel, "n": n, **kw} for n in ns}


SPECS = (
    ProgramSpec("copies", "1-D and 2-D copies, their read and write halves, and transposes by block shape, "
                "direction and size (1024^2..8192^2 float32)",
                build, sizes={
                    "default": {"kernel": "transpose_1x1", "n": 64, "bx": 16, "by": 16},
                    **_sizes("copy1d", (1024, 4096)),
                    **_sizes("copy2d_tile", (1024, 2048, 4096, 8192)),
                    **_sizes("copy2d_1x1", (1024, 4096), bx=16, by=16),
                    **_sizes("copy2d_1x1", (4096,), bx=32, by=32),
                    **_sizes("read2d_tile", (4096,)),
                    **_sizes("write2d_tile", (4096,)),
                    **_sizes("transpose_naive", (1024, 2048, 4096, 8192)),
                    **_sizes("transpose_1x1", (1024, 2048, 4096, 8192), bx=16, by=16),
                    **_sizes("transpose_1x1", (4096,), bx=32, by=32),
                    **_sizes("transpose_1x1", (4096,), bx=32, by=8),
                    **_sizes("transpose_1x1_colread", (4096,), bx=16, by=16),
                    **_sizes("transpose_padded", (1024, 2048, 4096, 8192)),
                    **_sizes("transpose_shared", (4096,))},
                tags=("copy", "transpose", "dram")),
)
