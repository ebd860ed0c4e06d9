"""The drop-in's memory API (numba-cuda's `api.py`): device arrays made from host data or
zero-filled (`to_device`, `device_array`, `device_array_like`), pinned, mapped and managed
arrays (plain numpy arrays the device reads directly: `HostMappedArray`), `is_cuda_array` /
`as_cuda_array`, and the `pinned`/`mapped` contexts (no-ops). The arrays themselves are
`_arrays.py`'s.

Sources: numba-cuda 0.30 `api.py` (`to_device`, `device_array`, `device_array_like`,
`pinned_array`, `mapped_array`, `managed_array`, `as_cuda_array`, `pinned`, `mapped`).
"""
from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from gpusim.cuda._arrays import (DeviceArray, check_device_bytes, dense_strides_like, empty_host, from_host,
                                 host_mapped, host_of as _host, order_of as _order)
from gpusim.sanitizer.device_memory import fresh as _fresh


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
