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


def like(err: BaseException, cause_type: type) -> BaseException:
    """`err` re-made as an instance of both its type and `cause_type` (see module doc)."""
    cls = _combined(type(err), cause_type)
    if cls is None or cls is type(err):
        return err
    new = cls.__new__(cls, *err.args)
    BaseException.__init__(new, *err.args)
    new.__dict__.update(getattr(err, "__dict__", {}))
    return new
