"""Exceptions raised inside kernels compiled with `debug=True`, reported on the host.

numba-cuda compiles a `debug=True` kernel with an exception helper (`kernel_fixup`): a
thread that raises (`raise ValueError(...)`, an out-of-range index, a division by zero
under the Python error model) compare-and-swaps its status code into the global
`<entry>__errcode__` (the first one wins) and stores its `%tid` and `%ctaid` into
`<entry>__tid{x,y,z}__` / `__ctaid{x,y,z}__`, then returns. After the launch numba-cuda
reads those globals and, for a non-zero code, raises the exception its call helper
registered for that code, its message prefixed with
`In function 'f', file F, line L, tid=[x, y, z] ctaid=[x, y, z]`.

`raise_if_failed(prepared)` does the same from the simulated global memory after a
launch (the kernel's PTX runs the helper unchanged); the exception classes come from
the compile (`CompiledKernel.exceptions`). The exception carries `gpusim_kernel` (the
kernel's name), so that the `gpusim` command reports it as one line, exit status 7.

Does not model: numba-cuda's omission of the write-back of host arrays converted
implicitly for the launch (here they are copied back before the exception is raised).

Sources: numba-cuda 0.30 `compiler.py` (`kernel_fixup`, `add_exception_store_helper`),
`dispatcher.py` (`_Kernel.launch`: the `__errcode__` read and the message),
`core/callconv.py` (`_MinimalCallHelper.get_exception`).
"""
from __future__ import annotations

import os

import numpy as np


def _read_u32(prepared, name: str) -> int | None:
    sym = prepared.layout.symbols.get(name)
    if sym is None or sym[0] != "global":
        return None
    return int(prepared.memory.global_heap.read(sym[1], 4).view(np.int32)[0])


def raise_if_failed(prepared) -> None:
    """Raise the kernel's exception if a thread of a `debug=True` kernel raised one."""
    ck = prepared.compiled
    exceptions = getattr(ck, "exceptions", None)
    if exceptions is None:
        return
    code = _read_u32(prepared, f"{ck.entry}__errcode__")
    if not code:
        return
    tid = [_read_u32(prepared, f"{ck.entry}__tid{a}__") for a in "zyx"]
    ctaid = [_read_u32(prepared, f"{ck.entry}__ctaid{a}__") for a in "zyx"]
    # a code no handler of this kernel registered (e.g. raised in a device function): numba-cuda's answer
    exccls, exc_args, loc = exceptions.get(code, (SystemError, (f"unknown error {code} in native function",), None))
    locinfo = ""
    if loc is not None:
        sym, filepath, lineno = loc
        locinfo = f"In function {sym!r}, file {os.path.abspath(filepath)}, line {lineno}, "
    prefix = f"{locinfo}tid={tid} ctaid={ctaid}"
    exc_args = (f"{prefix}: {exc_args[0]}",) + tuple(exc_args[1:]) if exc_args else (prefix,)
    err = exccls(*exc_args)
    try:
        err.gpusim_kernel = ck.name              # the `gpusim` command reports it as the kernel's (exit 7)
    except AttributeError:                       # pragma: no cover - an exception class with __slots__
        pass
    raise err
