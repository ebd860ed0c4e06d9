"""Launch arguments -> `.param` bytes for a kernel in PTX or CUDA C++, as `cuLaunchKernel` passes
them: one value per `.param` of the `.entry`, in order, no flattening.

| `.param`                      | accepted value                                                        |
|-------------------------------|-----------------------------------------------------------------------|
| `.u64` / `.s64` / `.b64`      | a numpy array: its device address (a pointer); or an 8-byte numpy integer, or a Python int in range |
| `.u32` `.s32` `.b32`, `.u16` ..., `.u8` ... | a numpy integer of that width (either signedness: PTX keeps no C++ signedness), a Python int in range; `.u8`/`.b8` also `np.bool_`/bool |
| `.f32` / `.f64`               | `np.float32` / `np.float64`, or a Python float (rounded to the parameter, as a C++ call converts) |
| `.f16` / `.b16` as a half     | `np.float16` (2 bytes)                                                 |
| `.b8 name[N]` (a struct by value) | a numpy scalar, structured scalar (`np.void`) or `bytes` of exactly N bytes |
| `.align 64 .b8 name[128]` (`__grid_constant__ const CUtensorMap`) | a `gpusim.TensorMap` (its array is allocated as a pointer's would be) |
| `.u64` for a `const CUtensorMap*`  | a `gpusim.TensorMap`: its 128 bytes placed in global memory, 64-byte aligned |

Any other value (a float64 for an `int`, an int64 for a `.u32`, an array for a 32-bit
parameter) is refused with a `LaunchError` naming the kernel, parameter and value: the
driver would read the wrong bytes, silently.

Arrays are copied to the simulated device (a non-contiguous view through a C-contiguous
copy) and every writable one is copied back after the launch. The same array object
passed twice is one allocation, so the kernel sees one pointer (in-place kernels).
A drop-in `DeviceArray` passes its host array, updated in place.

A `DeviceView` is a pointer into a larger allocation, as a CUDA pointer to an array's first
element is (`gpusim.cupy`: a view `x[8:]` passes `x.data.ptr + 8 * itemsize`): its whole
`buffer` is allocated once per launch (every view of one buffer points into the same
allocation) and copied back whole; the pointer is the allocation's address plus
`offset_bytes`. Its `dtype` is checked against the C++ pointee as an array's is.
"""
from __future__ import annotations

import numbers
import sys
from functools import lru_cache
from dataclasses import dataclass

import numpy as np

from gpusim.errors import LaunchError
from gpusim.frontend.argtypes import host_value
from gpusim.frontend.tensormap import TensorMap
from isa.semantics import tensor_map as T
from gpusim.frontend.source import CompiledKernel, Marshalled

_INT_TYPES = {"u", "s", "b"}
# C++ element types a pointer parameter may name -> (numpy kind class, bytes): an array of another
# element type would be read as this one, so it is refused (template parameters are not checked)
_POINTEE = {"float": ("f", 4), "double": ("f", 8), "__half": ("f", 2), "half": ("f", 2), "int": ("i", 4),
            "unsigned": ("i", 4), "unsigned int": ("i", 4), "int32_t": ("i", 4), "uint32_t": ("i", 4),
            "long long": ("i", 8), "unsigned long long": ("i", 8), "int64_t": ("i", 8), "uint64_t": ("i", 8),
            "size_t": ("i", 8), "short": ("i", 2), "unsigned short": ("i", 2), "int16_t": ("i", 2),
            "uint16_t": ("i", 2), "char": ("i", 1), "signed char": ("i", 1), "unsigned char": ("i", 1),
            "int8_t": ("i", 1), "uint8_t": ("i", 1), "bool": ("b", 1)}


@dataclass(frozen=True, eq=False)
class DeviceView:
    """A pointer argument into an allocation (module doc): `buffer` stands for the whole
    allocation (a C- or F-contiguous array), the pointer is `offset_bytes` into it, and
    points at elements of `dtype` (a view of `shape`, for messages)."""
    buffer: np.ndarray
    offset_bytes: int
    dtype: np.dtype
    shape: tuple


@lru_cache(maxsize=1024)
def _pointee(ctype: str) -> tuple[str, int] | None:
    """(kind class, bytes) of the element a C++ pointer type text names ('const float* (.u64)')."""
    text = ctype.split("(")[0]
    if text.count("*") != 1:
        return None
    words = [w for w in text.replace("*", " ").split() if w not in ("const", "volatile", "__restrict__", "restrict")]
    return _POINTEE.get(" ".join(words).replace("std::", ""))


