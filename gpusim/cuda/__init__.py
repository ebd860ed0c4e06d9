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

Kernels may allocate arrays (numba-cuda's runtime, `config.CUDA_ENABLE_NRT`: on the simulated
device heap, `gpusim/frontend/nrt.py`), call recursive device functions (`isa/recursion.py`)
and link external CUDA C++/PTX (`link=`, `declare_device`: `gpusim/frontend/externs.py`).

Does not model: asynchrony (a launch completes before it returns), events and
their timings, IPC, multiple devices. `cudadrv`,
`devicearray` and `kernels` are numba-cuda's with the simulator's arrays and kernels
(`gpusim/cuda/_namespaces.py`). Other `numba.cuda` names resolve to `numba.cuda` itself; host/driver APIs
that need a GPU raise AttributeError naming the gap.

Sources: numba-cuda 0.30 `decorators.py` (`jit`), `dispatcher.py` (`__getitem__`
launch configuration, `_prepare_args`), `api.py` (`to_device`, `device_array`, ...).
"""
from __future__ import annotations

import contextlib
import importlib
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
from gpusim.cuda import random  # noqa: E402,F401  (cuda.random)

import sys as _sys  # noqa: E402
from gpusim.cuda._library import install_numba_targets as _install  # noqa: E402
_install()                       # numba.vectorize/guvectorize(target="cuda") simulate too
from gpusim.cuda._hostcompile import install_when_no_driver as _no_driver  # noqa: E402
_no_driver()                     # without a GPU, Numba's device queries answer the simulated device
from gpusim.frontend.nrt import install_runtime as _nrt_runtime  # noqa: E402
_nrt_runtime()                   # ... and numba-cuda's NRT statistics (rtsys) answer the simulator's

# Numba types a reference to this module (reached some way `retarget` does not rewrite) as numba.cuda.
_numba_type_ = _nbt.Module(_nc)

_GPU: str = "h100"

_HOST_ONLY = frozenset({
    "open_ipc_array", "IpcHandle",
    "set_memory_manager", "defer_cleanup", "profile_start", "profile_stop", "profiling",
    "from_cuda_array_interface", "driver", "devices",
})


def __getattr__(name: str) -> Any:
    if name == "gpus":
        return list_devices()
    if name in ("compile", "compile_ptx", "compile_for_current_device", "compile_ptx_for_current_device"):
        from gpusim.cuda import _hostcompile as hostcompile
        return getattr(hostcompile, name)
    if name in ("vectorize", "guvectorize", "Reduce", "reduce"):
        from gpusim.cuda import _library as library
        return getattr(library, name)
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


# ----------------------------------------------------------------------------- kernels, arrays
from gpusim.cuda._dispatcher import Dispatcher, jit  # noqa: E402,F401
from gpusim.cuda._arrays import DeviceArray, dense_strides_like, empty_host, from_host  # noqa: E402,F401
from gpusim.cuda._arrays import check_device_bytes  # noqa: E402
from gpusim.cuda._arrays import host_mapped  # noqa: E402
from gpusim.sanitizer.device_memory import fresh as _fresh  # noqa: E402
from gpusim.cuda._arrays import host_of as _host, order_of as _order  # noqa: E402
from numba.cuda.args import In, InOut, Out  # noqa: E402,F401
from gpusim.cuda._namespaces import install as _install_namespaces  # noqa: E402
_install_namespaces(_sys.modules[__name__])     # cuda.cudadrv, cuda.devicearray, cuda.kernels (simulated)


def to_device(obj: Any, stream: Any = 0, copy: bool = True, to: DeviceArray | None = None) -> DeviceArray:
    """A DeviceArray holding a copy of `obj` (or copy `obj` into `to`)."""
    if to is not None:
        to.copy_to_device(obj, stream)
        return to
    if isinstance(obj, DeviceArray):
        return obj
    return from_host(obj, True, stream)


def device_array(shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C",
                 stream: Any = 0) -> DeviceArray:
    """A zero-filled DeviceArray (zeros rather than garbage, so runs are deterministic); initcheck
    (`gpusim.sanitizer`) reports kernel reads of its bytes before anything writes them. More
    bytes than the chosen GPU's memory (`hbm.capacity_bytes`) is refused as CUDA refuses it
    (out of memory); more than this machine can allocate, too (both a LaunchError)."""
    check_device_bytes(shape, dtype, f"cuda.device_array({shape!r}, {np.dtype(dtype)})")
    a = DeviceArray(empty_host(shape, dtype, strides, order), stream)
    a._gpusim_init_ = _fresh(a._gpusim_host_)
    return a


def device_array_like(ary: Any, stream: Any = 0) -> DeviceArray:
    a = _host(ary)
    return device_array(a.shape, a.dtype, dense_strides_like(a), _order(a), stream)


def pinned_array(shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C") -> np.ndarray:
    return empty_host(shape, dtype, strides, order)


def pinned_array_like(ary: Any) -> np.ndarray:
    a = _host(ary)
    return pinned_array(a.shape, a.dtype, dense_strides_like(a), _order(a))


def mapped_array(shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C", stream: Any = 0,
                 portable: bool = False, wc: bool = False) -> np.ndarray:
    return host_mapped(empty_host(shape, dtype, strides, order))


def mapped_array_like(ary: Any, stream: Any = 0, portable: bool = False, wc: bool = False) -> np.ndarray:
    a = _host(ary)
    return mapped_array(a.shape, a.dtype, dense_strides_like(a), _order(a))


def managed_array(shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C", stream: Any = 0,
                  attach_global: bool = True) -> np.ndarray:
    return host_mapped(empty_host(shape, dtype, strides, order))


def is_cuda_array(obj: Any) -> bool:
    return isinstance(obj, DeviceArray) or hasattr(obj, "__cuda_array_interface__")


def as_cuda_array(obj: Any, sync: bool = True) -> DeviceArray:
    if isinstance(obj, DeviceArray):
        return obj
    if not is_cuda_array(obj):
        raise TypeError("*obj* doesn't implement the cuda array interface.")
    raise NotImplementedError("gpusim cannot read another library's device memory (__cuda_array_interface__)")


@contextlib.contextmanager
def pinned(*arylist: Any):
    yield


@contextlib.contextmanager
def mapped(*arylist: Any, **kws: Any):
    yield arylist[0] if len(arylist) == 1 else list(arylist)


# ----------------------------------------------------------------------------- device, streams
class _Handle(__import__("ctypes").c_void_p):
    """A stream handle: a `c_void_p` that `int()` reads, as numba-cuda's stream handles are."""

    def __int__(self) -> int:
        return self.value or 0

    __index__ = __int__


