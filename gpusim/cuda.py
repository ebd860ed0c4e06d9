"""Drop-in for `numba.cuda`: an existing Numba CUDA program runs in the simulator
with one changed line.

    from gpusim import cuda          # was: from numba import cuda

    @cuda.jit
    def scale(a, s):
        i = cuda.grid(1)
        if i < a.size:
            a[i] *= s

    d = cuda.to_device(x)
    scale[4, 256](d, 2.0)            # runs gpusim.launch(scale, 4, 256, (d, 2.0), gpu=...)
    y = d.copy_to_host()
    scale.last_result.metrics        # the launch's Result

What it models: `jit` (with or without signatures and options; `device=True` device
functions) returning a `Dispatcher` whose `kernel[grid, block]`,
`kernel[grid, block, stream]` and `kernel[grid, block, stream, shared_bytes]`
launches call `gpusim.launch` on the GPU preset chosen with `set_gpu` (default
'h100'); the device-side API (`grid`, `threadIdx`, `shared.array`, `atomic`,
`shfl_*_sync`, `libdevice`, `fp16`, types, ...) re-exported unchanged, since Numba's
typing is keyed on those very objects; device arrays (`to_device`, `device_array`,
...) as `DeviceArray`s holding a host copy that a launch reads and updates in place;
pinned, mapped and managed arrays as plain numpy arrays (a launch copies them back
too); `synchronize`, streams and `pinned`/`mapped` contexts as no-ops; a device
object describing the preset.

Does not model: asynchrony (a launch completes before it returns), events and
their timings, IPC, multiple devices, `vectorize`/`reduce`, `link=` (refused at
launch). Other `numba.cuda` names resolve to `numba.cuda` itself; host/driver APIs
that need a GPU raise AttributeError naming the gap.

Sources: numba-cuda 0.30 `decorators.py` (`jit`), `dispatcher.py` (`__getitem__`
launch configuration, `_prepare_args`), `api.py` (`to_device`, `device_array`, ...).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import types as _pytypes
from typing import Any

import numba.cuda as _nc
import numpy as np
from numba.core import types as _nbt
from numba.cuda import (  # noqa: F401  (re-exported device-side API)
    activemask, all_sync, any_sync, atomic, ballot_sync, blockDim, blockIdx, brev, cbrt, cg, clz, const, eq_sync,
    ffs, fma, grid, gridDim, gridsize, laneid, lanemask_lt, libdevice, local, match_all_sync, match_any_sync,
    nanosleep, popc, selp, shared, shfl_down_sync, shfl_sync, shfl_up_sync, shfl_xor_sync, syncthreads,
    syncthreads_and, syncthreads_count, syncthreads_or, syncwarp, threadfence, threadfence_block,
    threadfence_system, threadIdx, warpsize,
    boolean, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    complex64, complex128, void, literal_unroll, declare_device,
)
from numba.cuda import bf16, fp16  # noqa: F401  (submodules)

from gpusim import specs as _specs

# Numba types a reference to this module (reached some way `retarget` does not rewrite) as numba.cuda.
_numba_type_ = _nbt.Module(_nc)

_GPU: str = "h100"

_HOST_ONLY = frozenset({
    "event", "event_elapsed_time", "open_ipc_array", "IpcHandle", "current_context", "require_context",
    "set_memory_manager", "defer_cleanup", "profile_start", "profile_stop", "profiling",
    "as_cuda_array", "from_cuda_array_interface", "is_cuda_array", "compile_for_current_device",
    "compile_ptx_for_current_device", "vectorize", "guvectorize", "reduce", "Reduce", "driver", "devices",
})


def __getattr__(name: str) -> Any:
    if name == "gpus":
        return list_devices()
    if name in _HOST_ONLY:
        raise AttributeError(f"gpusim.cuda.{name} is a host/driver API the simulator does not provide")
    try:
        return getattr(_nc, name)
    except AttributeError:
        pass
    try:
        return importlib.import_module(f"numba.cuda.{name}")
    except ImportError:
        raise AttributeError(f"module 'gpusim.cuda' has no attribute {name!r} (nor has numba.cuda)") from None


# ----------------------------------------------------------------------------- GPU choice
def set_gpu(gpu: str | _specs.GPUSpec) -> None:
    """Choose the preset (or a GPUSpec) that later launches run on."""
    global _GPU
    _specs.get(gpu)                       # ConfigError for an unknown name
    _GPU = gpu


def get_gpu() -> str | _specs.GPUSpec:
    return _GPU


_TIMING: bool = False


def set_timing(on: bool = True) -> None:
    """Make later launches also run the timing model (`Result.metrics['gpu__time_duration.sum']`)."""
    global _TIMING
    _TIMING = bool(on)


_CHECK: tuple = ()


def set_check(*tools: str) -> None:
    """Run later launches under sanitizer tools (`gpusim.sanitizer`; none: off); each
    launch's findings are in `kernel.last_result.hazards`."""
    from gpusim.sanitizer import normalize
    global _CHECK
    _CHECK = normalize(tools)


