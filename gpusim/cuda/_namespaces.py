"""The drop-in's `cuda.cudadrv`, `cuda.devicearray` and `cuda.kernels` namespaces.

Programs (and numba-cuda's library code) reach some array constructors through
numba-cuda's driver-level modules: `cuda.cudadrv.devicearray.from_array_like(ary)`,
`cuda.devicearray.auto_device(obj)`, `DeviceNDArray(shape, strides, dtype)` (what
`numba.cuda.kernels.transpose` allocates its output with). Here those names make the
simulator's `DeviceArray`s (`_arrays.py`); every other name of these modules is
numba-cuda's own (`cuda.cudadrv.driver`, `nvrtc`, ...), so nothing that worked before
changes.

`cuda.kernels.transpose` is numba-cuda's transpose module executed once more with the
drop-in as its `cuda` (as `_library.py` does for the ufunc and reduction libraries) and
the simulated device answering its `driver.get_device().MAX_THREADS_PER_BLOCK`, so its
tiled-transpose kernel runs in the simulator; `cuda.kernels.reduction` is `_library.py`'s.
numba-cuda's own `numba.cuda.kernels.transpose.transpose` is routed to it for drop-in
arrays, or when no CUDA driver is present (`_route_numba_transpose`).

`cuda.launchconfig` is `frontend/current_launch.py`. `install()` registers the modules under
`gpusim.cuda.*` in `sys.modules`, so that
`from gpusim.cuda.kernels.transpose import transpose` and `from gpusim.cuda.cudadrv
import driver` import them (submodules not listed here still import from numba-cuda's
package path, as before).

Does not model: `DeviceRecord` / `from_record_like` (numba-cuda's, which need a GPU),
IPC, `MappedNDArray` / `ManagedNDArray` (the drop-in's mapped arrays are numpy arrays).

Sources: numba-cuda 0.30 `cudadrv/devicearray.py` (`DeviceNDArray`, `from_array_like`,
`auto_device`, `sentry_contiguous`), `kernels/transpose.py`.
"""
from __future__ import annotations

import functools
import importlib
import sys
import types
from typing import Any

import numba.cuda.cudadrv as nc_cudadrv
import numba.cuda.kernels as nc_kernels
import numba.cuda.kernels.transpose as nc_transpose
import numpy as np
from numba.cuda.cudadrv.devicearray import sentry_contiguous

from gpusim.cuda import _hostcompile, _library
from gpusim.cuda._arrays import DeviceArray, empty_host
from gpusim.cuda._device import get_current_device
from gpusim.cuda._memory import as_cuda_array
from gpusim.frontend import current_launch as launchconfig
from gpusim.sanitizer.device_memory import fresh


class _Namespace(types.ModuleType):
    """A module whose own names shadow those of a numba-cuda module (the fallback)."""

    def __init__(self, name: str, fallback: str, doc: str = ""):
        super().__init__(name, doc)
        self._fallback = fallback

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name != "__path__":
            raise AttributeError(name)
        mod = importlib.import_module(self._fallback)
        return getattr(mod, name)


# ----------------------------------------------------------------------------- devicearray
def DeviceNDArray(shape: Any, strides: Any, dtype: Any, stream: Any = 0, gpu_data: Any = None) -> Any:  # noqa: N802
    """A new device array of `shape` with byte `strides` (numba-cuda's constructor; `gpu_data`,
    an existing allocation, is not supported: memory is the array's own)."""
    if gpu_data is not None:
        raise NotImplementedError("DeviceNDArray(gpu_data=...) over existing device memory: the simulator's device "
                                  "arrays own their memory")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    strides = None if strides is None else ((strides,) if isinstance(strides, (int, np.integer)) else tuple(strides))
    d = DeviceArray(empty_host(shape, dtype, strides), stream)
    d._gpusim_init_ = fresh(d._gpusim_host_)                      # uninitialised memory (initcheck)
    return d


def from_array_like(ary: Any, stream: Any = 0, gpu_data: Any = None) -> Any:
    """A device array with the shape, strides and dtype of `ary` (uninitialised: zeros)."""
    return DeviceNDArray(ary.shape, ary.strides, ary.dtype, stream=stream, gpu_data=gpu_data)


