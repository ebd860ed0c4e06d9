"""`gpusim.cupy.ndarray`: CuPy's device array, backed by a numpy array on the host.

What it models: the array a `RawKernel` reads and writes. It is a numpy array (a subclass of
`numpy.ndarray`), so host-side glue code (arithmetic, reductions, indexing, reshapes) runs
in numpy; a kernel launch copies the array's whole allocation to the simulated GPU and back
(`_args.py`). What CuPy adds over numpy:
- `get()` / `asnumpy(x)`: a numpy copy; `set(host)`: a copy from the host;
- `data`: a `MemoryPointer` whose `ptr` is the array's device address, stable for the
  allocation's lifetime and unique among live allocations (addresses are made up: 512-byte
  aligned from 0x7f0000000000, in the order arrays are first asked for theirs). A view
  (`x[8:]`) points into its base's allocation, `x.data.ptr + 8 * itemsize`, as in CuPy;
  a kernel given a view gets that pointer, so it sees the base's memory around the view;
- matrix products (`@`, `dot`) are refused, as CuPy runs them in cuBLAS (`_unsupported.py`);
- reductions and scalar indexing give 0-d arrays, as CuPy's do (`x.sum().get()`,
  `x[0].get()`); `repr` reads `array(...)`.
The allocation behind an array is its root: the array at the end of its `base` chain.

Does not model: device memory as separate from host memory (a numpy function given a
`gpusim.cupy.ndarray` works, where CuPy refuses the implicit transfer), asynchrony,
multiple devices, memory pools (allocation never fails below the preset's HBM size), and
the numbers of `empty` (zeros here, for deterministic runs).

Sources: CuPy 14 `cupy/_core/core.pyx` (`ndarray`, `get`, `set`, `data`), `cupy/cuda/memory.pyx`
(`MemoryPointer`, 512-byte allocation unit of the memory pool), `cupy/_creation/` (`array`,
`asarray`, `empty`, `zeros`, ...).
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from gpusim.cupy._unsupported import refuse
from gpusim.frontend.rawargs import DeviceView

ADDRESS_BASE = 0x7F00_0000_0000     # first made-up device address
ALLOC_UNIT_BYTES = 512              # CuPy's memory pool rounds allocations up to 512 bytes
_SUPPORTED_KINDS = "biufc"          # bool, integers, floats, complex: CuPy's dtypes


class ndarray(np.ndarray):  # noqa: N801  (CuPy's name)
    """A CuPy array (module doc). `ndarray(shape, dtype=float, memptr=None, strides=None,
    order='C')`: zeros, or a view of the allocation `memptr` points into."""

    def __new__(cls, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is None:
            return np.zeros(shape, dtype, order=order).view(cls)
        if not isinstance(memptr, MemoryPointer):
            raise TypeError(f"memptr must be a gpusim.cupy.cuda.MemoryPointer, got {type(memptr).__name__}")
        root = memptr.mem.buffer
        raw = root.reshape(-1, order="A").view(np.uint8)
        return np.ndarray(shape, dtype, buffer=raw, offset=memptr.offset, strides=strides, order=order).view(cls)

    def __array_wrap__(self, obj, context=None, return_scalar=False):
        """Reductions give 0-d arrays (CuPy's), not numpy scalars."""
        return np.ndarray.__array_wrap__(self, obj, context, False)

    def __getitem__(self, key):
        r = np.ndarray.__getitem__(self, key)
        if isinstance(r, np.generic):                  # one element: a 0-d view, as CuPy gives
            r = np.ndarray.__getitem__(self, (key if isinstance(key, tuple) else (key,)) + (Ellipsis,))
        return r

    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))

    def __str__(self) -> str:
        return str(self.view(np.ndarray))

    def get(self, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
        """A numpy copy of the array (into `out` when given)."""
        if out is not None:
            if not isinstance(out, np.ndarray) or isinstance(out, ndarray):
                raise TypeError("Only numpy.ndarray can be obtained from cupy.ndarray")
            if out.shape != self.shape or out.dtype != self.dtype:
                raise ValueError(f"Shape or dtype mismatch: out is {out.dtype} {out.shape}, the array "
                                 f"{self.dtype} {self.shape}")
            out[...] = self.view(np.ndarray)
            return out
        return np.array(self.view(np.ndarray), order=order, copy=True)

    def set(self, arr, stream=None) -> None:
        """Copy the numpy array `arr` (same shape and dtype) into this array."""
        arr = np.asarray(arr)
        if arr.shape != self.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        if arr.dtype != self.dtype:
            raise TypeError(f"{self.dtype} array cannot be set to {arr.dtype} array")
        self.view(np.ndarray)[...] = arr

    @property
    def data(self) -> MemoryPointer:
        """The device address of the first element (module doc)."""
        root = root_of(self)
        return MemoryPointer(memory_of(root), _address(self) - _address(root))

    @property
    def device(self):
        from gpusim.cupy.cuda import Device      # a cycle: gpusim.cupy.cuda makes arrays too
        return Device(0)

    def toDlpack(self):  # noqa: N802  (CuPy's name)
        raise refuse("cupy.ndarray.toDlpack", "DLPack exchanges real device memory")

    def dot(self, b, out=None):
        """Refused: CuPy runs it in cuBLAS (`_unsupported.py`)."""
        raise refuse("cupy.ndarray.dot")

    def __matmul__(self, other):
        """Refused: CuPy runs `@` in cuBLAS (`_unsupported.py`)."""
        raise refuse("cupy.ndarray.__matmul__ (@)")

    __rmatmul__ = __imatmul__ = __matmul__


ndarray.__module__ = "gpusim.cupy"        # as users name it (and pickle finds it)


# ----------------------------------------------------------------------------- allocations and addresses
class Memory:
    """One allocation (CuPy's `cupy.cuda.Memory`): `ptr`, `size`, `device_id`; `buffer` is the
    root array holding its bytes."""

    def __init__(self, buffer: np.ndarray, ptr: int):
        self.buffer, self.ptr, self.size, self.device_id = buffer, ptr, buffer.nbytes, 0

    def __repr__(self) -> str:
        return f"<gpusim.cupy Memory 0x{self.ptr:x}, {self.size} bytes>"


class MemoryPointer:
    """A device address inside an allocation (CuPy's `cupy.cuda.MemoryPointer`): `ptr`,
    `mem`, `offset`, `device_id`; `+`/`-` an int moves it. Passed to a kernel, it is the
    pointer `ptr`."""

    def __init__(self, mem: Memory, offset: int):
        self.mem, self.offset, self.device_id = mem, int(offset), 0
        self.ptr = mem.ptr + self.offset

    def __int__(self) -> int:
        return self.ptr

    def __add__(self, n: int) -> MemoryPointer:
        return MemoryPointer(self.mem, self.offset + int(n))

    __radd__ = __add__

    def __sub__(self, n: int) -> MemoryPointer:
        return MemoryPointer(self.mem, self.offset - int(n))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, MemoryPointer) and other.ptr == self.ptr

    def __hash__(self) -> int:
        return hash(self.ptr)

    def __repr__(self) -> str:
        return f"<gpusim.cupy MemoryPointer 0x{self.ptr:x}>"

    def device_view(self) -> DeviceView:
        """The pointer as a kernel argument (rawargs.DeviceView), of untyped bytes."""
        return DeviceView(self.mem.buffer, self.offset, np.dtype("V1"), (self.mem.size - self.offset,))

    def memset(self, value: int, size: int, stream=None) -> None:
        raw = self.mem.buffer.reshape(-1, order="A").view(np.uint8)
        raw[self.offset:self.offset + int(size)] = int(value) & 0xFF


