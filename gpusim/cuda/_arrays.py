"""The drop-in's device arrays: `numba.cuda`'s `DeviceNDArray` API over a host numpy array.

A `DeviceArray` holds its data in a host numpy array (`_gpusim_host_`) that a launch
reads and updates in place (`gpusim/frontend/args.py` marshals it). It answers what
numba-cuda's `DeviceNDArrayBase`/`DeviceNDArray` answer: shape, strides, dtype, size,
ndim, nbytes, alloc_size, `flags` (a dict, as Numba returns), `gpu_data` (the host
array the view starts at), `device_ctypes_pointer`, `stream`, `copy_to_host`
(optionally into a given array, checked for shape and dtype as Numba does),
`copy_to_device`, `split`, `bind`, `squeeze`, `view`, `reshape` and `ravel` (with
Numba's errors for non-contiguous arrays), `getitem`/`setitem`, `__array__`, and
`is_cuda_ndarray`'s `__cuda_ndarray__` marker. `device_array(..., strides=)` and
`device_array_like` keep the strides Numba would give (`_contiguous_strides_like_array`:
a strided view's like-array is dense in the same axis order).

Does not model: device memory addresses (`device_ctypes_pointer` and the interface's
pointer are the host address; a kernel that captures the array as a global reaches it
there, `gpusim/frontend/captured.py`), IPC handles, `__cuda_array_interface__` consumers other than gpusim.

Sources: numba-cuda 0.30 `cudadrv/devicearray.py`, `api.py` (`device_array_like`,
`_contiguous_strides_like_array`).
"""
from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np
from numba.cuda.typing.typeof import Purpose, typeof

from gpusim.cuda import _state
from gpusim.errors import LaunchError
from gpusim.frontend.args import gib
from gpusim.frontend.captured import export
from gpusim.sanitizer import device_memory


def host_of(obj: Any) -> Any:
    return getattr(obj, "_gpusim_host_", obj)


class _Memory:
    """`gpu_data`: the allocation behind a device array (views share it and compare equal);
    its pointers are host addresses of the simulator's copy."""

    def __init__(self, host: np.ndarray):
        self.host = host
        base = host
        while isinstance(base.base, np.ndarray):
            base = base.base
        self._key = (base.__array_interface__["data"][0], base.nbytes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Memory) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    @property
    def device_pointer(self) -> int:
        return export(self.host)

    @property
    def device_ctypes_pointer(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self.device_pointer)

    device_pointer_value = device_pointer


