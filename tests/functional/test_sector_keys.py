"""The compiled passes count a warp's distinct 32-byte sectors with `lsu_kernels._add_key`, which
appends a key above every key so far without searching (a warp's addresses mostly increase) and
searches otherwise: both paths give the distinct count, on any order of keys."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from gpusim.functional.fastpath.lsu_kernels import _add_key


@njit(cache=True)
def _count(seq):
    keys = np.empty(len(seq) + 1, np.uint64)
    n = 0
    for k in seq:
        n = _add_key(keys, n, k)
    return n


@pytest.mark.parametrize("seq", [[0, 0, 1, 1, 2, 3, 3], [9, 7, 9, 5, 7, 3, 1, 1], [4, 8, 2, 8, 16, 2, 4, 32, 1],
                                 list(np.random.default_rng(3).integers(0, 12, 32))])
def test_distinct_keys_in_any_order_are_counted_once(seq):
    assert _count(np.array(seq, np.uint64)) == len(set(seq))