class Stream:
    """A stream: launches complete before they return, so everything here is a no-op.
    `handle` is the pointer an external stream wraps (0 for streams of the simulator)."""

    def __init__(self, handle: int = 0):
        self.handle = _Handle(handle)

    def synchronize(self) -> None:
        pass

    @contextlib.contextmanager
    def auto_synchronize(self):
        yield self


def stream() -> Stream:
    return Stream()


default_stream = legacy_default_stream = per_thread_default_stream = stream


def external_stream(ptr: int) -> Stream:
    return Stream(ptr)


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
        self.supports_float16 = True
        self.supports_bfloat16 = self.compute_capability >= (8, 0)
        self.uuid = "GPU-00000000-0000-0000-0000-000000000000"

    def get_device_identity(self) -> dict:
        return {"pci_domain_id": 0, "pci_bus_id": 0, "pci_device_id": 0}

    def reset(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<gpusim simulated device {self.name} (sm_{self.compute_capability[0]}{self.compute_capability[1]})>"


class SimulatedContext:
    """What `current_context()` returns: the one simulated device; memory queries answer the
    preset's HBM size, resets and deallocation queues do nothing."""

    def __init__(self, device: SimulatedDevice):
        self.device = device
        self.handle = 0
        self.deallocations = _Deallocations()

    def get_memory_info(self) -> tuple[int, int]:
        total = int(getattr(self.device.spec, "memory_bytes", 0) or 80 << 30)
        return total, total

    def reset(self) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def push(self) -> None:
        pass

    def pop(self) -> None:
        pass


class _Deallocations:
    def clear(self) -> None:
        pass

    @contextlib.contextmanager
    def disable(self):
        yield


def current_context(devnum: int = 0) -> SimulatedContext:
    return SimulatedContext(get_current_device())


def require_context(fn):
    return fn


def is_float16_supported() -> bool:
    return True


def is_bfloat16_supported() -> bool:
    return get_current_device().compute_capability >= (8, 0)


def is_fp8_supported() -> bool:
    return get_current_device().compute_capability >= (8, 9)


class Event:
    """A stream event: launches are synchronous, so it is always complete; elapsed times are 0."""

    def __init__(self, timing: bool = True):
        self.timing = timing

    def record(self, stream: Any = 0) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Any = 0) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, other: Event) -> float:
        return 0.0


def event(timing: bool = True) -> Event:
    return Event(timing)


def event_elapsed_time(start: Event, stop: Event) -> float:
    return start.elapsed_time(stop)


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