class DeviceArray:
    """A device array of the simulator (see module doc)."""
    __cuda_ndarray__ = True
    __cuda_memory__ = True
    _gpusim_init_ = None            # initcheck: which bytes of the allocation were written (sanitizer.device_memory)

    def __init__(self, host: np.ndarray, stream: Any = 0):
        self._gpusim_host_ = host
        self.stream = stream

    def _derived(self, host: np.ndarray, stream: Any = 0) -> DeviceArray:
        """A DeviceArray over `host`, a view of this one's memory: it shares the written-byte flags."""
        d = DeviceArray(host, stream)
        d._gpusim_init_ = self._gpusim_init_
        return d

    @property
    def _numba_type_(self) -> Any:
        return typeof(self._gpusim_host_, Purpose.argument)

    shape = property(lambda self: self._gpusim_host_.shape)
    dtype = property(lambda self: self._gpusim_host_.dtype)
    size = property(lambda self: self._gpusim_host_.size)
    ndim = property(lambda self: self._gpusim_host_.ndim)
    strides = property(lambda self: self._gpusim_host_.strides)
    nbytes = property(lambda self: self._gpusim_host_.nbytes)

    @property
    def alloc_size(self) -> int:
        h = self._gpusim_host_
        if h.size == 0:
            return 0
        lo = sum(min(0, (n - 1) * s) for n, s in zip(h.shape, h.strides))
        hi = sum(max(0, (n - 1) * s) for n, s in zip(h.shape, h.strides))
        return hi - lo + h.itemsize

    @property
    def flags(self) -> dict:
        f = self._gpusim_host_.flags
        return {"C_CONTIGUOUS": bool(f.c_contiguous), "F_CONTIGUOUS": bool(f.f_contiguous),
                "OWNDATA": False, "WRITEABLE": bool(f.writeable), "ALIGNED": bool(f.aligned),
                "WRITEBACKIFCOPY": False}

    @property
    def gpu_data(self) -> _Memory:
        return _Memory(self._gpusim_host_)

    @property
    def device_ctypes_pointer(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(export(self._gpusim_host_) if self.size else 0)

    @property
    def __cuda_array_interface__(self) -> dict:
        h = self._gpusim_host_
        return {"shape": h.shape, "strides": None if h.flags.c_contiguous else h.strides,
                "data": (export(h) if h.size else 0, False), "typestr": h.dtype.str, "stream": None,
                "version": 3}

    def __repr__(self) -> str:
        return f"<gpusim DeviceArray shape={self.shape} dtype={self.dtype}>"

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("`copy=False` is not supported. A copy is always created.")
        a = self._gpusim_host_.copy()
        return a.astype(dtype) if dtype is not None and np.dtype(dtype) != a.dtype else a

    def bind(self, stream: Any = 0) -> DeviceArray:
        return self._derived(self._gpusim_host_, stream)

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, idx: Any) -> Any:
        return self.getitem(idx)

    def getitem(self, idx: Any, stream: Any = 0) -> Any:
        r = self._gpusim_host_[idx]
        if isinstance(r, np.ndarray):
            return self._derived(r, stream or self.stream)
        if isinstance(r, np.void):
            return r.copy() if hasattr(r, "copy") else r
        return r

    def __setitem__(self, idx: Any, value: Any) -> None:
        self.setitem(idx, value)

    def setitem(self, idx: Any, value: Any, stream: Any = 0) -> None:
        self._gpusim_host_[idx] = host_of(value)
        device_memory.mark(self, idx)

    # ------------------------------------------------------------------ copies
    def copy_to_host(self, ary: np.ndarray | None = None, stream: Any = 0) -> np.ndarray:
        h = self._gpusim_host_
        if any(s < 0 for s in h.strides):
            raise NotImplementedError(f"D->H copy not implemented for negative strides: {h.strides}")
        if ary is None:
            return h.copy(order="K")
        _check_compatible(self, ary)
        np.copyto(ary, h.reshape(ary.shape) if ary.shape != h.shape else h)
        return ary

    def copy_to_device(self, ary: Any, stream: Any = 0) -> None:
        src = np.asarray(host_of(ary))
        if src.size == 0:
            return
        if not (self._gpusim_host_.flags.c_contiguous or self._gpusim_host_.flags.f_contiguous):
            raise ValueError("Array contains non-contiguous buffer and cannot be transferred as a single "
                             "memory region. Please ensure contiguous buffer with numpy .ascontiguousarray()")
        _check_compatible(self, src)
        np.copyto(self._gpusim_host_, src.reshape(self.shape) if src.shape != self.shape else src)
        device_memory.copy_flags(self, ary)

    def copy(self) -> DeviceArray:
        d = DeviceArray(self._gpusim_host_.copy(order="K"))
        d._gpusim_init_ = device_memory.copied(self, d._gpusim_host_)
        return d

    # ------------------------------------------------------------------ views
    def split(self, section: int, stream: Any = 0):
        if self.ndim != 1:
            raise ValueError("only support 1d array")
        if self.strides[0] != self.dtype.itemsize:
            raise ValueError("only support unit stride")
        for i in range(int(math.ceil(self.size / section))):
            yield self._derived(self._gpusim_host_[i * section:min((i + 1) * section, self.size)], stream)

    def squeeze(self, axis: Any = None, stream: Any = 0) -> DeviceArray:
        return self._derived(self._gpusim_host_.squeeze(axis), stream)

    def view(self, dtype: Any) -> DeviceArray:
        h = self._gpusim_host_
        dtype = np.dtype(dtype)
        if h.ndim and h.strides[-1] != h.itemsize and dtype.itemsize != h.itemsize:
            raise ValueError("To change to a dtype of a different size, the last axis must be contiguous")
        if h.ndim and (h.shape[-1] * h.itemsize) % dtype.itemsize:
            raise ValueError("When changing to a larger dtype, its size must be a divisor of the total size in "
                             "bytes of the last axis of the array.")
        return self._derived(h.view(dtype))

    def reshape(self, *newshape: Any, order: str = "C", **kws: Any) -> DeviceArray:
        if len(newshape) == 1 and isinstance(newshape[0], (tuple, list)):
            newshape = tuple(newshape[0])
        if order not in ("C", "F", "A"):
            raise ValueError("order not C|F|A")
        h = self._gpusim_host_
        if tuple(newshape) == h.shape:
            return self._derived(h, self.stream)
        return self._derived(_no_copy(h, h.reshape(newshape, order=order)), self.stream)

    def ravel(self, order: str = "C", stream: Any = 0) -> DeviceArray:
        if order not in ("C", "F", "A"):
            raise ValueError("order not C|F|A")
        h = self._gpusim_host_
        return self._derived(_no_copy(h, h.ravel(order=order)), stream or self.stream)

    def is_c_contiguous(self) -> bool:
        return bool(self._gpusim_host_.flags.c_contiguous)

    def is_f_contiguous(self) -> bool:
        return bool(self._gpusim_host_.flags.f_contiguous)

    def transpose(self, axes: Any = None) -> DeviceArray:
        if axes is not None and tuple(axes) == tuple(range(self.ndim)):
            return self
        if self.ndim > 2 and axes is None or axes is not None and len(axes) != self.ndim:
            raise NotImplementedError("transposing a non-2D DeviceNDArray isn't supported")
        if self.ndim != 2 and axes is None:
            return self
        h = self._gpusim_host_
        if h.flags.c_contiguous or h.flags.f_contiguous:
            return self._derived(h.transpose(axes))
        # Numba transposes a strided view with its transpose kernel into a new C-contiguous array
        t = self._derived(h.transpose(axes))
        d = DeviceArray(np.ascontiguousarray(t._gpusim_host_))
        d._gpusim_init_ = device_memory.copied(t, d._gpusim_host_)
        return d

    T = property(transpose)

    def as_cuda_arg(self) -> np.ndarray:
        return self._gpusim_host_

    def get_ipc_handle(self):
        raise NotImplementedError("IPC handles are a driver feature the simulator does not provide")


