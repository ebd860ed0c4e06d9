"""Numba types of launch arguments, as `numba.cuda` would infer them at a launch.

A value is typed with `numba.cuda.typing.typeof(value, Purpose.argument)`, as
`CUDADispatcher.typeof_pyval` does: a numpy array becomes `Array(dtype, ndim,
layout)` with layout 'C', 'F' or 'A' (any other view, which then reads its strides);
a Python int becomes int64, a float float64, a bool boolean; numpy scalars keep their
dtype. A gpusim `DeviceArray` (anything with a `_gpusim_host_` array) types like its
host array. Only what Numba's launcher can pass is accepted (`_prepare_args` in
numba_cuda/numba/cuda/dispatcher.py): arrays of non-object dtype, integers, floats,
booleans, complex numbers, datetimes, records, enum members, and tuples of these.

With explicit signatures (`cuda.jit("void(float32[:], int32)")`) the first
signature the arguments fit is used, as Numba's dispatcher does after
`disable_compile()`: arrays must match dtype, ndim, layout (or the signature says
'A') and writability; scalars are converted to the signature's type.
"""
from __future__ import annotations

import functools
import inspect
import re
from typing import Any, Callable

import numpy as np
from numba.core import types as nbt
from numba.core.errors import NumbaError
from numba.core.typing.templates import Signature
from numba.cuda.core import sigutils
from numba.cuda.core.errors import NumbaValueError
from numba.cuda.descriptor import cuda_target
from numba.cuda.typing.typeof import Purpose, typeof

from gpusim.errors import LaunchError, UnsupportedKernel
from gpusim.frontend.numba_errors import like


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def host_value(value: Any) -> Any:
    """The host array behind a drop-in DeviceArray, or the value itself."""
    host = getattr(value, "_gpusim_host_", None)
    return value if host is None else host


@functools.lru_cache(maxsize=1024)
def param_names(pyfunc: Callable) -> tuple[str, ...] | None:
    """Positional parameter names of the kernel, or None if it takes *args."""
    names: list[str] = []
    for p in inspect.signature(pyfunc).parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            return None
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    return tuple(names)


def describe_arg(pyfunc: Callable, index: int) -> str:
    """'argument 2 (x)' for error messages."""
    names = param_names(pyfunc) or []
    return f"argument {index} ({names[index]})" if index < len(names) else f"argument {index}"


def check_count(name: str, pyfunc: Callable, args: tuple) -> None:
    names = param_names(pyfunc)
    if names is not None and len(names) != len(args):
        raise LaunchError(f"kernel {name} takes {len(names)} argument{'s' if len(names) != 1 else ''} "
                          f"({', '.join(names)}) but the launch passed {len(args)}")


def unpassable(ty: nbt.Type) -> str | None:
    """Why Numba's launcher cannot pass a value of type `ty`, or None if it can."""
    if isinstance(ty, nbt.Array):
        if ty.dtype == nbt.pyobject:
            return "object arrays cannot be passed to a kernel; use a numeric or structured dtype"
        return None
    if isinstance(ty, (nbt.Boolean, nbt.Integer, nbt.Float, nbt.Complex, nbt.NPDatetime, nbt.NPTimedelta, nbt.Record)):
        return None
    if isinstance(ty, nbt.EnumMember):
        return unpassable(ty.dtype)
    if isinstance(ty, nbt.BaseTuple):
        for t in ty:
            why = unpassable(t)
            if why:
                return why
        return None
    if isinstance(ty, (nbt.List, nbt.ListType)):
        return "a Python list cannot be passed to a kernel; pass a numpy array (np.asarray(...))"
    return (f"Numba cannot pass a value of type {ty} to a kernel "
            "(only arrays, numbers, booleans, complex numbers, records and tuples of them)")


def typeof_arg(value: Any) -> nbt.Type:
    return typeof(host_value(value), Purpose.argument)