# ----------------------------------------------------------------------------- kernels
class Dispatcher:
    """What `cuda.jit` returns: a kernel to launch with `[grid, block, stream, shared]`,
    or (`device=True`) a device function to call from kernels."""
    _gpusim_dispatcher_ = True

    def __init__(self, py_func: _pytypes.FunctionType, signatures: list | None = None, device: bool = False,
                 options: dict | None = None):
        functools.update_wrapper(self, py_func)
        self.py_func = py_func
        self.signatures = list(signatures) if signatures else None
        self.device = bool(device)
        self.targetoptions = {**(options or {}), "device": self.device}
        self.last_result = None
        self._numba_device = None

    def __repr__(self) -> str:
        kind = "device function" if self.device else "kernel"
        return f"<gpusim.cuda {kind} {self.py_func.__qualname__}>"

    def __getitem__(self, config: Any) -> _Launch:
        if self.device:
            raise TypeError(f"{self.py_func.__qualname__} is a device function; call it from a kernel")
        if not isinstance(config, tuple) or len(config) not in (2, 3, 4):
            raise ValueError("must specify at least the griddim and blockdim: kernel[grid, block] "
                             "or kernel[grid, block, stream, shared_bytes]")
        return self.configure(*config)

    def configure(self, griddim: Any, blockdim: Any, stream: Any = 0, sharedmem: int = 0) -> _Launch:
        return _Launch(self, griddim, blockdim, int(sharedmem or 0))

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        name = self.py_func.__qualname__
        if self.device:
            raise TypeError(f"device function {name} can only be called from a kernel")
        raise TypeError(f"kernel {name} needs a launch configuration: {name}[blocks, threads](...)")

    @property
    def _numba_type_(self) -> Any:
        """Fallback typing for a device function reached through another module's attribute."""
        if not self.device:
            return None
        if self._numba_device is None:
            from gpusim.frontend.retarget import numba_device_dispatcher
            self._numba_device = numba_device_dispatcher(self)
        return _nbt.Dispatcher(self._numba_device)


class _Launch:
    """A configured launch: `kernel[grid, block]` before it is called."""

    def __init__(self, dispatcher: Dispatcher, grid: Any, block: Any, shared_bytes: int):
        self.dispatcher, self.grid, self.block, self.shared_bytes = dispatcher, grid, block, shared_bytes

    def __call__(self, *args: Any) -> None:
        from gpusim.api import launch
        self.dispatcher.last_result = launch(self.dispatcher, self.grid, self.block, args, gpu=_GPU,
                                             shared_bytes=self.shared_bytes, timing=_TIMING, check=_CHECK)


