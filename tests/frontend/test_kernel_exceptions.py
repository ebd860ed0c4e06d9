"""Exceptions raised in `debug=True` kernels reach the host (gpusim/frontend/kernel_exceptions.py)."""
from __future__ import annotations

import numpy as np
import pytest

from gpusim import cuda


class Overflowed(Exception):
    pass


@cuda.jit(debug=True, opt=False)
def check_limit(a, limit):
    i = cuda.grid(1)
    if a[i] > limit:
        raise Overflowed("value over the limit")


@cuda.jit(debug=True, opt=False)
def divide(r, x, y):
    r[0] = y[0] / x[0]
    r[1] = y[0]


def test_raise_names_the_first_raising_thread_and_the_message():
    a = np.zeros(64, np.int32)
    a[37] = 9
    with pytest.raises(Overflowed, match=r"tid=\[0, 0, 5\] ctaid=\[0, 0, 1\]: value over the limit"):
        check_limit[2, 32](a, 5)


def test_no_raise_no_exception():
    check_limit[2, 32](np.zeros(64, np.int32), 5)


def test_division_by_zero_in_debug_mode_is_zerodivisionerror_and_stops_the_thread():
    r = np.zeros(2)
    with pytest.raises(ZeroDivisionError):
        divide[1, 1](r, np.zeros(1), np.ones(1))
    assert r[1] == 0
