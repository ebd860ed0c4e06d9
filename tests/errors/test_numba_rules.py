"""Kernel arguments and globals follow Numba's rules (issue 25).

- An explicit signature declares the argument types: an array of another dtype is refused
  (numba-cuda's specialized dispatcher would pass float64 data to a `float32[:]` parameter
  unconverted, and the kernel would write 1.0 as float32 into float64 slots: 5.26e-315
  everywhere; for a list of signatures Numba refuses it with "No matching definition").
- Globals are compile-time constants of a dispatcher (Numba FAQ: "Numba considers global
  variables as compile-time constants"; `recompile()` reads them again). A plain function
  passed to gpusim.launch has no dispatcher: each launch compiles it as a fresh `cuda.jit`.
"""
import numpy as np
import pytest
from numba import cuda as numba_cuda

import gpusim
from gpusim import cuda, errors

SCALE = 2.0


@cuda.jit("void(float32[:])")
def fill_f32(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = 1.0


def test_explicit_signature_refuses_an_array_of_another_dtype():
    x = np.zeros(8, np.float64)
    with pytest.raises(errors.LaunchError, match=r"kernel fill_f32: argument 0 \(x\) is an array of float64 but "
                                                 r"the kernel's signature declares array\(float32, 1d, A\)") as e:
        fill_f32[1, 8](x)
    assert isinstance(e.value, TypeError)                    # what Numba raises for a signature that does not fit
    assert (x == 0).all()                                    # nothing ran


def test_explicit_signature_runs_its_own_dtype():
    x = np.zeros(8, np.float32)
    fill_f32[1, 8](x)
    assert (x == 1).all()


def test_explicit_signature_through_gpusim_launch_refuses_too():
    with pytest.raises(errors.LaunchError, match="is an array of int16 but"):
        gpusim.launch(fill_f32, 1, 8, (np.zeros(8, np.int16),))


def set_scale(a):
    a[cuda.grid(1)] = SCALE


def _twice(launch):
    """(value written with SCALE = 2, value written after SCALE became 3)."""
    global SCALE
    got = []
    try:
        for SCALE in (2.0, 3.0):
            a = np.zeros(4, np.float32)
            launch(a)
            got.append(float(a[0]))
    finally:
        SCALE = 2.0
    return tuple(got)


def test_a_dropin_dispatcher_keeps_the_globals_of_its_first_compile():
    k = cuda.jit(set_scale)
    assert _twice(lambda a: k[1, 4](a)) == (2.0, 2.0)


def test_recompile_reads_the_globals_again():
    global SCALE
    k = cuda.jit(set_scale)
    a = np.zeros(4, np.float32)
    k[1, 4](a)
    SCALE = 3.0
    try:
        k.recompile()
        k[1, 4](a)
    finally:
        SCALE = 2.0
    assert a[0] == 3.0


def test_a_numba_dispatcher_through_gpusim_launch_keeps_its_first_compile():
    k = numba_cuda.jit(set_scale)
    assert _twice(lambda a: gpusim.launch(k, 1, 4, (a,))) == (2.0, 2.0)


def test_a_plain_function_is_compiled_afresh_at_each_launch():
    assert _twice(lambda a: gpusim.launch(set_scale, 1, 4, (a,))) == (2.0, 3.0)