def jit(func_or_sig: Any = None, device: bool = False, **options: Any) -> Any:
    """`numba.cuda.jit`: `@jit`, `@jit(device=True)`, `@jit("void(float32[:])")`, `@jit([sig, ...], fastmath=True)`."""
    from numba.cuda.core import sigutils
    if isinstance(func_or_sig, _pytypes.FunctionType):
        return Dispatcher(func_or_sig, None, device, options)
    if hasattr(func_or_sig, "py_func"):                # re-jitting a dispatcher
        return Dispatcher(func_or_sig.py_func, None, device, options)
    if func_or_sig is None:
        sigs = None
    elif sigutils.is_signature(func_or_sig):
        sigs = [func_or_sig]
    elif isinstance(func_or_sig, list):
        sigs = func_or_sig
    else:
        raise TypeError(f"cuda.jit expects a function, a signature or a list of signatures, got {func_or_sig!r}")
    if sigs and not device:
        for sig in sigs:
            _, restype = sigutils.normalize_signature(sig)
            if restype is not None and restype != _nbt.void:
                raise TypeError("CUDA kernel must have void return type.")
    return lambda fn: Dispatcher(getattr(fn, "py_func", fn), sigs, device, options)


# ----------------------------------------------------------------------------- arrays
class DeviceArray:
    """A device array of the simulator: its data lives in a host numpy array that a
    launch reads and updates in place (`_gpusim_host_`)."""

    def __init__(self, host: np.ndarray):
        self._gpusim_host_ = host
        self._gpusim_written_: np.ndarray | None = None    # per byte, written yet (initcheck); None: all

    @property
    def _numba_type_(self) -> Any:
        from numba.cuda.typing.typeof import Purpose, typeof
        return typeof(self._gpusim_host_, Purpose.argument)

    shape = property(lambda self: self._gpusim_host_.shape)
    dtype = property(lambda self: self._gpusim_host_.dtype)
    size = property(lambda self: self._gpusim_host_.size)
    ndim = property(lambda self: self._gpusim_host_.ndim)
    strides = property(lambda self: self._gpusim_host_.strides)
    nbytes = property(lambda self: self._gpusim_host_.nbytes)
    alloc_size = nbytes

    def __repr__(self) -> str:
        return f"<gpusim DeviceArray shape={self.shape} dtype={self.dtype}>"

    def __len__(self) -> int:
        return len(self._gpusim_host_)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        a = self._gpusim_host_
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __getitem__(self, idx: Any) -> Any:
        r = self._gpusim_host_[idx]
        return DeviceArray(r) if isinstance(r, np.ndarray) else r

    def __setitem__(self, idx: Any, value: Any) -> None:
        self._gpusim_host_[idx] = getattr(value, "_gpusim_host_", value)
        self._gpusim_written_ = None

    def copy_to_host(self, ary: np.ndarray | None = None, stream: Any = 0) -> np.ndarray:
        if ary is None:
            return self._gpusim_host_.copy(order="K")
        np.copyto(ary, self._gpusim_host_)
        return ary

    def copy_to_device(self, ary: Any, stream: Any = 0) -> None:
        np.copyto(self._gpusim_host_, getattr(ary, "_gpusim_host_", ary))
        self._gpusim_written_ = None

    def is_c_contiguous(self) -> bool:
        return bool(self._gpusim_host_.flags.c_contiguous)

    def is_f_contiguous(self) -> bool:
        return bool(self._gpusim_host_.flags.f_contiguous)

    def reshape(self, *newshape: Any, order: str = "C") -> DeviceArray:
        return DeviceArray(self._gpusim_host_.reshape(*newshape, order=order))

    def ravel(self, order: str = "C") -> DeviceArray:
        return DeviceArray(self._gpusim_host_.ravel(order=order))

    def view(self, dtype: Any) -> DeviceArray:
        return DeviceArray(self._gpusim_host_.view(dtype))

    def transpose(self, axes: Any = None) -> DeviceArray:
        return DeviceArray(self._gpusim_host_.transpose(axes))

    T = property(transpose)


def _order(ary: np.ndarray) -> str:
    return "F" if ary.flags.f_contiguous and not ary.flags.c_contiguous else "C"


def to_device(obj: Any, stream: Any = 0, copy: bool = True, to: DeviceArray | None = None) -> DeviceArray:
    """A DeviceArray holding a copy of `obj` (or copy `obj` into `to`)."""
    host = np.asarray(getattr(obj, "_gpusim_host_", obj))
    if to is not None:
        to.copy_to_device(host)
        return to
    return DeviceArray(np.array(host, copy=True, order="K"))


