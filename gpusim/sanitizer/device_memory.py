"""initcheck's bookkeeping of drop-in device memory: which bytes hold a written value.

`cuda.device_array` (and `device_array_like`, `DeviceNDArray`) returns memory that
nothing has written, as `cudaMalloc` does. Its `InitShadow` holds one flag per byte of
the allocation; every `DeviceArray` over that memory (the array itself, its slices,
`.view(dtype)`, reshapes, `split` pieces, transposes) holds the same shadow and finds
its own bytes through its data pointer and strides (`element_offsets`). The flags are
set by:
- a host write: `d[idx] = v` (the bytes of `d[idx]`), `copy_to_device` (all of the
  view; from another device array, that array's flags element by element);
- a launch, checked or not (`gpusim.sanitizer.checked`): the bytes the kernel stored
  to or atomically updated in the argument's allocation. An unchecked launch tracks
  only those stores (`initcheck.WriteTracker`), and only while one of its arguments
  still has unwritten bytes.
A copy (`DeviceArray.copy()`, a transposing copy) gets the flags of what it copied.

The shadow is dropped (`written` None) once every byte is written, so a fully written
array costs nothing more.

Does not model: device arrays a kernel reaches as captured globals or raw pointers
(counted as written), `copy_to_host` of unwritten bytes (compute-sanitizer's
initcheck reports those host API reads; gpusim does not), padding bytes of records.
"""
from __future__ import annotations

import numpy as np


class InitShadow:
    """Per byte of one allocation (host addresses `lo` .. `lo + nbytes`), whether it was written."""

    def __init__(self, lo: int, nbytes: int):
        self.lo = lo
        self.written: np.ndarray | None = np.zeros(nbytes, bool)

    def settle(self) -> None:
        if self.written is not None and self.written.all():
            self.written = None


def _pointer(h: np.ndarray) -> int:
    return h.__array_interface__["data"][0]


def extent(h: np.ndarray) -> tuple[int, int]:
    """The host address range an array's elements span."""
    lo = _pointer(h) + sum(min(0, (n - 1) * s) for n, s in zip(h.shape, h.strides))
    hi = _pointer(h) + sum(max(0, (n - 1) * s) for n, s in zip(h.shape, h.strides)) + h.itemsize
    return lo, hi if h.size else lo


def fresh(h: np.ndarray) -> InitShadow:
    """A shadow for newly allocated (unwritten) memory holding array `h`."""
    lo, hi = extent(h)
    return InitShadow(lo, hi - lo)


def element_offsets(h: np.ndarray, lo: int) -> np.ndarray:
    """Byte offset of each element of `h` from address `lo` (an array of `h`'s shape)."""
    off = np.full(h.shape, _pointer(h) - lo, np.int64)
    for d, (n, s) in enumerate(zip(h.shape, h.strides)):
        shape = [1] * h.ndim
        shape[d] = n
        off = off + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return off


def _bytes(elems: np.ndarray, itemsize: int) -> np.ndarray:
    e = elems.ravel()
    return (e[:, None] + np.arange(itemsize)).ravel() if itemsize > 1 else e


def device_bytes(h: np.ndarray, lo: int) -> np.ndarray:
    """The shadow byte of each byte of `h` as a launch lays it out (`frontend/args.py`): a
    contiguous array in memory order, any other view in C order."""
    if h.flags.c_contiguous or h.flags.f_contiguous:
        start = _pointer(h) - lo
        return np.arange(start, start + h.nbytes, dtype=np.int64)
    return _bytes(np.ascontiguousarray(element_offsets(h, lo)), h.itemsize)


def shadow_of(a) -> InitShadow | None:
    """The shadow of a drop-in device array with unwritten bytes, else None."""
    s = getattr(a, "_gpusim_init_", None)
    return s if s is not None and s.written is not None else None


def mark(a, idx=...) -> None:
    """A host write to `a[idx]`: its bytes hold values now."""
    s = shadow_of(a)
    if s is None:
        return
    h = a._gpusim_host_
    part = h[idx]
    if isinstance(part, np.ndarray) and part.size and np.shares_memory(part, h):
        sel = element_offsets(part, s.lo)             # basic indexing: a view, found by its pointer
    elif not isinstance(part, np.ndarray) and isinstance(idx, (int, np.integer, tuple)):
        sel = element_offsets(h[..., None][idx], s.lo) if h.ndim else element_offsets(h, s.lo)   # one element
    else:
        sel = element_offsets(h, s.lo)[idx]            # fancy indexing: a copy, so index the offsets
    s.written[_bytes(np.asarray(sel), h.itemsize)] = True
    s.settle()


def copy_flags(dst, src) -> None:
    """`dst` (same shape as `src`) now holds a copy of `src`'s elements: it takes their flags."""
    d, s = shadow_of(dst), getattr(src, "_gpusim_init_", None)
    if d is None:
        return
    hd = dst._gpusim_host_
    where = _bytes(element_offsets(hd, d.lo), hd.itemsize)
    if s is None or s.written is None:
        d.written[where] = True
    else:
        hs = src._gpusim_host_.reshape(hd.shape) if src._gpusim_host_.shape != hd.shape else src._gpusim_host_
        d.written[where] = s.written[_bytes(element_offsets(hs, s.lo), hs.itemsize)]
    d.settle()


def copied(src, host: np.ndarray):
    """The shadow for `host`, a new array holding a copy of device array `src` (same shape)."""
    s = shadow_of(src)
    if s is None:
        return None
    out = fresh(host)
    out.written[_bytes(element_offsets(host, out.lo), host.itemsize)] = \
        s.written[_bytes(element_offsets(src._gpusim_host_, s.lo), host.itemsize)]
    out.settle()
    return out if out.written is not None else None


def launch_state(a) -> np.ndarray | None:
    """Per byte of `a` as a launch lays it out, whether it holds a written value (None: all)."""
    s = shadow_of(a)
    if s is None:
        return None
    w = s.written[device_bytes(a._gpusim_host_, s.lo)]
    return None if w.all() else w


def launched(a, written: np.ndarray) -> None:
    """After a launch: `written` (per byte, as the launch laid `a` out) holds values now."""
    s = shadow_of(a)
    if s is None:
        return
    where = device_bytes(a._gpusim_host_, s.lo)
    s.written[where[written]] = True
    s.settle()
