"""Kernel arguments of the wrong number or kind: an error naming the argument."""
import numpy as np
import pytest

import gpusim
from gpusim.errors import GpusimError, LaunchError, UnsupportedKernel

from bad_inputs import copy

A = np.arange(64, dtype=np.float32)


def test_too_few_arguments():
    with pytest.raises(LaunchError, match=r"copy takes 2 arguments \(a, b\) but the launch passed 1"):
        gpusim.launch(copy, 1, 64, (A,))


def test_too_many_arguments():
    with pytest.raises(LaunchError, match=r"copy takes 2 arguments \(a, b\) but the launch passed 3"):
        gpusim.launch(copy, 1, 64, (A, A.copy(), A.copy()))


def test_args_given_as_one_array_instead_of_a_tuple():
    with pytest.raises(LaunchError, match=r"args must be a tuple or list .* got ndarray"):
        gpusim.launch(copy, 1, 64, A)


def test_writing_a_read_only_array_names_the_store_line():
    out = np.zeros(64, np.float32)
    out.flags.writeable = False
    with pytest.raises(UnsupportedKernel, match=r"stores into argument 1 \(b\), a read-only array.*bad_inputs.py:9: b\[i\] = a\[i\]"):
        gpusim.launch(copy, 1, 64, (A, out))


def test_reading_a_read_only_array_works():
    src = A.copy()
    src.flags.writeable = False
    out = np.zeros(64, np.float32)
    gpusim.launch(copy, 1, 64, (src, out))
    assert (out == A).all()


def test_non_contiguous_array_is_copied_correctly():
    out = np.zeros(32, np.float32)
    gpusim.launch(copy, 1, 64, (A[::2], out))
    assert (out == A[::2]).all()


def test_zero_size_arrays_run_and_change_nothing():
    r = gpusim.launch(copy, 1, 64, (np.zeros(0, np.float32), np.zeros(0, np.float32)))
    assert r.metrics["launch__grid_size"] == 1


def test_object_array_is_refused():
    with pytest.raises(UnsupportedKernel, match=r"argument 0 \(a\).*object arrays cannot be passed"):
        gpusim.launch(copy, 1, 64, (np.array([None, 1]), np.zeros(2)))


def test_python_list_is_refused_with_the_fix():
    with pytest.raises(UnsupportedKernel, match=r"argument 0 \(a\) of type list.*np.asarray"):
        gpusim.launch(copy, 1, 64, ([1.0, 2.0], np.zeros(2)))


def test_string_argument_is_refused():
    with pytest.raises(UnsupportedKernel, match=r"argument 0 \(a\) of type str"):
        gpusim.launch(copy, 1, 64, ("ab", np.zeros(2)))


def test_dict_argument_is_refused():
    with pytest.raises(GpusimError, match=r"argument 0 \(a\) of type dict"):
        gpusim.launch(copy, 1, 64, ({}, np.zeros(2)))


def test_something_that_is_not_a_kernel():
    with pytest.raises(UnsupportedKernel, match=r"42 is not a kernel"):
        gpusim.launch(42, 1, 64, (A,))
