"""Drop-in for `cupy`: a CuPy program with CUDA C++ kernels runs in the simulator with one
changed line.

    import gpusim.cupy as cp         # was: import cupy as cp

    add = cp.RawKernel(r'''
    extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) c[i] = a[i] + b[i];
    }''', "add")
    a = cp.arange(1000, dtype=cp.float32); b = cp.ones_like(a); c = cp.empty_like(a)
    add((4,), (256,), (a, b, c, cp.int32(1000)))     # runs gpusim.launch(add, ...) on the preset
    assert (cp.asnumpy(c) == cp.asnumpy(a) + 1).all()
    add.last_result.metrics                           # the launch's Result (also cp.last_launch())

What is simulated: `RawKernel` and `RawModule` kernels (`_kernel.py`: compiled with NVRTC
as CuPy compiles them, `-ftz=true` included), executed bit-exact, with the timing model when
`set_timing(True)`. What runs in numpy on the host, unsimulated and untimed: everything else
CuPy does with its own kernels, i.e. array creation, copies, arithmetic, reductions and
indexing (`_array.py`: `ndarray` is a numpy array; `random.py`: numpy's generators).
Refused with one line naming it (`_unsupported.py`): `ElementwiseKernel`,
`ReductionKernel`, `fuse`, and what CuPy runs in NVIDIA's libraries (matrix products and
`@`, `linalg` but `norm`, `fft`, `cuda.cublas`, ...). Any other numpy name resolves to a
function returning gpusim.cupy arrays (CuPy mirrors numpy's API).

Configuration, as `gpusim.cuda` offers it:
- `set_gpu(preset or GPUSpec)` / `get_gpu()`: the GPU later launches run on (default 'h100',
  or the environment variable GPUSIM_CUPY_GPU, for an unchanged program);
- `set_timing(True)`: later launches also run the timing model, which events read
  (`cuda.get_elapsed_time`); until `set_timing` is called, timing turns on by itself when
  the program records its first `cuda.Event`;
- `set_check("racecheck", ...)`: later launches run under sanitizer tools; findings are in
  the Result's `hazards`;
- the Result of a launch: `kernel.last_result`, and `last_launch()` for the last launch of
  any kernel (metrics, `lines`, `lines_frame()`, ...: `gpusim.result.Result`); `report()`
  is the last launch's source view as text (its .cu lines with their counters, the verdict).
A RawKernel is also a kernel `gpusim.launch` takes: `gpusim.launch(kernel, grid, block,
args, gpu=..., timing=True, check=...)`.

Sources: CuPy 14's API (`cupy/__init__.py`, `cupy/_core/raw.pyx`, `cupy/cuda/`).
"""
from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from gpusim.cupy import _state, cuda, random
from gpusim.cupy._array import (arange, array, asanyarray, asarray, ascontiguousarray, asfortranarray, asnumpy,
                                empty, empty_like, full, full_like, get_array_module, ndarray, ones, ones_like,
                                wrap, zeros, zeros_like)
from gpusim.cupy._kernel import RawKernel, RawModule
from gpusim.cupy._unsupported import MATRIX_PRODUCTS, WHY, Linalg, Unsupported
from gpusim.errors import GpusimError
from gpusim.report.sourceview import render_source_view
from gpusim.sanitizer import normalize as _normalize_tools

# numpy's scalar types and constants are CuPy's too (cupy.float32 is numpy.float32)
from numpy import (  # noqa: F401  (re-exported)
    bool_, byte, complex64, complex128, double, dtype, e, euler_gamma, finfo, float16, float32, float64, iinfo, inf,
    int8, int16, int32, int64, intc, intp, nan, newaxis, pi, short, single, ubyte, uint8, uint16, uint32, uint64,
    uintc, uintp, ushort,
)

linalg = Linalg()
fft = Unsupported("cupy.fft")
cublas = Unsupported("cupy.cublas")
sparse = Unsupported("cupy.sparse")
ElementwiseKernel = Unsupported("cupy.ElementwiseKernel")
ReductionKernel = Unsupported("cupy.ReductionKernel")
fuse = Unsupported("cupy.fuse")
testing = np.testing                      # assert_allclose & co. take gpusim.cupy arrays (numpy arrays)

__all__ = ["ndarray", "array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "asnumpy", "empty",
           "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "arange",
           "get_array_module", "RawKernel", "RawModule", "cuda", "random", "linalg", "testing", "set_gpu", "get_gpu",
           "set_timing", "set_check", "last_launch", "report", "is_available"]


# ----------------------------------------------------------------------------- configuration
def set_gpu(gpu) -> None:
    """Choose the preset (a name, a .toml spec file, or a GPUSpec) later launches run on."""
    _state.check_gpu(gpu)
    _state.STATE.gpu = gpu


def get_gpu():
    return _state.STATE.gpu


def set_timing(on: bool | None = True) -> None:
    """Make later launches also run the timing model (`metrics['gpu__time_duration.sum']`,
    and the clock `cuda.Event`s read), or not; None: automatic (on once an event is recorded)."""
    _state.STATE.timing = None if on is None else bool(on)


def set_check(*tools: str) -> None:
    """Run later launches under sanitizer tools (`gpusim.sanitizer`; none: off); each launch's
    findings are in its Result's `hazards`."""
    _state.STATE.check = _normalize_tools(tools)


def last_launch():
    """The Result of the last launch of any kernel (None before the first)."""
    return _state.STATE.last_result


def report(result=None, width: int | None = None) -> str:
    """The source view of a launch's Result (default: the last launch): every .cu line with its
    counters, and the verdict, as `gpusim run` prints it."""
    result = result if result is not None else _state.STATE.last_result
    if result is None:
        raise GpusimError("gpusim.cupy.report: no kernel has been launched yet")
    return render_source_view(result, width=width)


def is_available() -> bool:
    return True


def get_default_memory_pool() -> cuda.MemoryPool:
    return _POOL


def get_default_pinned_memory_pool() -> cuda.MemoryPool:
    return _POOL


_POOL = cuda.MemoryPool()


# ----------------------------------------------------------------------------- numpy's API, CuPy's results
@functools.lru_cache(maxsize=None)
def _forward(name: str, fn):
    @functools.wraps(fn)
    def forwarded(*args, **kwargs):
        return wrap(fn(*args, **kwargs))
    forwarded.__doc__ = f"numpy.{name} on the host, its arrays returned as gpusim.cupy arrays."
    return forwarded


_MISSING = object()


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in MATRIX_PRODUCTS:
        return Unsupported(f"cupy.{name}")
    if f"cupy.{name}" in WHY:
        return Unsupported(f"cupy.{name}")
    obj = getattr(np, name, _MISSING)
    if obj is _MISSING:
        raise AttributeError(f"module 'gpusim.cupy' has no attribute {name!r} (nor has numpy, whose array API "
                             "gpusim.cupy forwards)")
    if isinstance(obj, (np.ufunc, type, types.ModuleType)) or not callable(obj):
        return obj
    return _forward(name, obj)