_LITTLE = ("<", "|") if sys.byteorder == "big" else ("<", "=", "|")   # numpy byte orders that are little-endian here


def _type(decl) -> tuple[str, int]:
    """(kind letter 'u'/'s'/'b'/'f', element bytes) of a `.param` declaration."""
    return decl.type[0], decl.size_bytes


def _refuse(ck: CompiledKernel, i: int, decl, value, want: str) -> LaunchError:
    shown = f"{type(value).__module__}.{type(value).__name__}" if isinstance(value, np.generic) else \
        type(value).__name__
    if isinstance(value, (np.ndarray, DeviceView)):
        what = f"a {value.dtype} array of shape {value.shape}"
    else:
        what = f"{shown} {value!r:.40}"
    kind = ck.params[i].type if i < len(ck.params) else f".{decl.type}"
    return LaunchError(f"kernel {ck.name}: {ck.describe_arg(i)}, of type {kind}, got {what}: pass {want}")


def _integer(ck, i, decl, value, nbytes: int) -> bytes:
    bits = 8 * nbytes
    want = lambda: f"np.uint{bits} or np.int{bits}" + (" (or a numpy array for a pointer)" if nbytes == 8 else "")  # noqa: E731
    if isinstance(value, (bool, np.bool_)):
        if nbytes != 1:
            raise _refuse(ck, i, decl, value, want())
        return b"\x01" if value else b"\x00"
    if isinstance(value, np.integer):
        dt = value.dtype
        if dt.itemsize != nbytes:
            raise _refuse(ck, i, decl, value, want())
        return value.tobytes() if dt.byteorder in _LITTLE else value.astype(dt.newbyteorder("<")).tobytes()
    if isinstance(value, numbers.Integral):
        n = int(value)
        if not -(1 << (bits - 1)) <= n < (1 << bits):
            raise _refuse(ck, i, decl, value, f"a value that fits {bits} bits")
        return (n % (1 << bits)).to_bytes(nbytes, "little")
    raise _refuse(ck, i, decl, value, want())


def _float(ck, i, decl, value, nbytes: int) -> bytes:
    dtype = {2: np.float16, 4: np.float32, 8: np.float64}[nbytes]
    want = f"np.{np.dtype(dtype).name}"
    if isinstance(value, np.floating):
        if value.dtype.itemsize != nbytes:
            raise _refuse(ck, i, decl, value, want)
        return value.astype(np.dtype(dtype).newbyteorder("<")).tobytes()
    if isinstance(value, (float, int)) and not isinstance(value, bool) and nbytes > 2:
        with np.errstate(over="ignore"):
            return np.asarray(float(value), np.float64).astype(dtype).tobytes()
    raise _refuse(ck, i, decl, value, want)


def _bytes(ck, i, decl, value) -> bytes:
    """A `.b8 name[N]` parameter (a struct or a half passed by value): exactly N bytes."""
    n = decl.size_bytes
    if isinstance(value, (bytes, bytearray)) and len(value) == n:
        return bytes(value)
    if isinstance(value, np.generic) and value.dtype.itemsize == n:
        return value.tobytes()
    raise _refuse(ck, i, decl, value, f"a numpy scalar or structured scalar (np.void) of {n} bytes")


