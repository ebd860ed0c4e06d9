"""Expected outputs computed when first read (programs/base.py `Deferred`): a prediction that
never checks its outputs never pays for the reference; a check still uses it."""
import numpy as np
import pytest

from programs.base import Case, Deferred


def test_a_deferred_reference_is_computed_once_and_only_when_read():
    calls = []
    d = Deferred({2: lambda: calls.append(1) or np.ones(3)})
    assert (list(d), calls) == ([2], [])              # its indices without the work
    d[2], d[2]
    assert calls == [1]


def _case(got, atol):
    return Case("c", None, (1,), (1,), (np.zeros(1), got), Deferred({1: lambda: np.array([1.0, 2.0])}),
                rtol=0.0, atol=atol)


def test_a_check_compares_with_the_deferred_reference_within_a_deferred_tolerance():
    _case(np.array([1.0, 2.05]), lambda: 0.1).check()
    with pytest.raises(AssertionError, match="differs from the numpy reference at 1 of 2"):
        _case(np.array([1.0, 2.5]), lambda: 0.1).check()
