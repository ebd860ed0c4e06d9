"""The kernels of the held-out validation suite, by theme; `validate.heldout` collects
them into `HELDOUT` and documents the suite. Helpers shared by the themes live here.

Only numba and numpy are imported (and `programs.base`): `validate measure` runs these
on a GPU machine where gpusim is not installed.
"""
from __future__ import annotations

import numpy as np


def blocks(n: int, block: int) -> int:
    """Blocks of `block` threads that cover n elements."""
    return (n + block - 1) // block


def small_ints(rng, shape, lo: int, hi: int, dtype=np.float32) -> np.ndarray:
    """Integers in [lo, hi] as `dtype`: float sums of a few thousand of them stay exact
    (below 2^24), so float outputs can be checked exactly whatever the summation order.
    Drawn as int8 so large inputs build quickly."""
    return rng.integers(lo, hi + 1, shape, dtype=np.int8).astype(dtype)