class _RawMarshaller:
    def __init__(self, ck: CompiledKernel, memory) -> None:
        self.ck, self.mem = ck, memory
        self.out = Marshalled({}, [])
        self._arrays: dict[int, tuple[int, int]] = {}        # id(host array) -> (address, bytes)

    def _check_elements(self, i: int, decl, arr, check_type: bool = True) -> None:
        """Refuse an array whose element type the C++ pointer parameter would misread."""
        if arr.dtype.hasobject:
            raise _refuse(self.ck, i, decl, arr, "an array of a numeric or structured dtype")
        want = _pointee(self.ck.params[i].type) if i < len(self.ck.params) and check_type else None
        if want is not None and arr.dtype.kind in "biuf" and (arr.dtype.itemsize != want[1]
                                                               or (arr.dtype.kind == "f") != (want[0] == "f")):
            elem = self.ck.params[i].type.split(" (")[0]
            raise _refuse(self.ck, i, decl, arr, f"an array whose elements are {elem.replace('*', '').strip()} "
                          f"({want[1]} bytes{', floating point' if want[0] == 'f' else ''})")

    def view_pointer(self, i: int, decl, view: DeviceView) -> bytes:
        """A pointer `view.offset_bytes` into `view.buffer`'s allocation (module doc)."""
        self._check_elements(i, decl, view)
        buf = view.buffer
        if id(buf) in self._arrays:
            addr, nbytes = self._arrays[id(buf)]
        else:
            addr = self.mem.alloc_array(buf, f"{self.ck.name}.{self.ck.params[i].name}")
            nbytes = buf.nbytes
            if buf.flags.writeable:
                self.out.copyback.append((buf, addr))
            self._arrays[id(buf)] = (addr, nbytes)
        self.out.arrays[-1].append((addr, nbytes))
        return int(addr + view.offset_bytes).to_bytes(8, "little")

    def pointer(self, i: int, decl, arr: np.ndarray, check_type: bool = True) -> bytes:
        self._check_elements(i, decl, arr, check_type)
        if id(arr) in self._arrays:                          # the same array again: the same allocation
            addr, nbytes = self._arrays[id(arr)]
        else:
            buf = arr if (arr.flags.c_contiguous or arr.flags.f_contiguous) else np.ascontiguousarray(arr)
            addr = self.mem.alloc_array(buf, f"{self.ck.name}.{self.ck.params[i].name}")
            nbytes = buf.nbytes
            if arr.flags.writeable:
                self.out.copyback.append((arr, addr))
            self._arrays[id(arr)] = (addr, nbytes)
        self.out.arrays[-1].append((addr, nbytes))
        return int(addr).to_bytes(8, "little")

    def tensor_map(self, i: int, decl, tm: TensorMap) -> bytes:
        """The 128 bytes of tensor map `tm` with its array allocated (module doc); for a pointer
        parameter, the address of those bytes in global memory."""
        addr = int.from_bytes(self.pointer(i, decl, tm.root, check_type=False), "little") + tm.offset
        raw = T.encode(tm.fields(addr))
        if decl.dims:
            if decl.size_bytes != T.MAP_BYTES:
                raise _refuse(self.ck, i, decl, tm, "a TensorMap only for a 128-byte CUtensorMap parameter")
            return raw
        where = self.mem.global_heap.alloc(T.MAP_BYTES, f"{self.ck.name}.{self.ck.params[i].name}.tensormap",
                                           init=np.frombuffer(raw, np.uint8), align=64)
        return int(where).to_bytes(8, "little")

    def value(self, i: int, decl, value) -> bytes:
        value = host_value(value)
        kind, nbytes = _type(decl)
        if isinstance(value, TensorMap) and (decl.dims or (nbytes == 8 and kind in _INT_TYPES)):
            return self.tensor_map(i, decl, value)
        if isinstance(value, DeviceView):
            if decl.dims or nbytes != 8 or kind not in _INT_TYPES:
                raise _refuse(self.ck, i, decl, value, "a numpy scalar of the parameter's type (arrays pass as "
                                                       "64-bit pointers)")
            return self.view_pointer(i, decl, value)
        if decl.dims:
            return _bytes(self.ck, i, decl, value)
        if isinstance(value, np.ndarray):
            if nbytes != 8 or kind not in _INT_TYPES:
                raise _refuse(self.ck, i, decl, value, "a numpy scalar of the parameter's type (arrays pass as "
                                                       "64-bit pointers)")
            return self.pointer(i, decl, value)
        if kind == "f":
            return _float(self.ck, i, decl, value, nbytes)
        if kind in _INT_TYPES:
            if kind == "b" and nbytes == 2 and isinstance(value, np.float16):     # a half passed as .b16
                return value.tobytes()
            return _integer(self.ck, i, decl, value, nbytes)
        raise LaunchError(f"kernel {self.ck.name}: {self.ck.describe_arg(i)} is a .{decl.type} parameter, which "
                          "gpusim cannot pass a value to")


def marshal_raw(ck: CompiledKernel, args: tuple, memory) -> Marshalled:
    """Allocate the arrays of `args` in `memory` and build the entry's `.param` bytes (module doc)."""
    decls = ck.kernel.params
    if len(args) != len(decls):
        listed = ", ".join(f"{p.name}: {p.type}" for p in ck.params)
        raise LaunchError(f"kernel {ck.name} takes {len(decls)} argument{'s' if len(decls) != 1 else ''} "
                          f"({listed}) but the launch passed {len(args)}")
    m = _RawMarshaller(ck, memory)
    for i, (decl, value) in enumerate(zip(decls, args)):
        m.out.arrays.append([])
        chunk = m.value(i, decl, value)
        if len(chunk) != decl.size_bytes:         # pragma: no cover - every branch above builds the declared size
            raise LaunchError(f"kernel {ck.name}: {ck.describe_arg(i)} built {len(chunk)} bytes for "
                              f"{decl.size_bytes}")
        m.out.params[decl.name] = chunk
    return m.out
