"""`cuda.cudadrv.devicearray`, `cuda.devicearray` and `cuda.kernels` of the drop-in
(gpusim/cuda/_namespaces.py): numba-cuda's names, the simulator's arrays and kernels."""
from __future__ import annotations

import numpy as np
import pytest

from gpusim import cuda


def test_auto_device_of_a_scalar_is_a_zero_dimensional_device_array():
    d, created = cuda.devicearray.auto_device(2)
    assert created and d.copy_to_host()[()] == 2


def test_auto_device_refuses_a_non_contiguous_array_as_numba_does():
    with pytest.raises(ValueError, match="non-contiguous"):
        cuda.devicearray.auto_device(np.arange(10.0)[::2])


def test_from_array_like_keeps_the_strides_of_a_fortran_array():
    d = cuda.cudadrv.devicearray.from_array_like(np.zeros((3, 5), order="F"))
    assert d.strides == (8, 24)


def test_numba_transpose_with_drop_in_arrays_runs_in_the_simulator():
    from numba.cuda.kernels.transpose import transpose
    x = np.arange(17 * 33, dtype=np.int32).reshape(17, 33)
    dy = cuda.device_array((33, 17), np.int32)
    transpose(cuda.to_device(x), dy)
    assert dy.copy_to_host()[32, 16] == x[16, 32]


def test_driver_submodules_are_numba_cudas_own_not_second_copies():
    import numba.cuda.cudadrv.driver as real
    from gpusim.cuda.cudadrv import driver
    assert driver is real
