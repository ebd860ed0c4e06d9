"""A CuPy kernel launch's arguments -> what `gpusim.frontend.rawargs` passes to the kernel.

CuPy hands the driver one pointer per argument (`cupy/cuda/function.pyx`, `_pointer`):
- a `cupy.ndarray`: its `data.ptr` (the address of its first element); here a
  `rawargs.DeviceView` into the array's whole allocation (`_array.py`), whose element type is
  checked against the C++ pointer's as `CudaSource` checks it;
- a `MemoryPointer`: its `ptr`; a Python int that is a live array's `.data.ptr` (or a point
  inside one) given for a pointer parameter: that pointer; 0 or None: a null pointer;
- a numpy array: by value when it holds one element (its numpy scalar), else refused (CuPy's
  TypeError: a host array is no device pointer);
- a numpy scalar: its bytes; checked against the parameter's type as `CudaSource` checks it
  (an np.int64 for an `int` is refused, where CuPy would pass its low 4 bytes);
- a Python scalar: CuPy makes it an np.int64 (int), np.float64 (float), np.bool_ (bool) or
  np.complex128 (complex), whose bytes the driver reads at the parameter's size. Accepted
  where that gives the kernel the value: an int for an integer parameter it fits (the low
  bytes of an int64 are the value), a float for a `double`, a bool for a `bool`. Refused
  where the kernel would read another number: an int or float for a `float` or `half`, an
  int for a `double`, a float for an integer.

Sources: CuPy 14 `cupy/cuda/function.pyx` (`_pointer`, `CNumpyArray`), `cupy/_core/_scalar.pyx`
(`CScalar`: Python int -> int64, float -> float64).
"""
from __future__ import annotations

import numbers

import numpy as np

from gpusim.cupy._array import MemoryPointer, device_view, ndarray, pointer_at
from gpusim.errors import LaunchError
from gpusim.frontend.rawargs import _INT_TYPES, _refuse


def _is_pointer(ck, i: int) -> bool | None:
    """Whether the C++ parameter is a pointer (None: the source's types are unknown)."""
    if i >= len(ck.params) or "(" not in ck.params[i].type:
        return None
    return "*" in ck.params[i].type.split("(")[0]


def convert(ck, args: tuple) -> tuple:
    """`args` as rawargs takes them (module doc)."""
    decls = ck.kernel.params
    return tuple(_one(ck, i, decls[i], a) if i < len(decls) else a for i, a in enumerate(args))


def _one(ck, i: int, decl, value):
    kind, nbytes = decl.type[0], decl.size_bytes
    is_ptr64 = nbytes == 8 and kind in _INT_TYPES and not decl.dims
    if isinstance(value, ndarray):
        return device_view(value)
    if isinstance(value, MemoryPointer):
        return value.device_view()
    if value is None:
        if not is_ptr64:
            raise _refuse(ck, i, decl, value, "a value of the parameter's type (None is a null pointer, 8 bytes)")
        return np.uint64(0)
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise LaunchError(f"kernel {ck.name}: {ck.describe_arg(i)} is a numpy.ndarray of shape {value.shape}: "
                              "only numpy arrays of size one pass by value; a pointer to __global__ memory needs a "
                              "gpusim.cupy array (cupy.asarray(x))")
        value = value.reshape(-1)[0]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Number, np.generic)):
        return value                                   # rawargs: bools, structs (bytes), refusals
    if isinstance(value, np.generic) or decl.dims:
        return value                                   # rawargs: numpy scalars checked; a struct takes its bytes
    if isinstance(value, numbers.Integral):
        return _python_int(ck, i, decl, int(value), is_ptr64)
    if isinstance(value, float):
        if kind == "f" and nbytes == 8:
            return value
        why = ("a float parameter would read its low 4 bytes as another number" if kind == "f" else
               "an integer parameter would read its bytes as another number")
        want = f"np.float{8 * nbytes}({value!r})" if kind == "f" else f"np.int{8 * nbytes}(...)"
        raise _refuse(ck, i, decl, value, f"{want} (CuPy passes a Python float as a float64, 8 bytes; {why})")
    if isinstance(value, complex):
        return np.complex128(value)
    return value


def _python_int(ck, i: int, decl, value: int, is_ptr64: bool):
    kind, nbytes = decl.type[0], decl.size_bytes
    if kind == "f":
        raise _refuse(ck, i, decl, value, f"np.float{8 * nbytes}({value}) (CuPy passes a Python int as an int64, "
                                          f"whose bytes a floating-point parameter would read as another number)")
    pointer = _is_pointer(ck, i)
    if is_ptr64 and pointer is not False and value != 0:
        found = pointer_at(value)
        if found is not None:
            return found.device_view()
        if pointer:
            raise _refuse(ck, i, decl, value, "a gpusim.cupy array, or the .data.ptr of a live one (this int is "
                                              "no address of a gpusim.cupy allocation)")
    return value                                       # rawargs: in range of the parameter's width, else refused
