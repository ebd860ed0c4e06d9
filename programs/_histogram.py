"""Shared input builder and reference for histogram_global / histogram_shared.

256 bins over uint8 values. The values follow a clipped normal distribution around
128 (sigma 24), so a few central bins are hot: many lanes of a warp update the same
bin at once, which is what makes atomics contend. Counts are exact int32; the bins
array starts at zero because the kernel accumulates into it.
"""
import numpy as np

from programs.base import Case

NBINS = 256
BLOCK = 256


def make_values(rng, n):
    return np.clip(np.rint(rng.normal(128.0, 24.0, n)), 0, 255).astype(np.uint8)


def build_histogram(name, kernel, rng, n, grid):
    x = make_values(rng, n)
    bins = np.zeros(NBINS, np.int32)           # accumulator: must start at zero
    want = np.bincount(x, minlength=NBINS).astype(np.int32)
    return Case(name, kernel, (grid,), (BLOCK,), (x, bins), {1: want})
