"""Errors of the drop-in that are also Numba's (or Python's) own exception types.

A program written for `numba.cuda` catches what Numba raises: `TypingError` when a
kernel does not type, `ValueError` for a bad launch configuration, and so on. Where
gpusim reports such a case with its own error (a `GpusimError` naming kernel and
line), `like(err, cause_type)` returns the same error as an instance of a class
deriving from both, so `except TypingError` and `except GpusimError` both catch it.
A cause type whose instance layout cannot be combined (a few builtins) leaves the
error as it is.

Sources: numba-cuda 0.30 `dispatcher.py`, `numba.core.errors`.
"""
from __future__ import annotations

import functools
import re

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@functools.lru_cache(maxsize=None)
def _combined(gpusim_type: type, cause_type: type) -> type | None:
    if issubclass(gpusim_type, cause_type):
        return gpusim_type
    try:
        return type(gpusim_type.__name__, (gpusim_type, cause_type),
                    {"__module__": gpusim_type.__module__, "__qualname__": gpusim_type.__qualname__,
                     "__str__": gpusim_type.__str__, "__init__": gpusim_type.__init__})
    except TypeError:
        return None


def like(err: BaseException, cause: type | BaseException) -> BaseException:
    """`err` re-made as an instance of both its type and `cause`'s type (see module doc).
    Given the cause itself, its message follows gpusim's (a caller matching Numba's text
    still finds it)."""
    cause_type = cause if isinstance(cause, type) else type(cause)
    cls = _combined(type(err), cause_type)
    if cls is None or cls is type(err):
        return err
    args = err.args
    if isinstance(cause, BaseException) and args and isinstance(args[0], str):
        text = _ANSI.sub("", str(cause)).strip()
        if text and text not in args[0]:
            args = (f"{args[0]}\n\nNumba's message:\n{text}",) + tuple(args[1:])
    new = cls.__new__(cls, *args)
    BaseException.__init__(new, *args)
    new.__dict__.update(getattr(err, "__dict__", {}))
    if hasattr(cause, "msg") and args and isinstance(args[0], str):
        new.msg = args[0]                    # NumbaError's message attribute
    return new
