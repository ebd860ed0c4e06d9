"""The drop-in's `cuda.jit`: the decorator that checks its options and returns a
`Dispatcher` (`_dispatcher.py`).

`jit` accepts what `numba.cuda.jit` accepts (`@jit`, `@jit(device=True)`, a signature
or a list of them, options). Explicit signatures are compiled when the decorator runs,
as Numba compiles them eagerly, so typing errors surface there, with Numba's exception
type (`numba_errors.py`). Options are checked as numba-cuda checks them at decoration
(deprecated keywords, `debug` with `opt` or `lineinfo`, `link` on a device function,
`shared_memory_carveout`).

Sources: numba-cuda 0.30 `decorators.py` (`jit`).
"""
from __future__ import annotations

import types as _pytypes
import warnings
from typing import Any

from numba.core import types as _nbt
from numba.cuda.core import config, sigutils
from numba.cuda.core.errors import DeprecationError, NumbaInvalidConfigWarning

from gpusim.cuda._dispatcher import Dispatcher


def _check_options(device: bool, options: dict) -> None:
    """numba-cuda's option checks at decoration: deprecated keywords, debug with opt or lineinfo
    (warnings), link on a device function."""
    for kw in ("argtypes", "restype", "bind"):
        if options.get(kw) is not None:
            raise DeprecationError(f"The {kw} argument to jit is deprecated, and will be removed in a future "
                                   "release. See https://numba.readthedocs.io/en/stable/reference/"
                                   "deprecation.html#deprecation-of-eager-compilation-of-cuda-device-functions")
    debug = config.CUDA_DEBUGINFO_DEFAULT if options.get("debug") is None else options["debug"]
    opt = (config.OPT != 0) if options.get("opt") is None else options["opt"]
    if debug and opt:
        warnings.warn(NumbaInvalidConfigWarning("debug=True with opt=True is not supported by CUDA. This may "
                                                "result in a crash - set debug=False or opt=False."))
    if debug and options.get("lineinfo"):
        warnings.warn(NumbaInvalidConfigWarning("debug and lineinfo are mutually exclusive. Use debug to get full "
                                                "debug info (this disables some optimizations), or lineinfo for "
                                                "line info only with code generation unaffected."))
    if device and options.get("link"):
        raise ValueError("link keyword invalid for device function")


def _check_carveout(carveout: Any) -> None:
    """numba-cuda's validation of `shared_memory_carveout`: -1..100 or MaxL1/MaxShared/default."""
    if isinstance(carveout, str):
        if carveout not in ("MaxL1", "MaxShared", "default"):
            raise ValueError(f"Invalid carveout value: {carveout}. Must be -1 to 100 or one of "
                             "['MaxL1', 'MaxShared', 'default']")
    elif not -1 <= carveout <= 100:
        raise ValueError("Carveout must be between -1 and 100")


def jit(func_or_sig: Any = None, device: bool = False, **options: Any) -> Any:
    """`numba.cuda.jit`: `@jit`, `@jit(device=True)`, `@jit("void(float32[:])")`, `@jit([sig, ...], fastmath=True)`."""
    _check_options(device, options)
    single = False
    if isinstance(func_or_sig, _pytypes.FunctionType):
        return Dispatcher(func_or_sig, None, device, options)
    if hasattr(func_or_sig, "py_func"):                # re-jitting a dispatcher
        return Dispatcher(func_or_sig.py_func, None, device, options)
    if func_or_sig is None:
        sigs = None
    elif sigutils.is_signature(func_or_sig):
        sigs = [func_or_sig]
        single = True
    elif isinstance(func_or_sig, list):
        sigs = func_or_sig
    else:
        raise TypeError(f"cuda.jit expects a function, a signature or a list of signatures, got {func_or_sig!r}")
    if sigs and not device:
        for sig in sigs:
            _, restype = sigutils.normalize_signature(sig)
            if restype is not None and restype != _nbt.void:
                raise TypeError("CUDA kernel must have void return type.")

    if options.get("shared_memory_carveout") is not None:
        _check_carveout(options["shared_memory_carveout"])

    def decorate(fn: Any) -> Dispatcher:
        d = Dispatcher(getattr(fn, "py_func", fn), sigs, device, options)
        d._specialized = single and not device          # numba-cuda: one signature, not a list
        if sigs and not options.get("link"):
            if device:
                d._device_dispatcher()                 # compiles every signature now
            else:
                for sig in sigs:
                    d.compile(sig)
        return d
    return decorate