def _no_copy(h: np.ndarray, r: np.ndarray) -> np.ndarray:
    """`r` if it is a view of `h` (device memory cannot be copied implicitly), else Numba's error."""
    if r.size > 1 and not np.shares_memory(r, h):
        raise NotImplementedError("operation requires copying")
    return r


def _check_compatible(a: Any, b: Any) -> None:
    """numba-cuda's check_array_compatibility: same dtype, same squeezed shape and strides."""
    b = np.asarray(host_of(b))
    ah = host_of(a)
    a_sq, b_sq = ah.squeeze(), b.squeeze()
    if ah.dtype != b.dtype:
        raise TypeError(f"incompatible dtype: {ah.dtype} vs. {b.dtype}")
    if a_sq.shape != b_sq.shape:
        raise ValueError(f"incompatible shape: {ah.shape} vs. {b.shape}")
    if a_sq.size > 1 and a_sq.strides != b_sq.strides and (a_sq.flags.c_contiguous != b_sq.flags.c_contiguous):
        raise ValueError(f"incompatible strides: {ah.strides} vs. {b.strides}")


def order_of(ary: Any) -> str:
    f = np.asarray(host_of(ary)).flags
    return "F" if f.f_contiguous and not f.c_contiguous else "C"


def dense_strides_like(ary: Any) -> tuple | None:
    """numba-cuda `_contiguous_strides_like_array`: dense strides in `ary`'s axis order."""
    h = host_of(ary)
    if h.flags.c_contiguous or h.flags.f_contiguous or h.ndim <= 1:
        return None
    perm = sorted(range(h.ndim), key=lambda i: h.strides[i])
    strides, stride = [0] * h.ndim, h.dtype.itemsize
    for i in perm:
        strides[i] = stride
        stride *= h.shape[i]
    return tuple(strides)


def empty_host(shape: Any, dtype: Any, strides: Any = None, order: str = "C") -> np.ndarray:
    """A zero-filled host array of `shape`, with `strides` (bytes) if given; one this machine
    cannot allocate is a LaunchError."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    try:
        if strides is None:
            return np.zeros(shape, dtype=dtype, order=order)
        strides = (strides,) if isinstance(strides, (int, np.integer)) else tuple(strides)
        extent = sum((n - 1) * s for n, s in zip(shape, strides)) + dtype.itemsize if all(shape) else 0
        buf = np.zeros(max(extent, 0) // dtype.itemsize + 1, dtype)
    except MemoryError:
        raise too_large(shape, dtype, "more than this machine can allocate to simulate it") from None
    return np.lib.stride_tricks.as_strided(buf, shape, strides)


def too_large(shape: tuple, dtype: np.dtype, why: str) -> BaseException:
    """LaunchError for an array of `shape` and `dtype` that cannot be had."""
    n = math.prod(int(d) for d in shape)
    return LaunchError(f"a device array of shape {tuple(int(d) for d in shape)} and dtype {dtype} "
                       f"({gib(n * dtype.itemsize)}) is {why}")


def check_device_bytes(shape: Any, dtype: Any, what: str) -> None:
    """Refuse an allocation larger than the chosen GPU's memory, as cudaMalloc does."""
    dtype = np.dtype(dtype)
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    try:
        n = math.prod(int(d) for d in dims) * dtype.itemsize
    except (TypeError, ValueError):
        return                                              # numpy reports a bad shape itself
    spec = _state.spec()
    if n > spec.hbm.capacity_bytes:
        raise too_large(dims, dtype, f"more than the {gib(spec.hbm.capacity_bytes)} of device memory of "
                                     f"{spec.name} (CUDA_ERROR_OUT_OF_MEMORY on the GPU; gpusim.cuda.set_gpu "
                                     f"chooses another)")


def from_host(obj: Any, copy: bool = True, stream: Any = 0) -> DeviceArray:
    host = np.asarray(host_of(obj))
    if copy:
        check_device_bytes(host.shape, host.dtype, "cuda.to_device")
        try:
            host = np.array(host, copy=True, order="K")
        except MemoryError:
            raise too_large(host.shape, host.dtype, "more than this machine can allocate to simulate it") from None
    return DeviceArray(host, stream)


class HostMappedArray(np.ndarray):
    """A pinned, mapped or managed array: host memory the device reads directly (a numpy
    array; passing it to a kernel is not an implicit copy)."""


def host_mapped(a: np.ndarray) -> HostMappedArray:
    return a.view(HostMappedArray)


def is_device_array(obj: Any) -> bool:
    return isinstance(obj, DeviceArray)
