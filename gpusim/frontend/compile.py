"""Compile a Numba CUDA kernel to PTX for the simulator, with in-memory and disk caches.

Models what `numba.cuda.jit` does at a kernel's first launch: type the arguments
(`argtypes.py`), compile the Python function with
`numba.cuda.compile_ptx(pyfunc, argtypes, cc=cc, lineinfo=True)`, keep the PTX. The
result is a `CompiledKernel`, whose parsed `program`/`kernel` are built on first use.
Accepts a plain function, a `numba.cuda.jit` dispatcher (its `py_func` and
`targetoptions`) or a `gpusim.cuda.jit` drop-in dispatcher; drop-in references are
pointed at numba.cuda first (`retarget.py`).

Caches:
- in memory, keyed by (code object, fingerprint, argtypes, cc, options); the
  fingerprint (`fingerprint.py`) covers every global, closure value and device
  function Numba freezes, so changing a constant array recompiles;
- on disk, one `<sha256>.ptx` file per key under `$GPUSIM_CACHE_DIR` (default
  `~/.cache/gpusim/ptx/`), keyed by the fingerprint (source text, file, first line,
  bytecode, frozen values), argtypes, cc, options and the Python, numpy, numba and
  numba-cuda versions. A kernel whose frozen values have no stable content key is
  never written to disk. `GPUSIM_DISK_CACHE=0` turns the disk cache off.
`cache_stats()` counts memory hits, disk hits and real compilations.

No GPU is needed: Numba asks `get_current_device()` for the compute capability when
it compiles a called device function, so compilation runs with that lookup answering
`cc` (the trick of tests/isa/ptx/regenerate.py), under a lock.

Does not model: `link=` (external CUDA/PTX code; refused), cooperative launches,
`debug=True` exception reporting, Numba's own on-disk cache (`cache=True` is
ignored). Sources: numba-cuda 0.30 `dispatcher.py` (`compile_device`,
`typeof_pyval`), `compiler.py` (`compile_ptx`), `decorators.py` (`jit` options).
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import linecache
import os
import re
import sys
import threading
import types
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

from gpusim.errors import UnsupportedKernel
from gpusim.frontend.diskcache import read_text_entry, write_entry
from gpusim.frontend import argtypes as at
from gpusim.frontend.fingerprint import fingerprint
from gpusim.frontend.retarget import is_dropin_dispatcher, retarget

CACHE_FORMAT = 2                                     # bump when the disk layout or key changes (2: checked entries)
PTX_OPTIONS = ("fastmath", "opt", "launch_bounds", "forceinline")   # targetoptions passed to compile_ptx


@dataclass(frozen=True)
class CompiledKernel:
    """A kernel compiled for one set of argument types and one compute capability."""
    name: str                        # Python qualname of the kernel function
    pyfunc: Callable                 # the user's function (not the retargeted copy)
    argtypes: tuple                  # numba types, one per Python argument
    ptx: str
    entry: str                       # mangled `.entry` name in `ptx`
    source_file: str                 # absolute path, as the PTX `.file` directive names it
    first_line: int                  # line of the `def`
    cc: tuple[int, int]

    @property
    def signature(self):
        """Numba's signature of the compiled kernel (void return), as `overloads[...].signature`."""
        from numba.core import types as nbt
        return nbt.void(*self.argtypes)

    @cached_property
    def program(self):
        """The parsed PTX module (`isa.program.Program`), parsed once."""
        from gpusim.frontend.printf import instrument
        from isa.parser import parse
        return parse(instrument(self.ptx))        # vprintf defined: print() writes a FIFO

    @cached_property
    def kernel(self):
        """The parsed entry (`isa.program.Kernel`)."""
        from gpusim.frontend.link import link
        from isa.errors import IsaError
        try:
            prog = self.program
            k = prog.kernels[self.entry] if self.entry in prog.kernels else prog.kernel()
            return link(prog, k)                 # inline device-function calls (and fp16 shims)
        except IsaError as e:
            raise _isa_error(e, self) from None


@dataclass
class CacheStats:
    memory_hits: int = 0
    disk_hits: int = 0
    compiles: int = 0                # real compile_ptx calls
    disk_writes: int = 0
    disk_unkeyable: int = 0          # compiles not written to disk: some frozen value had no content key


_STATS = CacheStats()
_MEMORY: dict[tuple, tuple[CompiledKernel, tuple]] = {}
_LOCK = threading.RLock()


def cache_stats() -> CacheStats:
    """A snapshot of the cache counters since the process started (or `reset_cache_stats`)."""
    return dataclasses.replace(_STATS)


