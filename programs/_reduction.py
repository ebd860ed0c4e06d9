"""Shared input builder and numpy reference for the reduction ladder
(reduce_interleaved_divergent ... reduce_warp_shuffle).

Every rung writes one float32 partial sum per block into out[blockIdx.x], with
256 threads per block. The inputs are small integers stored as float32, so every
partial sum is an integer below 2^24 in magnitude and exactly representable: the
result is exact whatever the summation order, and the check uses rtol = atol = 0.
"""
import numpy as np

from programs.base import Case

BLOCK = 256


def build_reduction(name, kernel, rng, n, elems_per_thread=1):
    """Case for a per-block sum where each block covers BLOCK * elems_per_thread
    consecutive elements (2 for the rungs that add two elements while loading)."""
    x = rng.integers(-8, 9, n).astype(np.float32)      # |partial| <= 8 * 512 < 2^24
    per_block = BLOCK * elems_per_thread
    grid = (n + per_block - 1) // per_block
    padded = np.zeros(grid * per_block, np.float64)
    padded[:n] = x
    want = padded.reshape(grid, per_block).sum(axis=1).astype(np.float32)
    out = np.full(grid, np.nan, np.float32)
    return Case(name, kernel, (grid,), (BLOCK,), (x, out, n), {1: want})


REDUCTION_SIZES = {"tiny": {"n": 16_384}, "small": {"n": 65_536}, "default": {"n": 1 << 18},
                   "large": {"n": 1 << 24}}
