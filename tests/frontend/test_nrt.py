"""Numba's runtime (NRT) in drop-in kernels (gpusim/frontend/nrt.py): arrays allocated in a
kernel live on the device heap, with nrt.cu's reference counts and statistics."""
from __future__ import annotations

import numpy as np
import pytest
from numba.cuda import config

from gpusim import cuda
from gpusim.functional.syscalls import DeviceHeapError


@pytest.fixture(autouse=True)
def _nrt(monkeypatch):
    monkeypatch.setattr(config, "CUDA_ENABLE_NRT", True)
    from numba.cuda.memory_management.nrt import rtsys
    rtsys.memsys_enable_stats()
    yield rtsys
    rtsys.memsys_disable_stats()


def _copy_sum(out, a):
    x = np.empty(a.size, dtype=np.float64)
    for i in range(a.size):
        x[i] = a[i] * 3.0
    y = x.copy()
    out[cuda.grid(1)] = y.sum()


def test_kernel_allocated_arrays_give_the_sequential_sum_bit_exactly():
    a = np.array([0.1, 0.7, 1e-17, -0.3, 2.9])
    out = np.zeros(32)
    cuda.jit(_copy_sum)[1, 32](out, a)
    expect = 0.0
    for v in a:
        expect += v * 3.0
    assert out.tobytes() == np.full(32, expect).tobytes()


def test_every_allocation_is_freed_and_counted_once(_nrt):
    before = _nrt.get_allocation_stats()
    cuda.jit(_copy_sum)[2, 32](np.zeros(64), np.arange(3.0))
    after = _nrt.get_allocation_stats()
    got = [after[k] - before[k] for k in range(4)]       # alloc, free, mi_alloc, mi_free
    assert got == [128, 128, 128, 128]


@cuda.jit
def _many_temporaries(out):
    t = 0.0
    for k in range(100):
        z = np.empty(4096, dtype=np.float64)     # 32 KiB each: 100 x 32 threads = 100 MiB if never reused
        z[k] = k
        t += z[k]
    out[cuda.threadIdx.x] = t


def test_freed_arrays_are_reused_so_a_loop_of_temporaries_fits_the_8_mib_heap():
    out = np.zeros(32)
    _many_temporaries[1, 32](out)
    assert (out == sum(range(100))).all()


@cuda.jit
def _too_big(out):
    z = np.zeros(40000, dtype=np.float64)       # 320 kB per thread: 27 threads fill 8 MiB
    out[cuda.threadIdx.x] = z[cuda.threadIdx.x]


def test_heap_exhaustion_names_kernel_thread_and_the_heap_limit():
    with pytest.raises(DeviceHeapError) as e:
        _too_big[1, 32](np.zeros(32))
    msg = str(e.value)
    assert "_too_big" in msg and "thread (26, 0, 0)" in msg and "cudaLimitMallocHeapSize" in msg


def test_an_nrt_kernel_is_timed_from_the_sass_ptxas_makes_of_the_runtime_as_run():
    import gpusim
    from gpusim.frontend.sass import have_nvdisasm, have_ptxas
    if not (have_ptxas() and have_nvdisasm()):
        pytest.skip("NVIDIA's ptxas/nvdisasm are not installed")
    r = gpusim.launch(cuda.jit(_copy_sum), 1, 32, (np.zeros(32), np.arange(3.0)), timing=True)
    assert r.metrics["gpusim__instruction_level"] == "sass"
    assert any(i.base == "CALL" for i in r.sass.instructions)          # NRT functions, malloc/free
