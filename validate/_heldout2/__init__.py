"""The kernels of the second held-out validation suite, by theme; `validate.heldout2` collects
them into `HELDOUT2`, lists the orderings the GPU is expected to show, and documents the suite.

Written from a list of kernel ideas only (course kernels, sparse, stencils, compute loops,
sorting, GEMM, row-wise kernels, atomics, copies), as a user brings their own kernels: nothing
here was chosen by looking at the timing model or its predictions.

Only numba and numpy are imported (and `programs.base`, and the first suite's two size
helpers): `validate measure` runs these on a GPU machine where gpusim is not installed.
"""
from __future__ import annotations

from validate._heldout import blocks, small_ints

__all__ = ["blocks", "small_ints"]