def reset_cache_stats() -> None:
    global _STATS
    _STATS = CacheStats()


def clear_memory_cache() -> None:
    _MEMORY.clear()


def cache_dir() -> Path:
    env = os.environ.get("GPUSIM_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "gpusim" / "ptx"


class _Identity:
    """Hash and compare by identity (code objects compare by value, ignoring the file)."""
    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.obj is self.obj


# ----------------------------------------------------------------------------- entry point
def compile_kernel(kernel: Any, args: tuple | list, cc: tuple[int, int] = (9, 0)) -> CompiledKernel:
    """Compile `kernel` for the types of `args` (see module doc); cached."""
    pyfunc, options, signatures = _unwrap(kernel)
    name = pyfunc.__qualname__
    args = tuple(args)
    argtypes = at.typeof_args(name, pyfunc, args)
    if signatures:
        argtypes = at.select_signature(name, signatures, argtypes)
    return _compile_types(pyfunc, options, argtypes, cc)


def compile_types(kernel: Any, argtypes: tuple, cc: tuple[int, int] = (9, 0)) -> CompiledKernel:
    """Compile `kernel` for explicit Numba argument types (eager compilation); cached."""
    pyfunc, options, _ = _unwrap(kernel)
    return _compile_types(pyfunc, options, tuple(argtypes), cc)


def _compile_types(pyfunc: types.FunctionType, options: dict, argtypes: tuple, cc: tuple) -> CompiledKernel:
    name = pyfunc.__qualname__
    cc = tuple(cc)
    opts = tuple(sorted((k, _freeze(options[k])) for k in PTX_OPTIONS if options.get(k) is not None))
    fp = fingerprint(pyfunc)
    mkey = (_Identity(pyfunc.__code__), fp.digest, argtypes, cc, opts)
    with _LOCK:
        hit = _MEMORY.get(mkey)
        if hit is not None:
            _STATS.memory_hits += 1
            return hit[0]
        path = _disk_path(fp.digest, name, argtypes, cc, opts) if fp.disk_ok else None
        ptx = _disk_load(path)
        if ptx is not None:
            _STATS.disk_hits += 1
        else:
            ptx = _compile_ptx(name, pyfunc, argtypes, cc, dict(opts))
            _STATS.compiles += 1
            if not fp.disk_ok:
                _STATS.disk_unkeyable += 1
            _disk_store(path, ptx)
        entry = _entry_name(ptx, name)
        ck = CompiledKernel(name=name, pyfunc=pyfunc, argtypes=argtypes, ptx=ptx, entry=entry,
                            source_file=_source_file(pyfunc), first_line=_def_line(pyfunc), cc=cc)
        _MEMORY[mkey] = (ck, fp.refs)
        return ck


def _freeze(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _unwrap(kernel: Any) -> tuple[types.FunctionType, dict, list | None]:
    """(python function, target options, explicit signatures or None)."""
    from numba.cuda.dispatcher import CUDADispatcher
    if is_dropin_dispatcher(kernel):
        pyfunc, options, sigs, device = (kernel.py_func, dict(kernel.targetoptions), kernel.explicit_signatures,
                                         kernel.device)
    elif isinstance(kernel, CUDADispatcher):
        pyfunc, options, sigs = kernel.py_func, dict(kernel.targetoptions), None
        device = bool(options.get("device"))
    elif isinstance(kernel, types.FunctionType):
        pyfunc, options, sigs, device = kernel, {}, None, False
    else:
        raise UnsupportedKernel(f"{kernel!r} is not a kernel: pass a Python function, a numba.cuda.jit kernel "
                                "or a gpusim.cuda.jit kernel")
    name = pyfunc.__qualname__
    if device:
        raise UnsupportedKernel(f"{name} is a device function (device=True); launch a kernel that calls it")
    if options.get("link"):
        raise UnsupportedKernel(f"kernel {name} links external code (link={options['link']!r}); "
                                "the simulator runs only what Numba compiles from Python")
    return pyfunc, options, sigs


# ----------------------------------------------------------------------------- compilation
class _PretendDevice:
    def __init__(self, cc: tuple[int, int]) -> None:
        self.compute_capability = cc
        self.name = f"gpusim sm_{cc[0]}{cc[1]}"


@contextmanager
def _pretend_device(cc: tuple[int, int]):
    """Numba compiles called device functions for `get_current_device()`'s cc; answer `cc`."""
    import numba.cuda.dispatcher as dispatcher
    saved = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _PretendDevice(cc)
    try:
        yield
    finally:
        dispatcher.get_current_device = saved


def _compile_ptx(name: str, pyfunc: types.FunctionType, argtypes: tuple, cc: tuple, opts: dict) -> str:
    from numba import cuda
    with _pretend_device(cc):
        try:
            fn = retarget(pyfunc)
            ptx, _ = cuda.compile_ptx(fn, argtypes, cc=cc, lineinfo=True, **opts)
        except Exception as e:            # Numba raises many types; all mean "cannot compile"
            from gpusim.frontend.numba_errors import like
            raise like(_rejected(name, pyfunc, e, argtypes), type(e)) from e
    return ptx


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _rejected(name: str, pyfunc: types.FunctionType, exc: BaseException, argtypes: tuple = ()) -> UnsupportedKernel:
    """UnsupportedKernel with the first meaningful line of Numba's message and the source line."""
    text = _ANSI.sub("", str(exc))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Failed in ", "During:"))]
    head = useful[0] if useful else type(exc).__name__
    if head.endswith(":") and len(useful) > 1:
        head = f"{head} {useful[1]}"
    if "setitem(readonly array" in text:
        return _readonly(name, pyfunc, argtypes)
    cycle = _recursion(pyfunc) if "insert_unresolved_ref" in text or "recursi" in text.lower() else None
    if cycle:
        fn = pyfunc.__globals__.get(cycle[0])
        fn = getattr(fn, "py_func", fn)
        at = f" (defined at {_source_file(fn)}:{_def_line(fn)})" if isinstance(fn, types.FunctionType) else ""
        return UnsupportedKernel(f"kernel {name} cannot be compiled: device function {cycle[0]} is recursive "
                                 f"({' -> '.join(cycle)}){at}. Numba compiles a recursive device function only "
                                 "with an explicit signature, and gpusim inlines every call, so it cannot run "
                                 "recursion either way; rewrite it as a loop")
    where = _problem_line(pyfunc, text)
    return UnsupportedKernel(f"kernel {name} cannot be compiled by Numba: {head}{where}")


def _readonly(name: str, pyfunc: types.FunctionType, argtypes: tuple) -> UnsupportedKernel:
    """The error for a kernel storing into a read-only array: which argument, and where."""
    params = list(inspect.signature(pyfunc).parameters)
    ro = [(i, p) for i, (p, t) in enumerate(zip(params, argtypes)) if getattr(t, "mutable", True) is False]
    where = ""
    try:
        body, start = inspect.getsourcelines(pyfunc)
    except (OSError, TypeError):
        body, start = [], 0
    for k, line in enumerate(body):
        if any(re.search(rf"\b{p}\s*\[[^\]]*\]\s*([-+*/%&|^]|<<|>>|//|\*\*)?=(?!=)", line) for _, p in ro):
            where = f" (at {_source_file(pyfunc)}:{start + k}: {line.strip()})"
            break
    what = ", ".join(f"argument {i} ({p})" for i, p in ro) or "an argument"
    return UnsupportedKernel(f"kernel {name} stores into {what}, a read-only array (flags.writeable == False)"
                             f"{where}; pass a writable array for the arguments the kernel writes")


def _isa_error(e, ck: CompiledKernel):
    """The gpusim error for an `isa` error met while reading or linking `ck`'s PTX, its
    message naming the kernel, what is unsupported in Python terms, and the source line."""
    from gpusim.errors import from_isa
    callee = getattr(e, "callee", "") or ""
    where = _ptx_source(ck, getattr(e, "ptx_line", 0))
    if callee.startswith("cudaCG"):
        msg = (f"kernel {ck.name}: cooperative grid sync is not supported (cuda.cg.this_grid().sync(){where}): "
               "gpusim runs a grid's blocks in batches, never all resident at once, so no block can wait for the "
               "whole grid; split the kernel into two launches")
    elif callee == "vprintf":
        msg = f"kernel {ck.name}: print() in a kernel is not supported (device printf{where})"
    elif str(e).startswith(f"kernel {ck.name}"):
        msg = str(e)
    else:
        msg = f"kernel {ck.name}: {e}" + (where if where and "(at " not in str(e) else "")
    return from_isa(e, msg)


def _ptx_source(ck: CompiledKernel, ptx_line: int) -> str:
    """' at file:line: code' for the Python line PTX line `ptx_line` came from ('' if unknown)."""
    if not ptx_line:
        return ""
    try:
        prog = ck.program
        fns = (*prog.kernels.values(), *prog.functions.values())
        loc = next((ins.loc for fn in fns for ins in fn.instructions if ins.ptx_line == ptx_line and ins.loc), None)
    except Exception:                        # the PTX itself did not parse: no lines to map
        return f" at PTX line {ptx_line}"
    if loc is None:
        return f" at PTX line {ptx_line}"
    code = linecache.getline(loc.file, loc.line).strip()
    return f" at {loc.file}:{loc.line}: {code}" if code else f" at {loc.file}:{loc.line}"


def _recursion(pyfunc: types.FunctionType) -> list[str] | None:
    """The names of a cycle of device functions reachable from `pyfunc` through the
    globals its code names (['fact', 'fact'] for a function calling itself), or None."""
    def callees(fn):
        codes, names = [fn.__code__], []
        while codes:
            c = codes.pop()
            names.extend(c.co_names)
            codes.extend(x for x in c.co_consts if isinstance(x, types.CodeType))
        for n in dict.fromkeys(names):
            g = fn.__globals__.get(n)
            f = getattr(g, "py_func", None)
            if isinstance(f, types.FunctionType):
                yield f

    def walk(fn, path):
        for f in callees(fn):
            names = [p.__name__ for p in path]
            if f in path:
                return names[path.index(f):] + [f.__name__]
            if len(path) < 16:
                found = walk(f, path + [f])
                if found:
                    return found
        return None
    return walk(pyfunc, [pyfunc])


def _problem_line(pyfunc: types.FunctionType, text: str) -> str:
    src = _source_file(pyfunc)
    line = None
    m = re.search(r'File "([^"]+)", line (\d+)', text)
    if m:
        line = int(m.group(2))
        if os.path.basename(m.group(1)) != os.path.basename(src):
            src = m.group(1)
    else:
        m = re.search(r"has no attribute '(\w+)'", text)
        if m:
            try:
                body, start = inspect.getsourcelines(pyfunc)
            except (OSError, TypeError):
                body, start = [], 0
            hits = [start + i for i, ln in enumerate(body) if re.search(rf"\.{m.group(1)}\b", ln)]
            line = hits[0] if hits else None
    if line is None:
        return f" (kernel defined at {src}:{_def_line(pyfunc)})"
    code = linecache.getline(src, line).strip()
    return f" (at {src}:{line}: {code})" if code else f" (at {src}:{line})"


def _entry_name(ptx: str, name: str) -> str:
    m = re.search(r"\.entry\s+([\w$.]+)\s*\(", ptx)
    if not m:
        raise UnsupportedKernel(f"kernel {name}: Numba's PTX has no .entry")
    return m.group(1)


def _source_file(pyfunc: types.FunctionType) -> str:
    f = pyfunc.__code__.co_filename
    return f if f.startswith("<") else os.path.abspath(f)


def _def_line(pyfunc: types.FunctionType) -> int:
    """The line of `def` (co_firstlineno points at the first decorator)."""
    try:
        body, start = inspect.getsourcelines(pyfunc)
    except (OSError, TypeError):
        return pyfunc.__code__.co_firstlineno
    for i, ln in enumerate(body):
        if ln.lstrip().startswith(("def ", "async def ")):
            return start + i
    return start


# ----------------------------------------------------------------------------- disk cache
def _versions() -> tuple:
    from importlib import metadata

    import numba
    import numpy
    try:
        nc = metadata.version("numba-cuda")
    except metadata.PackageNotFoundError:
        nc = "?"
    return sys.version_info[:2], numpy.__version__, numba.__version__, nc


def _disk_path(digest: str, name: str, argtypes: tuple, cc: tuple, opts: tuple) -> Path | None:
    if os.environ.get("GPUSIM_DISK_CACHE", "1") == "0":
        return None
    key = repr((CACHE_FORMAT, _versions(), digest, name, [(type(t).__name__, str(t)) for t in argtypes], cc, opts))
    return cache_dir() / f"{hashlib.sha256(key.encode()).hexdigest()}.ptx"


def _disk_load(path: Path | None) -> str | None:
    """The cached PTX at `path`, or None when missing or corrupt (`diskcache.read_entry`
    checks its length and SHA-256: a truncated, garbled or edited entry is rebuilt)."""
    if path is None:
        return None
    text = read_text_entry(path)
    return text if text is not None and ".entry" in text else None


def _disk_store(path: Path | None, ptx: str) -> None:
    """Write atomically (temp file + rename); a read-only cache directory is not an error."""
    if path is None:
        return
    if write_entry(path, ptx):
        _STATS.disk_writes += 1