def typeof_args(name: str, pyfunc: Callable, args: tuple) -> tuple[nbt.Type, ...]:
    """Numba types of `args`, or UnsupportedKernel naming the argument that cannot be passed."""
    check_count(name, pyfunc, args)
    out = []
    for i, a in enumerate(args):
        swapped = byte_swapped(a)
        if swapped is not None:
            raise like(UnsupportedKernel(f"kernel {name}: {describe_arg(pyfunc, i)}: {swapped}"),
                       NumbaValueError(f"Unsupported array dtype: {np.asarray(host_value(a)).dtype.str}"))
        try:
            ty = typeof_arg(a)
            why = unpassable(ty)
        except (ValueError, TypeError, NumbaError) as e:
            ty, why = None, f"Numba cannot type it ({_ANSI.sub('', str(e)).splitlines()[0] if str(e) else type(e).__name__})"
        if why:
            raise UnsupportedKernel(f"kernel {name}: {describe_arg(pyfunc, i)} of type {type(host_value(a)).__name__}"
                                    f"{f' (Numba type {ty})' if ty is not None else ''}: {why}")
        out.append(ty)
    return tuple(out)


def byte_swapped(value: Any) -> str | None:
    """Why an array in non-native byte order cannot be passed (Numba's typeof refuses it:
    "Unsupported array dtype: >f4"), or None."""
    host = host_value(value)
    if not isinstance(host, np.ndarray):
        return None
    dt = host.dtype
    fields = [dt] if dt.fields is None else [f[0] for f in dt.fields.values()]
    if all(f.isnative or f.byteorder in "=|" for f in fields):
        return None
    return (f"an array of non-native byte order (dtype {dt.str}, big-endian), which Numba cannot pass to a "
            f"kernel; convert it first, e.g. a.astype(a.dtype.newbyteorder('='))")


def _fits(want: nbt.Type, have: nbt.Type) -> bool:
    if isinstance(want, nbt.Array) or isinstance(have, nbt.Array):
        if not (isinstance(want, nbt.Array) and isinstance(have, nbt.Array)):
            return False
        return (want.dtype == have.dtype and want.ndim == have.ndim
                and (want.layout == "A" or want.layout == have.layout)
                and (have.mutable or not want.mutable))
    if isinstance(want, nbt.BaseTuple) or isinstance(have, nbt.BaseTuple):
        return (isinstance(want, nbt.BaseTuple) and isinstance(have, nbt.BaseTuple)
                and len(want) == len(have) and all(_fits(w, h) for w, h in zip(want, have)))
    if isinstance(want, nbt.Record) or isinstance(have, nbt.Record):
        return want == have
    numeric = (nbt.Boolean, nbt.Integer, nbt.Float, nbt.Complex)
    if isinstance(want, numeric) and isinstance(have, numeric):
        return not (isinstance(have, nbt.Complex) and not isinstance(want, nbt.Complex))
    return want == have


def select_signature(name: str, signatures: list, have: tuple[nbt.Type, ...], key=None) -> tuple[nbt.Type, ...]:
    """The argument types of the explicit signature Numba's dispatcher picks for the actual
    types: the best-rated conversion (exact < promote < safe < unsafe), TypeError when two
    signatures rate the same (ambiguous), UnsupportedKernel (also a TypeError) when none fits.
    Arrays convert only to the same dtype and ndim (layout C/F -> A, mutable -> readonly).
    `key` (the kernel's Python function) names the kernel in Numba's ambiguity message."""
    cases = []
    for sig in signatures:
        want, _ = sigutils.normalize_signature(sig)
        cases.append(Signature(nbt.void, tuple(want), None))
    tried = "; ".join(f"({', '.join(map(str, c.args))})" for c in cases)
    fits = [c for c in cases if len(c.args) == len(have) and all(_fits(w, h) for w, h in zip(c.args, have))]
    if fits:
        typingctx = cuda_target.typing_context
        try:
            best = typingctx.resolve_overload(key if key is not None else name, fits, have, {},
                                              allow_ambiguous=False)
        except TypeError as e:
            raise TypeError(f"kernel {name}: ambiguous overloading for argument types "
                            f"({', '.join(map(str, have))}): {e}") from None
        if best is not None:
            return tuple(best.args)
    raise like(UnsupportedKernel(f"kernel {name}: No matching definition for argument type(s) "
                                 f"{', '.join(map(str, have))}; declared: {tried}"), TypeError)
