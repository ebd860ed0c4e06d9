"""A kernel with one explicit signature launches its one kernel (numba-cuda's specialized
dispatcher): scalars converted to the declared types, arrays of the declared dtype or an integer
of the same width (another dtype is refused: tests/errors/test_numba_rules.py); raw pointers of
drop-in arrays reach their memory."""
from __future__ import annotations

import numpy as np
import pytest

from gpusim import cuda
from numba import types


def test_single_signature_reinterprets_an_array_of_another_dtype_of_the_same_size():
    @cuda.jit("void(int32[:])")
    def dec(a):
        a[cuda.grid(1)] -= 1
    a = np.zeros(4, np.uint32)
    dec[1, 4](a)
    assert a[0] == 0xFFFFFFFF and dec.specialized


def test_a_list_of_signatures_is_not_specialized():
    @cuda.jit(["void(int32[:])", "void(float32[:])"])
    def inc(a):
        a[cuda.grid(1)] += 1
    assert not inc.specialized


def test_float_for_an_integer_parameter_of_a_specialized_kernel_is_a_typeerror():
    @cuda.jit("void(int32[:], int32)")
    def put(a, v):
        a[0] = v
    with pytest.raises(TypeError):
        put[1, 1](np.zeros(1, np.int32), 12.3)


def test_raw_pointers_of_device_arrays_are_read_and_written():
    ptr = types.CPointer(types.int32)

    @cuda.jit(types.void(ptr, ptr, types.int32))
    def scale(r, x, n):
        i = cuda.grid(1)
        if i < n:
            r[i] = 3 * x[i]
    dx = cuda.to_device(np.arange(10, dtype=np.int32))
    dr = cuda.device_array(10, np.int32)
    scale[1, 32](dr.__cuda_array_interface__["data"][0], dx.device_ctypes_pointer, 10)
    assert dr.copy_to_host()[9] == 27
