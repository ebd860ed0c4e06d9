"""Shared input builder and reference for transpose_naive / _shared / _padded.

All three use the layout of NVIDIA's "An Efficient Matrix Transpose in CUDA C++"
(Harris, 2013): a 32x32 tile per block, handled by 32x8 threads, each thread moving
4 elements (rows ty, ty+8, ty+16, ty+24 of the tile). 256 threads per block keeps
occupancy comparable across the three kernels and the copy loop visible.

a has shape (rows, cols), b = a.T has shape (cols, rows). A transpose is a copy, so
the check is exact. Sizes: 'default'/'medium'/'large' are multiples of 32;
'ragged' (not a multiple of 32 in either dimension) exercises the bounds checks.
"""
import numpy as np

from programs.base import Case

TILE = 32
BLOCK_ROWS = 8


def build_transpose(name, kernel, rng, rows, cols):
    a = rng.uniform(-100.0, 100.0, (rows, cols)).astype(np.float32)
    b = np.full((cols, rows), np.nan, np.float32)
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    return Case(name, kernel, grid, (TILE, BLOCK_ROWS), (a, b),
                {1: np.ascontiguousarray(a.T)})


TRANSPOSE_SIZES = {
    "small": {"rows": 192, "cols": 256},
    "default": {"rows": 384, "cols": 512},
    "large": {"rows": 4096, "cols": 4096},
    "ragged": {"rows": 100, "cols": 70},
}
