"""Kernel arguments -> the raw bytes of the PTX entry's `.param`s, following Numba's ABI.

Numba flattens every argument into scalar parameters (numba_cuda/numba/cuda/
dispatcher.py `_prepare_args`, checked against `compile_ptx` output for cc 9.0):

| argument (Numba type)       | parameters, in order                                         |
|-----------------------------|--------------------------------------------------------------|
| array, ndim n               | 5 + 2n `.u64`: meminfo=0, parent=0, nitems, itemsize, data (device address), shape[n], strides[n] (bytes) |
| int8/uint8, boolean         | `.u8` (boolean as 0/1)                                       |
| int16/uint16, float16       | `.u16` (float16 as its bits)                                 |
| int32/uint32, float32       | `.u32` / `.f32`                                              |
| int64/uint64, float64       | `.u64` / `.f64`; datetime64/timedelta64 as int64            |
| complex64 / complex128      | two `.f32` / two `.f64`: real, imag                          |
| record (structured scalar)  | one `.u64`: device address of a copy of its bytes            |
| tuple, enum member          | its elements / its value, flattened recursively             |

Arrays: a C- or F-contiguous array is copied to the device in memory order and the
kernel gets its own strides; any other view is first copied to a C-contiguous
buffer, whose strides the kernel gets (its Numba layout is 'A', so it reads them).
After the launch, `Marshalled.copy_back(mem)` copies every writable array back (a
view through a C-ordered temporary) and every record field by field. `copyback`
lists the (host array or view, device address) pairs; a view's device bytes are in
C order. A read-only array is not copied back. A drop-in `DeviceArray` is marshalled
from its host copy, which is updated in place; the same DeviceArray passed twice
shares one allocation, as device memory would. Integers are truncated to the
parameter's width as ctypes does; floats round to the parameter's precision.
`Marshalled.arrays[i]` lists the arrays of argument i (several for a tuple) as (device
address, bytes): how the timing model knows the address range of an array that
`gpusim.launch(peer_args=...)` places on a peer GPU.

A `CPointer` parameter takes a raw address (an integer or `c_void_p`), 8 bytes; when it
points into a drop-in device array, that array is mapped at its address for the launch
(`captured.py`). Does not model: `None` arguments (Numba's launcher refuses them too).
"""
from __future__ import annotations

import ctypes
import operator
import os
from typing import Any

import numpy as np
from numba.core import types as nbt
from numba.np.numpy_support import as_dtype

from gpusim.errors import GpusimError, LaunchError, UnsupportedKernel
from gpusim.frontend.argtypes import describe_arg, host_value, param_names
from gpusim.frontend.captured import byte_bounds, byte_range, host_bytes, merged, pointer_range
from gpusim.frontend.numba_errors import like
from gpusim.frontend.source import Marshalled