_LIVE: dict[int, tuple[weakref.ref, Memory]] = {}      # id(root) -> (its weakref, its Memory)
_NEXT = [ADDRESS_BASE]


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def root_of(a: np.ndarray) -> np.ndarray:
    """The array at the end of `a`'s `base` chain: the allocation `a` is a view of."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def memory_of(root: np.ndarray) -> Memory:
    """The allocation (and made-up address) of a root array, assigned on first use."""
    hit = _LIVE.get(id(root))
    if hit is not None and hit[0]() is root:
        return hit[1]
    mem = Memory(root, _NEXT[0])
    _NEXT[0] += max(ALLOC_UNIT_BYTES, -(-root.nbytes // ALLOC_UNIT_BYTES) * ALLOC_UNIT_BYTES)
    key = id(root)
    _LIVE[key] = (weakref.ref(root, lambda _r, k=key, live=_LIVE: live.pop(k, None)), mem)
    return mem


def pointer_at(address: int) -> MemoryPointer | None:
    """The MemoryPointer of a live allocation holding `address` (a `.data.ptr` passed as an int)."""
    for ref, mem in list(_LIVE.values()):
        if ref() is not None and mem.ptr <= address < mem.ptr + max(mem.size, 1):
            return MemoryPointer(mem, address - mem.ptr)
    return None


def device_view(a: np.ndarray) -> DeviceView | np.ndarray:
    """`a` as a kernel's pointer argument: into its root's allocation at its first element
    (module doc); a root that is not contiguous (numpy stride tricks) passes as itself
    (`rawargs`: through a contiguous copy)."""
    root = root_of(a)
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        return a
    return DeviceView(root, _address(a) - _address(root), a.dtype, a.shape)


# ----------------------------------------------------------------------------- creation
def _checked(a: np.ndarray) -> ndarray:
    if a.dtype.kind not in _SUPPORTED_KINDS:
        raise ValueError(f"Unsupported dtype {a.dtype}")
    return a.view(ndarray)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False) -> ndarray:
    """A new array holding `obj` (a copy, as a host-to-device transfer makes)."""
    if isinstance(obj, ndarray) and not copy:
        out = obj.astype(dtype or obj.dtype, order=order, copy=False)
        return out if out.ndim >= ndmin else out.reshape((1,) * (ndmin - out.ndim) + out.shape)
    return _checked(np.array(obj, dtype=dtype, copy=True, order=order, ndmin=ndmin).view(np.ndarray))


def asarray(a, dtype=None, order=None, *, blocking=False) -> ndarray:
    """`a` itself when it is a gpusim.cupy array of that dtype, else a copy on the device."""
    if isinstance(a, ndarray):
        return a.astype(dtype or a.dtype, order=order or "K", copy=False)
    return array(a, dtype, True, order or "K")


asanyarray = asarray


def ascontiguousarray(a, dtype=None) -> ndarray:
    return np.ascontiguousarray(asarray(a), dtype=dtype).view(ndarray)


def asfortranarray(a, dtype=None) -> ndarray:
    return np.asfortranarray(asarray(a), dtype=dtype).view(ndarray)


def asnumpy(a, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
    """A numpy copy of a gpusim.cupy array; anything else through `numpy.asarray`."""
    if isinstance(a, ndarray):
        return a.get(stream, order, out, blocking)
    if out is not None:
        out[...] = a
        return out
    return np.asarray(a, order=order)


def empty(shape, dtype=float, order="C") -> ndarray:
    """Zeros (CuPy's are unspecified; zeros keep runs deterministic)."""
    return _checked(np.zeros(shape, dtype, order=order))


def zeros(shape, dtype=float, order="C") -> ndarray:
    return _checked(np.zeros(shape, dtype, order=order))


def ones(shape, dtype=float, order="C") -> ndarray:
    return _checked(np.ones(shape, dtype, order=order))


def full(shape, fill_value, dtype=None, order="C") -> ndarray:
    return _checked(np.full(shape, fill_value, dtype, order=order))


def _like(a, dtype, order, shape):
    a = np.asarray(a)
    dt = a.dtype if dtype is None else np.dtype(dtype)
    sh = a.shape if shape is None else shape
    o = ("F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C") if order in ("K", "A") else order
    return sh, dt, o


def empty_like(a, dtype=None, order="K", subok=None, shape=None) -> ndarray:
    return zeros(*_like(a, dtype, order, shape))


def zeros_like(a, dtype=None, order="K", subok=None, shape=None) -> ndarray:
    return zeros(*_like(a, dtype, order, shape))


def ones_like(a, dtype=None, order="K", subok=None, shape=None) -> ndarray:
    return ones(*_like(a, dtype, order, shape))


def full_like(a, fill_value, dtype=None, order="K", subok=None, shape=None) -> ndarray:
    sh, dt, o = _like(a, dtype, order, shape)
    return full(sh, fill_value, dt, o)


def arange(start, stop=None, step=1, dtype=None) -> ndarray:
    return _checked(np.arange(start, stop, step, dtype) if stop is not None else np.arange(start, dtype=dtype))


def get_array_module(*args):
    """gpusim.cupy when any argument is a gpusim.cupy array, else numpy (CuPy's rule)."""
    import gpusim.cupy                       # the package itself, which imports this module
    return gpusim.cupy if any(isinstance(a, ndarray) for a in args) else np


def wrap(value):
    """A numpy function's result as CuPy gives it: arrays as gpusim.cupy arrays, numpy
    scalars as 0-d arrays; tuples and lists element by element."""
    if isinstance(value, ndarray):
        return value
    if isinstance(value, np.ndarray):
        return value.view(ndarray) if value.dtype.kind in _SUPPORTED_KINDS else value
    if isinstance(value, np.generic) and value.dtype.kind in _SUPPORTED_KINDS:
        return np.asarray(value).view(ndarray)
    if isinstance(value, (tuple, list)) and any(isinstance(v, np.ndarray) for v in value):
        items = [wrap(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value
