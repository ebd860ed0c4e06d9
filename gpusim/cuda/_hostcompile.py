"""numba-cuda's host-side compilation entry points, for the simulated device.

`cuda.compile`, `cuda.compile_ptx`, `cuda.compile_for_current_device` and
`cuda.compile_ptx_for_current_device` compile a Python function with Numba (no GPU
needed) and return its PTX (or LTO-IR/cubin where Numba can make them without a
driver). Numba asks the CUDA driver for the current device's compute capability where
none is given; here `simulated_device()` answers with the chosen preset's, while the
call runs (`numba.cuda.cudadrv.devices.get_context`, `numba.cuda.api`'s and the
dispatcher's `get_current_device`). A function written against `gpusim.cuda` is
retargeted to `numba.cuda` first (`retarget.py`).

Sources: numba-cuda 0.30 `compiler.py` (`compile`, `compile_ptx`,
`compile_for_current_device`), `codegen.py` (`_ensure_cc`).
"""
from __future__ import annotations

import contextlib
import threading
import types
from typing import Any

import numba.cuda
import numba.cuda.api as api
import numba.cuda.compiler as compiler
import numba.cuda.cudadrv.devices as devices
import numba.cuda.dispatcher as dispatcher
from numba.cuda.cudadrv import driver as drv
from numba.cuda.cudadrv.error import CudaSupportError

from gpusim.cuda import _state
from gpusim.errors import UnsupportedKernel
from gpusim.frontend.numba_errors import like
from gpusim.frontend.retarget import is_dropin_dispatcher, retarget

_LOCK = threading.RLock()


class _Device:
    def __init__(self, cc: tuple[int, int]) -> None:
        self.compute_capability = cc
        self.name = f"gpusim sm_{cc[0]}{cc[1]}"
        self.id = 0

    # numba-cuda's Device properties (cudadrv/driver.py), by compute capability
    supports_float16 = property(lambda self: tuple(self.compute_capability) >= (5, 3))
    supports_bfloat16 = property(lambda self: tuple(self.compute_capability) >= (8, 0))
    supports_fp8 = property(lambda self: tuple(self.compute_capability) >= (8, 9))


class _Context:
    def __init__(self, cc: tuple[int, int]) -> None:
        self.device = _Device(cc)


@contextlib.contextmanager
def simulated_device(cc: tuple[int, int] | None = None):
    """Numba's device queries answer `cc` (default: the chosen preset's) while this runs."""
    cc = tuple(cc or _state.cc())
    ctx = _Context(cc)
    targets = [(devices, "get_context", lambda devnum=None: ctx), (api, "get_current_device", lambda: ctx.device),
               (compiler, "get_current_device", lambda: ctx.device),
               (dispatcher, "get_current_device", lambda: ctx.device)]
    with _LOCK:
        saved = [(mod, name, getattr(mod, name)) for mod, name, _ in targets]
        for mod, name, fn in targets:
            setattr(mod, name, fn)
        try:
            yield ctx.device
        finally:
            for mod, name, fn in saved:
                setattr(mod, name, fn)


def _numba_func(pyfunc: Any) -> Any:
    if is_dropin_dispatcher(pyfunc):
        pyfunc = pyfunc.py_func
    return retarget(pyfunc) if isinstance(pyfunc, types.FunctionType) else pyfunc


def _wrap(name: str):
    def call(pyfunc: Any, *args: Any, **kwargs: Any) -> Any:
        with simulated_device():
            return getattr(numba.cuda, name)(_numba_func(pyfunc), *args, **kwargs)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"`numba.cuda.{name}` for the simulated device (see gpusim/cuda/_hostcompile.py)."
    return call


compile = _wrap("compile")  # noqa: A001  (numba's name)
compile_ptx = _wrap("compile_ptx")
compile_for_current_device = _wrap("compile_for_current_device")
compile_ptx_for_current_device = _wrap("compile_ptx_for_current_device")


class _LiveContext:
    """A context whose device follows `gpusim.cuda.set_gpu` (asked at each query). It has no
    driver behind it: anything else Numba asks of it (a real `numba.cuda` kernel launch loads
    a module image, `numba.cuda.to_device` allocates) is a `NoDriver` error saying how to run
    the kernel in the simulator."""

    @property
    def device(self) -> _Device:
        return _Device(_state.cc())

    def __getattr__(self, name: str):
        raise no_driver(name)


def no_driver(what: str) -> BaseException:
    """The error for a `numba.cuda` call that needs the GPU this machine lacks: a gpusim
    UnsupportedKernel that is also Numba's CudaSupportError (what numba.cuda raises without a
    driver)."""
    return like(UnsupportedKernel(
        f"numba.cuda needs a CUDA driver for this (it asked the device context for {what!r}) and this machine "
        "has none: gpusim answers Numba's device queries but runs kernels only when they are launched through "
        "it: write `from gpusim import cuda` instead of `from numba import cuda`, or call "
        "gpusim.launch(kernel, grid, block, args)"), CudaSupportError)


_INSTALLED: list = []


def install_when_no_driver() -> bool:
    """On a machine without a CUDA driver, make Numba's own device queries (used by
    `numba.cuda.compiler.compile_ptx_for_current_device`, `compile_ptx` without `cc`,
    ...) answer the simulated device for the rest of the process, as if the program ran on
    the chosen preset. With a driver present nothing changes. True if installed."""
    if _INSTALLED:
        return True
    try:
        drv.driver.get_device_count()
        return False                                  # a real driver answers: leave Numba alone
    except Exception:                                 # CudaSupportError, missing library, ...
        pass
    ctx = _LiveContext()
    for mod, name, fn in ((devices, "get_context", lambda devnum=None: ctx),
                          (api, "current_context", lambda devnum=None: ctx),      # is_fp8_supported, ...
                          (api, "get_current_device", lambda: ctx.device),
                          (compiler, "get_current_device", lambda: ctx.device),
                          (dispatcher, "get_current_device", lambda: ctx.device)):
        _INSTALLED.append((mod, name, getattr(mod, name)))
        setattr(mod, name, fn)
    return True