def device_array(shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C",
                 stream: Any = 0) -> DeviceArray:
    """A zero-filled DeviceArray (zeros rather than garbage, so runs are deterministic); initcheck
    (`gpusim.sanitizer`) reports kernel reads of bytes nothing has written yet."""
    a = DeviceArray(np.zeros(shape, dtype=dtype, order=order))
    a._gpusim_written_ = np.zeros(a.nbytes, bool)
    return a


def device_array_like(ary: Any, stream: Any = 0) -> DeviceArray:
    a = np.asarray(getattr(ary, "_gpusim_host_", ary))
    return device_array(a.shape, a.dtype, order=_order(a))


def pinned_array(shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C") -> np.ndarray:
    return np.zeros(shape, dtype=dtype, order=order)


def pinned_array_like(ary: Any) -> np.ndarray:
    return pinned_array(ary.shape, ary.dtype, order=_order(np.asarray(ary)))


def mapped_array(shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C", stream: Any = 0,
                 portable: bool = False, wc: bool = False) -> np.ndarray:
    return np.zeros(shape, dtype=dtype, order=order)


def mapped_array_like(ary: Any, stream: Any = 0, portable: bool = False, wc: bool = False) -> np.ndarray:
    return mapped_array(ary.shape, ary.dtype, order=_order(np.asarray(ary)))


managed_array = mapped_array


@contextlib.contextmanager
def pinned(*arylist: Any):
    yield


@contextlib.contextmanager
def mapped(*arylist: Any, **kws: Any):
    yield arylist[0] if len(arylist) == 1 else list(arylist)


# ----------------------------------------------------------------------------- device, streams
class Stream:
    """A stream: launches complete before they return, so everything here is a no-op."""

    def synchronize(self) -> None:
        pass

    @contextlib.contextmanager
    def auto_synchronize(self):
        yield self


def stream() -> Stream:
    return Stream()


default_stream = legacy_default_stream = per_thread_default_stream = stream


def external_stream(ptr: int) -> Stream:
    return Stream()


def synchronize() -> None:
    """Launches are synchronous; nothing to wait for."""


def is_available() -> bool:
    return True


class SimulatedDevice:
    """What `get_current_device()` returns: the chosen preset, described like a CUDA device."""

    def __init__(self, spec: _specs.GPUSpec):
        lim = spec.limits
        self.id = 0
        self.spec = spec
        self.name = spec.marketing_name
        self.compute_capability = tuple(spec.compute_capability)
        self.WARP_SIZE = lim.warp_size_threads
        self.MAX_THREADS_PER_BLOCK = lim.max_threads_per_block
        self.MAX_BLOCK_DIM_X, self.MAX_BLOCK_DIM_Y, self.MAX_BLOCK_DIM_Z = lim.max_block_dims
        self.MAX_GRID_DIM_X, self.MAX_GRID_DIM_Y, self.MAX_GRID_DIM_Z = lim.max_grid_dims
        self.MAX_SHARED_MEMORY_PER_BLOCK = lim.max_shared_bytes_per_block_static
        self.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = lim.max_shared_bytes_per_block_optin

    def __repr__(self) -> str:
        return f"<gpusim simulated device {self.name} (sm_{self.compute_capability[0]}{self.compute_capability[1]})>"


def get_current_device() -> SimulatedDevice:
    return SimulatedDevice(_specs.get(_GPU))


def select_device(device_id: int = 0) -> SimulatedDevice:
    if device_id != 0:
        raise ValueError(f"the simulator has one device (id 0), not {device_id}")
    return get_current_device()


def list_devices() -> list[SimulatedDevice]:
    return [get_current_device()]


def close() -> None:
    pass


def detect() -> bool:
    """Print the simulated device, as `numba.cuda.detect()` prints real ones."""
    d = get_current_device()
    print(f"Found 1 CUDA devices (simulated by gpusim)\nid 0    {d.name}    [SUPPORTED]\n"
          f"                      Compute Capability: {d.compute_capability[0]}.{d.compute_capability[1]}")
    return True
