"""Device arrays captured by a kernel as globals or closure variables.

numba-cuda lowers a referenced object that has `__cuda_array_interface__` (a device
array, or a foreign array wrapping one) by embedding its data pointer as a constant
(numba_cuda `np/arrayobj.py`, `_lower_constant_device_array`): the kernel reads and
writes that array's memory, it does not get a copy of its values. A drop-in
`DeviceArray`'s device pointer is the address of its host copy (`devicearray.py`), so
the PTX holds that host address, possibly plus a constant offset folded by LLVM.

At each launch, every captured array's byte range [lo, hi) (from its interface:
pointer, shape, strides, item size; overlapping ranges merged) is mapped into the
launch's global heap (`Heap.map_alias`): an access at address a in [lo, hi) goes to
heap address target + (a - lo). The target is
- the allocation of an argument of the same launch that holds those bytes (a drop-in
  DeviceArray passed and captured at once is one memory, as on a device), or
- a fresh allocation filled with the range's current bytes, copied back after the
  launch unless the interface marks it read-only.
So a captured array is read as it is at launch time (not frozen at compile time), and
writes to it are visible on the host afterwards, as numba-cuda's tests expect
(test_device_array_capture.py: `test_mutability`).

The same mapping serves raw pointers passed for `CPointer` kernel parameters
(`pointer_range`: the whole array the pointer points into).

A pointer is resolved only if it lies inside an array this process's drop-in handed
out as a device pointer (`__cuda_array_interface__`, `gpu_data.device_pointer`,
`device_ctypes_pointer`: the registry below, weakly held): memory gpusim
does not hold (a real GPU library's pointer) is not mapped, and an access to it is an
out-of-bounds error naming the address.

Does not model: a captured range that only partly overlaps an argument array (the two
are separate copies during the launch; the argument is copied back first).
"""
from __future__ import annotations

import ctypes
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.array_utils import byte_bounds

_EXPORTED: dict[int, weakref.ref] = {}          # data pointer -> host ndarray of a drop-in DeviceArray


def export(host: np.ndarray) -> int:
    """Record that `host`'s memory was handed out as a device pointer; its address."""
    ptr = int(host.__array_interface__["data"][0])
    if len(_EXPORTED) > 4096:
        for k in [k for k, r in _EXPORTED.items() if r() is None]:
            del _EXPORTED[k]
    try:
        _EXPORTED[ptr] = weakref.ref(host)
    except TypeError:                            # pragma: no cover - ndarrays take weak references
        pass
    return ptr


def interface_of(obj: Any) -> dict | None:
    """`obj.__cuda_array_interface__`, or None for anything that has none (numpy arrays
    are constants, not device memory)."""
    if isinstance(obj, np.ndarray) or isinstance(obj, type):
        return None
    try:
        cai = getattr(obj, "__cuda_array_interface__", None)
    except Exception:                            # a property that raises: not a device array
        return None
    return cai if isinstance(cai, dict) and "data" in cai else None


@dataclass(frozen=True)
class Range:
    """The bytes [lo, hi) a captured array spans, and whether the kernel may write them."""
    name: str
    lo: int
    hi: int
    writable: bool
    host: np.ndarray | None          # the live drop-in array holding the bytes (None: not gpusim memory)


def byte_range(name: str, obj: Any) -> Range | None:
    cai = interface_of(obj)
    if cai is None:
        return None
    shape = tuple(int(n) for n in cai.get("shape", ()))
    itemsize = np.dtype(cai["typestr"]).itemsize
    strides = cai.get("strides")
    if strides is None:
        strides, step = [], itemsize
        for n in reversed(shape):
            strides.insert(0, step)
            step *= max(n, 1)
    ptr, readonly = int(cai["data"][0]), bool(cai["data"][1])
    if any(n == 0 for n in shape) or ptr == 0:
        return None
    lo = ptr + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = ptr + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
    host = getattr(obj, "_gpusim_host_", None)
    if host is None or not _inside(host, lo, hi):
        host = _lookup(lo, hi)
    writable = not readonly and host is not None and bool(host.flags.writeable)
    return Range(name, lo, hi, writable, host)


def _inside(host: np.ndarray, lo: int, hi: int) -> bool:
    if host.size == 0:
        return False
    a, b = byte_bounds(host)
    return a <= lo and hi <= b


def _lookup(lo: int, hi: int) -> np.ndarray | None:
    ref = _EXPORTED.get(lo)
    h = ref() if ref is not None else None
    if h is not None and _inside(h, lo, hi):
        return h
    for ref in list(_EXPORTED.values()):
        h = ref()
        if h is not None and _inside(h, lo, hi):
            return h
    return None


def pointer_range(addr: int) -> Range | None:
    """The whole drop-in array a raw pointer (an integer or `c_void_p` passed for a `CPointer`
    parameter) points into, as a range to map; None when gpusim holds no such memory."""
    for ref in list(_EXPORTED.values()):
        h = ref()
        if h is not None and _inside(h, addr, addr + 1):
            lo, hi = byte_bounds(h)
            return Range(f"pointer {addr:#x}", lo, hi, bool(h.flags.writeable), h)
    return None


def merged(ranges: list[Range]) -> list[Range]:
    """Overlapping ranges joined (one mapping each); only ranges of gpusim's memory."""
    out: list[Range] = []
    for r in sorted((r for r in ranges if r.host is not None), key=lambda r: r.lo):
        if out and r.lo < out[-1].hi:
            p = out[-1]
            out[-1] = Range(f"{p.name}, {r.name}", p.lo, max(p.hi, r.hi), p.writable and r.writable, p.host)
        else:
            out.append(r)
    return out


def host_bytes(r: Range) -> np.ndarray:
    """The range's host bytes as a uint8 array (a view: writes go to the drop-in array).
    Valid while `r.host` (which contains the range) is alive."""
    n = r.hi - r.lo
    return np.ctypeslib.as_array((ctypes.c_ubyte * n).from_address(r.lo))