def auto_device(obj: Any, stream: Any = 0, copy: bool = True, user_explicit: bool = False) -> tuple[Any, bool]:
    """(device array, created): `obj` itself if it is one, else a new one holding `obj`'s
    values (a contiguous array, a scalar, anything numpy can make an array of)."""
    if isinstance(obj, DeviceArray):
        return obj, False
    if getattr(obj, "__cuda_array_interface__", None) is not None:
        return as_cuda_array(obj), False
    arr = np.array(obj, copy=None, subok=True)
    sentry_contiguous(arr)
    dev = from_array_like(arr, stream=stream)
    if copy:
        dev.copy_to_device(arr, stream=stream)
    return dev, True


def _devicearray() -> _Namespace:
    m = _Namespace("gpusim.cuda.cudadrv.devicearray", "numba.cuda.cudadrv.devicearray",
                   "numba-cuda's devicearray module with the simulator's device arrays")
    m.DeviceNDArray = DeviceNDArray
    m.DeviceNDArrayBase = DeviceArray
    m.from_array_like = from_array_like
    m.auto_device = auto_device
    return m


# ----------------------------------------------------------------------------- kernels
class _SimDriver:
    """The one `driver` query numba-cuda's library kernels make: the device's limits."""

    @staticmethod
    def get_device() -> Any:
        return get_current_device()


class _Lazy(types.ModuleType):
    """A module filled on first use by `load()` (keeps `import gpusim.cuda` cheap)."""

    def __init__(self, name: str, load):
        super().__init__(name)
        self._load = load
        self._loaded = False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or self.__dict__.get("_loaded"):
            raise AttributeError(name)
        self._loaded = True
        src = self._load()
        for k, v in vars(src).items():
            if not k.startswith("__"):
                setattr(self, k, v)
        return getattr(self, name)


def _transpose() -> types.ModuleType:
    mod = _library._private_copy("numba.cuda.kernels.transpose", "gpusim.cuda._numba_transpose")
    mod.driver = _SimDriver()
    return mod


def _reduction() -> types.ModuleType:
    return _library._reduction()


def _route_numba_transpose() -> None:
    """numba-cuda's own `numba.cuda.kernels.transpose.transpose` runs the simulated one when
    given a drop-in device array, or on a machine without a CUDA driver (where Numba could not
    launch it): a program importing it from numba-cuda keeps working after the one-import
    change. With real device arrays on a real GPU it is numba-cuda's, unchanged."""
    original = nc_transpose.transpose
    if getattr(original, "_gpusim_routed_", False):
        return

    @functools.wraps(original)
    def transpose(a, b=None):
        if isinstance(a, DeviceArray) or isinstance(b, DeviceArray) or _hostcompile._INSTALLED:
            return sys.modules["gpusim.cuda.kernels.transpose"].transpose(a, b)
        return original(a, b)
    transpose._gpusim_routed_ = True
    nc_transpose.transpose = transpose


def install(parent: types.ModuleType) -> None:
    """Register the namespaces as `parent.cudadrv`, `parent.devicearray`, `parent.kernels`
    and under their `gpusim.cuda.*` names in `sys.modules`."""
    da = _devicearray()
    drv = _Namespace("gpusim.cuda.cudadrv", "numba.cuda.cudadrv", "numba-cuda's cudadrv with the drop-in's devicearray")
    drv.__path__ = list(nc_cudadrv.__path__)          # other submodules: numba-cuda's files, as before
    drv.devicearray = da
    kernels = _Namespace("gpusim.cuda.kernels", "numba.cuda.kernels", "numba-cuda's library kernels, simulated")
    kernels.__path__ = list(nc_kernels.__path__)
    kernels.transpose = _Lazy("gpusim.cuda.kernels.transpose", _transpose)
    kernels.reduction = _Lazy("gpusim.cuda.kernels.reduction", _reduction)
    for name, mod in list(sys.modules.items()):      # numba-cuda's loaded driver modules, not second copies
        if name.startswith("numba.cuda.cudadrv.") and name != "numba.cuda.cudadrv.devicearray":
            sys.modules.setdefault(f"{parent.__name__}.cudadrv.{name[len('numba.cuda.cudadrv.'):]}", mod)
    for name, mod in (("cudadrv", drv), ("cudadrv.devicearray", da), ("kernels", kernels),
                      ("kernels.transpose", kernels.transpose), ("kernels.reduction", kernels.reduction)):
        sys.modules.setdefault(f"{parent.__name__}.{name}", mod)
    parent.cudadrv, parent.devicearray, parent.kernels = drv, da, kernels
    sys.modules.setdefault(f"{parent.__name__}.launchconfig", launchconfig)
    parent.launchconfig = launchconfig
    _route_numba_transpose()