def _int_bytes(value: Any, bits: int, what: str) -> bytes:
    try:
        n = operator.index(value)
    except TypeError:
        raise like(UnsupportedKernel(f"{what}: expected an integer, got {value!r}"), TypeError) from None
    return (n & ((1 << bits) - 1)).to_bytes(bits // 8, "little")


def _float_bytes(value: Any, dtype: type) -> bytes:
    with np.errstate(over="ignore"):
        return np.asarray(value, dtype=np.float64 if isinstance(value, (bool, int)) else None).astype(dtype).tobytes()


def _strides(a: np.ndarray) -> tuple[int, ...]:
    """The array's byte strides; numpy reports 0 for every axis of a zero-size array, where
    Numba's `strides_from_shape` would give the contiguous ones, so those are used."""
    if a.size:
        return a.strides
    dims = a.shape[::-1] if a.flags.c_contiguous else a.shape
    out, step = [], a.itemsize
    for d in dims:
        out.append(step)
        step *= max(d, 1)
    return tuple(out[::-1]) if a.flags.c_contiguous else tuple(out)


def check_dtype(ty: nbt.Array, arr: np.ndarray, what: str) -> None:
    """LaunchError (also a TypeError) when `arr`'s elements are not of the declared type: an
    explicit signature `void(float32[:])` given float64 data. numba-cuda's specialized
    dispatcher (one signature) passes such an array unconverted, with its own itemsize and
    strides, so the kernel reads and writes float32 values in float64 slots (1.0 written
    reads back 5.26e-315); gpusim refuses it, as Numba refuses it for a list of signatures.
    Integers of the same width and other signedness pass (the kernel sees the same bits as
    the other type, as a view would show them)."""
    try:
        want = as_dtype(ty.dtype)
    except NotImplementedError:                        # a type numpy has no dtype for: nothing to compare
        return
    have = arr.dtype
    if have == want or (have.kind in "iu" and want.kind in "iu" and have.itemsize == want.itemsize
                        and have.isnative):
        return
    raise like(LaunchError(f"{what} is an array of {have} but the kernel's signature declares {ty}: its "
                           f"{have.itemsize}-byte elements would be read as {want} (Numba passes such an array "
                           f"unconverted); convert it (a.astype(np.{want})) or declare {have}"), TypeError)


class _Marshaller:
    def __init__(self, name: str, mem) -> None:
        self.name, self.mem = name, mem
        self.chunks: list[bytes] = []
        self.out = Marshalled({}, [])
        self._device_arrays: dict[int, tuple[int, np.ndarray]] = {}   # id(host) -> (address, host)
        self.arrays: list[tuple[int, int]] = []      # the current argument's arrays: (address, nbytes)
        self.pointer_ranges: list = []                # captured.Range of raw pointer arguments

    def arg(self, ty: nbt.Type, value: Any, what: str, label: str) -> None:
        if isinstance(ty, nbt.Array):
            self.array(ty, value, what, label)
        elif isinstance(ty, nbt.Boolean):
            self.chunks.append(b"\x01" if value else b"\x00")
        elif isinstance(ty, nbt.Integer):
            self.chunks.append(_int_bytes(value, ty.bitwidth, what))
        elif isinstance(ty, nbt.Float):
            self.chunks.append(_float_bytes(value, np.dtype(str(ty))))
        elif isinstance(ty, nbt.Complex):
            c, part = complex(value), np.dtype(str(ty.underlying_float))
            self.chunks += [_float_bytes(c.real, part), _float_bytes(c.imag, part)]
        elif isinstance(ty, (nbt.NPDatetime, nbt.NPTimedelta)):
            self.chunks.append(np.asarray(value).view(np.int64).tobytes())
        elif isinstance(ty, nbt.EnumMember):
            self.arg(ty.dtype, value.value, what, label)
        elif isinstance(ty, nbt.BaseTuple):
            if len(value) != len(ty):
                raise UnsupportedKernel(f"{what}: tuple of {len(value)} elements for type {ty}")
            for i, (t, v) in enumerate(zip(ty, value)):
                self.arg(t, v, f"{what}[{i}]", f"{label}[{i}]")
        elif isinstance(ty, nbt.Record):
            self.record(value, label)
        elif isinstance(ty, nbt.CPointer):
            self.pointer(value, what)
        else:
            raise UnsupportedKernel(f"{what}: Numba cannot pass a value of type {ty} to a kernel")

    def array(self, ty: nbt.Array, value: Any, what: str, label: str) -> None:
        host = host_value(value)
        shared = host is not value                       # a drop-in DeviceArray: one allocation per object
        arr = np.asarray(host)
        if arr.dtype.hasobject:
            raise UnsupportedKernel(f"{what}: object arrays cannot be passed to a kernel")
        if arr.ndim != ty.ndim:
            raise UnsupportedKernel(f"{what}: array has {arr.ndim} dimensions, the kernel was compiled for {ty}")
        check_dtype(ty, arr, what)
        if shared and id(host) in self._device_arrays:
            addr, buf = self._device_arrays[id(host)]
        else:
            if arr.size * arr.itemsize > physical_memory():      # a copy would thrash or be killed, not fail
                raise MemoryError
            buf = arr if (arr.flags.c_contiguous or arr.flags.f_contiguous) else np.ascontiguousarray(arr)
            if ty.layout == "C" and not buf.flags.c_contiguous or ty.layout == "F" and not buf.flags.f_contiguous:
                raise UnsupportedKernel(f"{what}: the kernel was compiled for a {ty.layout}-contiguous array")
            addr = self.mem.alloc_array(buf, label)
            if arr.flags.writeable and ty.mutable:
                self.out.copyback.append((arr, addr))
            if shared:
                self._device_arrays[id(host)] = (addr, buf)
        self.arrays.append((addr, buf.nbytes))
        u64 = lambda v: int(v).to_bytes(8, "little", signed=int(v) < 0)   # noqa: E731
        self.chunks += [u64(0), u64(0), u64(buf.size), u64(buf.itemsize), u64(addr)]
        self.chunks += [u64(s) for s in buf.shape] + [u64(s) for s in _strides(buf)]

    def pointer(self, value: Any, what: str) -> None:
        """A raw device pointer (an integer or `c_void_p`), as Numba passes it; the drop-in
        array it points into is mapped at that address (`captured.pointer_range`)."""

        raw = value.value if isinstance(value, ctypes.c_void_p) else value
        try:
            addr = operator.index(raw or 0)
        except TypeError:
            raise UnsupportedKernel(f"{what}: a pointer parameter takes an integer address, got {value!r}") from None
        r = pointer_range(addr) if addr else None
        if r is not None:
            self.pointer_ranges.append(r)
        self.chunks.append((addr % (1 << 64)).to_bytes(8, "little"))

    def captured(self, captured: tuple) -> None:
        """Map the device arrays the kernel captured (`captured.py`) and those raw pointer
        arguments point into, into global memory: onto an argument's allocation holding the
        same bytes, or onto a copy written back after."""
        ranges = merged([r for r in (byte_range(n, obj) for n, obj in captured) if r is not None]
                        + self.pointer_ranges)
        for r in ranges:
            target = None
            for addr, buf in self._device_arrays.values():
                if buf.size and (buf.flags.c_contiguous or buf.flags.f_contiguous):
                    lo, hi = byte_bounds(buf)
                    if lo <= r.lo and r.hi <= hi:
                        target = addr + (r.lo - lo)
                        break
            if target is None:
                raw = host_bytes(r)
                target = self.mem.alloc_array(raw, f"{self.name}.{r.name} (captured)")
                if r.writable:
                    self.out.copyback.append((raw, target))
                self.out.keep.append(r.host)
            self.mem.global_heap.map_alias(r.lo, r.hi - r.lo, target)

    def record(self, value: Any, label: str) -> None:
        buf = np.array(value).reshape(1)
        addr = self.mem.alloc_array(buf, label)
        self.chunks.append(addr.to_bytes(8, "little"))
        if isinstance(value, np.void) and value.flags.writeable:     # a view into its array: write it back
            self.out.copyback.append((buf, addr))
            self.out.records.append((buf, value))


def _size_text(value: Any) -> str:
    """'its 8,589,934,592 float32 elements (32 GiB as a dense copy) are' for a too large argument."""
    host = host_value(value)
    if isinstance(host, np.ndarray):
        return (f"its {host.size:,} {host.dtype} elements ({gib(host.size * host.dtype.itemsize)} as a dense copy) "
                f"are")
    return "it is"


def physical_memory() -> float:
    """This machine's memory in bytes (inf where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return float("inf")


def gib(nbytes: int) -> str:
    """A byte count as a person reads it: '32 GiB', '8 TiB', '512 MiB'."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):,.3g} {unit}"
    return f"{nbytes} B"


def marshal(compiled, args, mem) -> Marshalled:
    """Allocate `args` in `mem` and build the `.param` bytes of `compiled`'s entry (see module doc)."""
    name, pyfunc, argtypes = compiled.name, compiled.pyfunc, compiled.argtypes
    args = tuple(args)
    if len(args) != len(argtypes):
        names = param_names(pyfunc)
        listed = f" ({', '.join(names)})" if names else ""
        raise LaunchError(f"kernel {name} takes {len(argtypes)} argument{'s' if len(argtypes) != 1 else ''}"
                          f"{listed} but the launch passed {len(args)}")
    m = _Marshaller(name, mem)
    names = param_names(pyfunc) or []
    for i, (ty, value) in enumerate(zip(argtypes, args)):
        label = f"{name}.{names[i]}" if i < len(names) else f"{name}.arg{i}"
        m.arrays = []
        what = f"kernel {name}: {describe_arg(pyfunc, i)}"
        try:
            m.arg(ty, value, what, label)
        except MemoryError:
            raise LaunchError(f"{what}: {_size_text(value)} more than this machine can allocate to simulate the "
                              "launch (the simulator keeps a dense copy of every argument in its device memory)") \
                from None
        m.out.arrays.append(m.arrays)
    m.captured(getattr(compiled, "captured", ()))
    decls = compiled.kernel.params
    if len(decls) != len(m.chunks):
        raise GpusimError(f"kernel {name}: built {len(m.chunks)} parameter values for the {len(decls)} `.param`s of "
                          f"{compiled.entry} (argument types {argtypes}); the Numba ABI assumed by "
                          "gpusim.frontend.args does not match this Numba version")
    for decl, chunk in zip(decls, m.chunks):
        if decl.size_bytes != len(chunk):
            raise GpusimError(f"kernel {name}: parameter {decl.name} is .{decl.type} ({decl.size_bytes} bytes) "
                              f"but the Numba ABI gave {len(chunk)} bytes")
        m.out.params[decl.name] = chunk
    return m.out
