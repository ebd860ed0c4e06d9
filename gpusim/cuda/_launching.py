"""A configured launch of the drop-in's `Dispatcher` (numba-cuda's `_LaunchConfiguration`):
`kernel[grid, block(, stream(, shared_bytes))]` before it is called, and `forall`'s.

Calling it checks the block against the kernel's `launch_bounds`, applies the
dispatcher's `extensions` (last first) and `cuda.In/Out/InOut` hints (`In` is not copied
back), warns about host arrays as numba-cuda does (each is copied in and out), makes
itself the current launch configuration while the kernel compiles (`gpusim/frontend/current_launch.py`),
runs the `pre_launch_callbacks`, and launches through `gpusim.launch` on the preset
`gpusim.cuda.set_gpu` chose; a kernel that prints has its FIFO printed at completion,
even when it then fails.

Sources: numba-cuda 0.30 `dispatcher.py` (`_LaunchConfiguration`, `ForAll`, `_prepare_args`).
"""
from __future__ import annotations

import pickle
import sys
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from cuda.core._utils.cuda_utils import CUDAError
from numba.cuda import config
from numba.cuda.args import ArgHint, In
from numba.cuda.core.errors import NumbaPerformanceWarning

from gpusim import api
from gpusim.cuda import _state
from gpusim.cuda._arrays import HostMappedArray
from gpusim.errors import LaunchError
from gpusim.frontend import current_launch, printf
from gpusim.frontend.argtypes import typeof_arg
from gpusim.frontend.numba_errors import like

if TYPE_CHECKING:                      # the dispatcher imports this module
    from gpusim.cuda._dispatcher import Dispatcher


class _Launch:
    """A configured launch: `kernel[grid, block]` before it is called."""

    def __init__(self, dispatcher: Dispatcher, grid: Any, block: Any, stream: Any, shared_bytes: int):
        self.dispatcher, self.griddim, self.blockdim = dispatcher, grid, block
        self.stream, self.sharedmem = stream, shared_bytes
        self.pre_launch_callbacks: list = []       # callback(overload, launch config), before each launch
        self._kernel_launch_config_sensitive = None

    @property
    def args(self) -> Any:
        """The arguments of the launch compiling in this thread (numba-cuda's), else None."""
        return current_launch.current_launch_args()

    def __reduce__(self):
        if self.pre_launch_callbacks:
            raise pickle.PicklingError("Cannot pickle configured launches with pre-launch callbacks")
        return (_Launch, (self.dispatcher, self.griddim, self.blockdim, self.stream, self.sharedmem))

    # numba-cuda's _LaunchConfiguration attribute names, and the old ones of this module
    grid = property(lambda self: self.griddim)
    block = property(lambda self: self.blockdim)
    shared_bytes = property(lambda self: self.sharedmem)

    def __call__(self, *args: Any) -> None:
        d = self.dispatcher
        retr: list = []
        limit = d._launch_bound()
        if limit is not None:
            b = self.blockdim if isinstance(self.blockdim, (tuple, list)) else (self.blockdim,)
            if int(np.prod([int(v) for v in b])) > limit:
                raise like(LaunchError(f"[CUDA_ERROR_INVALID_VALUE] kernel {d.py_func.__qualname__}: block of "
                                       f"{self.blockdim} threads exceeds its launch_bounds of {limit} threads"),
                           CUDAError)
        args = _prepare(d, args, self.stream, retr)
        _warn_implicit_copies(args)
        self._keyed = d._launch_config_sensitive      # compile per launch configuration (current_launch.compile_key)
        with current_launch.compiling(self, args):    # compiler passes see this launch (current_launch.py)
            ck = d._compile_for_args(args)
            if self._kernel_launch_config_sensitive:
                d._launch_config_sensitive = True
                d._lcs_argtypes.add(ck.argtypes)
            for callback in self.pre_launch_callbacks:
                callback(d._overload(ck), self)
            if printf.uses_printf(ck.ptx) and not _state.check():
                d.last_result = _launch_printing(d, self, args)
            else:
                d.last_result = api.launch(d, self.griddim, self.blockdim, args, gpu=_state.get_gpu(),
                                           shared_bytes=self.sharedmem, timing=_state.timing(), check=_state.check())
        for wb in retr:
            wb()


def _launch_printing(d: Dispatcher, cfg: _Launch, args: tuple) -> Any:
    """A launch of a kernel that prints: run it, then print its FIFO to stdout (as CUDA
    prints at kernel completion), even when the kernel then fails."""
    prepared = api.prepare(d, cfg.griddim, cfg.blockdim, args, _state.get_gpu(), cfg.sharedmem)
    try:
        return api._run(prepared, _state.timing(), api.BATCH_LANES, None, None)
    finally:
        text = printf.lines(prepared.memory, prepared.layout.symbols)
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()


class _ForAll:
    def __init__(self, dispatcher: Dispatcher, ntasks: int, tpb: int, stream: Any, sharedmem: int):
        self.dispatcher, self.ntasks, self.thread_per_block = dispatcher, ntasks, tpb
        self.stream, self.sharedmem = stream, sharedmem

    def __call__(self, *args: Any) -> None:
        if self.ntasks == 0:
            return
        tpb = self.thread_per_block or 128
        griddim = (self.ntasks + tpb - 1) // tpb
        return self.dispatcher[griddim, tpb, self.stream, self.sharedmem](*args)


def _warn_implicit_copies(args: tuple) -> None:
    """numba-cuda's warning for host arrays passed to a kernel (each is copied in and out)."""
    if config.CUDA_WARN_ON_IMPLICIT_COPY and not config.DISABLE_PERFORMANCE_WARNINGS:
        if any(isinstance(a, np.ndarray) and not isinstance(a, HostMappedArray) for a in args):
            warnings.warn(NumbaPerformanceWarning("Host array used in CUDA kernel will incur copy overhead "
                                                  "to/from device."))


def _prepare(d: Dispatcher, args: tuple, stream: Any, retr: list) -> tuple:
    """Extensions (last first) and In/Out/InOut hints, as Numba's `_prepare_args`."""
    out = []
    for val in args:
        if d.extensions:
            ty = typeof_arg(val)
            for ext in reversed(d.extensions):
                ty, val = ext.prepare_args(ty, val, stream=stream, retr=retr)
        if isinstance(val, ArgHint):
            inner = val.value
            if isinstance(val, In) and isinstance(inner, np.ndarray):
                inner = inner.copy()          # an input only: the kernel's writes are not copied back
            val = inner
        out.append(val)
    return tuple(out)
