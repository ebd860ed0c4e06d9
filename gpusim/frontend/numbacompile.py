"""Numba's compilation of one kernel to PTX: the call `compile.py` makes on a cache miss
(`_compile_ptx`).

The kernel's function (retargeted to numba.cuda: `retarget.py`) is built as `numba.cuda.jit`
builds it on a device (docs/toolchain.md): for `cc + ('a',)` on Hopper and later, and, where
nvJitLink is installed (numba-cuda's default `lto`), to LTO-IR linked by nvJitLink with the files
Numba links, whose PTX after link-time optimisation is the code gpusim runs (`_build`); with
`lto=False`, or where nvJitLink refuses the link, `compile_ptx`'s PTX. Its source lines come from
a second compilation with `lineinfo=True`, which `ptx_lines.carry_lines` puts on the first (NVVM
emits other code with line information, and ptxas then other SASS). A kernel the user compiles
with `lineinfo=True` or `debug=True` is built once, as asked. When Numba's line-info generation
fails on a type, the kernel has no source lines. A failure is reported as gpusim's rejection (`rejections.py`),
also an instance of Numba's exception type (`numba_errors.py`). Numba's warnings are
passed on through the caller's filters (but `NumbaInvalidConfigWarning`: `jit` warned
already).

No GPU is needed: Numba asks `get_current_device()` for the compute capability when
it compiles a called device function, so compilation runs with that lookup answering
`cc` (the trick of tests/isa/ptx/regenerate.py), under `compile.py`'s lock.

`debug=True` kernels are compiled with Numba's debug error model, and the kernel's
exception classes by status code are taken from Numba's call helper (returned with the
PTX; `kernel_exceptions.py` raises them after the launch). A compilation that warned or
read the launch configuration sets `_SIDE_EFFECTS.value`: `compile.py` then does not
store it on disk.

Sources: numba-cuda 0.30 `compiler.py` (`compile_ptx`, `compile_cuda`,
`_compile_pyfunc_with_fixup`), `codegen.py` (`_ensure_cc`, `get_lto_ptx`, `_link_all`),
`decorators.py` (`lto` defaults to `_have_nvjitlink()`), `dispatcher.py` (`get_current_device`).
"""
from __future__ import annotations

import os
import threading
import traceback
import types
import warnings
from contextlib import contextmanager

import numba.cuda.compiler as ncc
import numba.cuda.dispatcher as dispatcher
from numba import cuda
from numba.cuda.compiler import _compile_pyfunc_with_fixup
from numba.cuda.core.errors import NumbaInvalidConfigWarning
from numba.cuda.cudadrv import driver
from cuda.bindings.nvjitlink import nvJitLinkError as NvJitLinkError

from gpusim.frontend import current_launch
from gpusim.frontend.numba_errors import like
from gpusim.frontend.ptx_lines import carry_lines
from gpusim.frontend.rejections import rejected
from gpusim.frontend.retarget import retarget


class _PretendDevice:
    def __init__(self, cc: tuple[int, int]) -> None:
        self.compute_capability = cc
        self.name = f"gpusim sm_{cc[0]}{cc[1]}"


@contextmanager
def _pretend_device(cc: tuple[int, int]):
    """Numba compiles called device functions for `get_current_device()`'s cc; answer `cc`."""
    saved = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _PretendDevice(cc)
    try:
        yield
    finally:
        dispatcher.get_current_device = saved


def _compile_ptx(name: str, pyfunc: types.FunctionType, argtypes: tuple, cc: tuple, opts: dict) -> tuple:
    """(PTX, the kernel's user exceptions by status code when compiled with debug=True, else None)."""

    debug = bool(opts.get("debug"))
    results = []
    real = ncc.compile_cuda

    def keep(*a, **k):                    # the kernel's compile result: its call helper maps exception codes
        cres = real(*a, **k)
        results.append(cres)
        return cres
    current_launch.consulted(reset=True)
    consulted = False
    with _pretend_device(cc), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if debug:
            ncc.compile_cuda = keep
        try:
            opts = dict(opts)
            asked = bool(opts.pop("lineinfo", False))     # the user's own jit(lineinfo=True): the GPU runs that
            lto = opts.pop("lto", None)
            lto = not debug and (lto if lto is not None else driver._have_nvjitlink())   # numba-cuda's default
            target = (cc[0], cc[1], "a" if tuple(cc[:2]) >= (9, 0) else "")            # as on a device (codegen.py)
            fn = retarget(pyfunc)
            if debug:
                ptx = cuda.compile_ptx(fn, argtypes, cc=target, lineinfo=False, **opts)[0]
            elif asked:
                ptx = _build(fn, argtypes, target, True, lto, opts)
            else:
                # the code numba.cuda.jit builds by default, then the source lines of a line-info compile
                # (in this order: an LTO link of fp16 shims after a line-info compile fails in nvJitLink)
                ptx = _build(retarget(pyfunc, lineinfo=False), argtypes, target, False, lto, opts)
                try:
                    ptx = carry_lines(ptx, cuda.compile_ptx(fn, argtypes, cc=target, lineinfo=True, **opts)[0])
                except Exception as e:    # Numba's line info failing on a type (an empty tuple: a
                    if not _in_debuginfo(e):      # division by zero in debuginfo.py): without it,
                        raise             # errors then name PTX lines instead of Python lines
        except Exception as e:            # Numba raises many types; all mean "cannot compile"
            raise like(rejected(name, pyfunc, e, argtypes), e) from e
        finally:
            ncc.compile_cuda = real
            consulted = current_launch.consulted(reset=False)
    said = [w for w in caught if not issubclass(w.category, NumbaInvalidConfigWarning)]   # `jit` warned already
    said = list({(w.category, str(w.message), w.filename, w.lineno): w for w in said}.values())  # once, not per compile
    for w in said:                        # Numba's own warnings, passed on through the caller's filters
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    helper = getattr(results[-1], "call_helper", None) if results else None
    # a compilation that warned or read the launch configuration is not stored on disk: the next
    # process compiles it again and its passes act again, as Numba's would
    _SIDE_EFFECTS.value = bool(said) or consulted
    return ptx, (dict(getattr(helper, "exceptions", {}) or {}) if debug else None)


def _build(fn: types.FunctionType, argtypes: tuple, target: tuple, lineinfo: bool, lto: bool, opts: dict) -> str:
    """The kernel's PTX as numba-cuda builds it for a device of compute capability `target`
    ((9, 0, 'a') on Hopper). With `lto` (numba-cuda's default where nvJitLink is installed, as on
    the measuring machines) the kernel is compiled to LTO-IR and linked by nvJitLink with the
    files Numba links (fp16 shims, cudadevrt), and this is the PTX after link-time optimisation
    (`-ptx`), which ptxas assembles to the SASS the GPU runs; without, `compile_ptx`'s PTX."""
    if lto:
        lib, _ = _compile_pyfunc_with_fixup(fn, argtypes, lineinfo=lineinfo, device=False, cc=target, abi="numba",
                                            lto=True, **opts)
        linker = driver._Linker(max_registers=lib._max_registers, cc=target, lineinfo=lineinfo,
                                additional_flags=["-ptx"], lto=True)
        try:
            lib._link_all(linker, target, ignore_nonlto=True)
            return linker.get_linked_ptx().decode().rstrip("\0")
        except NvJitLinkError:            # nvJitLink refusing the modules (line information in NVRTC-built
            pass                          # shims): the build numba-cuda makes without nvJitLink
    ptx, _ = cuda.compile_ptx(fn, argtypes, cc=target, lineinfo=lineinfo, **opts)
    return ptx


def _in_debuginfo(e: BaseException) -> bool:
    """Whether `e` was raised inside Numba's debug/line-info generation."""
    tb = e.__traceback__
    return any(f.filename.endswith(os.path.join("cuda", "debuginfo.py")) for f in traceback.extract_tb(tb))

_SIDE_EFFECTS = threading.local()         # the last _compile_ptx of this thread warned or read the launch config
