"""Compile a Numba CUDA kernel to PTX for the simulator, with in-memory and disk caches.

Models what `numba.cuda.jit` does at a kernel's first launch: type the arguments
(`argtypes.py`), compile the Python function with
numba-cuda's build for the device (`sm_90a` on Hopper, linked by nvJitLink with link-time
optimisation where it is installed, as `numba.cuda.jit` does), with the source lines of a
`lineinfo=True` compilation carried onto it (`numbacompile.py`), keep the PTX. The
result is a `NumbaKernel` (the seam's `CompiledKernel`, `source.py`), whose parsed
`program`/`kernel` are built on first use.
Accepts a plain function, a `numba.cuda.jit` dispatcher (its `py_func` and
`targetoptions`) or a `gpusim.cuda.jit` drop-in dispatcher; drop-in references are
pointed at numba.cuda first (`retarget.py`).

Caches:
- in memory, keyed by (code object, fingerprint, argtypes, cc, options, Numba's
  configuration: `numba_config`); the
  fingerprint (`fingerprint.py`) covers every global, closure value and device
  function Numba freezes, so changing a constant array recompiles;
- on disk, one `<sha256>.ptx` file per key under `$GPUSIM_CACHE_DIR` (default
  `~/.cache/gpusim/ptx/`), keyed by the fingerprint (source text, file, first line,
  bytecode, frozen values), argtypes, cc, options, Numba's configuration and the
  Python, numpy, numba and numba-cuda versions. A kernel whose frozen values have no stable content key is
  never written to disk, nor one whose compilation warned or read the launch
  configuration (its passes must act again in the next process, as Numba's would). `GPUSIM_DISK_CACHE=0` turns the disk cache off.
`cache_stats()` counts memory hits, disk hits and real compilations.

The call into Numba (`compile_ptx` for the kernel's compute capability with no GPU,
Numba's warnings passed on, debug exceptions kept) is `numbacompile.py`.

`debug=True` kernels are compiled with Numba's debug error model (a raised exception stores
its status code and thread in the kernel's `__errcode__` globals) and keep the exception
classes by code (`exceptions`, from Numba's call helper; such kernels skip the disk cache);
`kernel_exceptions.py` raises them after the launch.

`link=` sources (.cu compiled with NVRTC, .ptx) define the external functions the kernel
declares (`externs.py`). Does not model: Numba's own on-disk cache
(`cache=True` is ignored). Sources: numba-cuda 0.30 `dispatcher.py` (`compile_device`,
`typeof_pyval`), `compiler.py` (`compile_ptx`), `decorators.py` (`jit` options).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import sys
import threading
import types
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import numba
import numpy
from numba.core import types as nbt
from numba.cuda import config
from numba.cuda.core import sigutils
from numba.cuda.dispatcher import CUDADispatcher

from gpusim.errors import UnsupportedKernel
from gpusim.frontend import argtypes as at
from gpusim.frontend.diskcache import cache_dir, read_text_entry, write_entry
from gpusim.frontend.fingerprint import fingerprint
from gpusim.frontend.current_launch import compile_key
from gpusim.frontend.numbacompile import _SIDE_EFFECTS, _compile_ptx
from gpusim.frontend.rejections import def_line, source_file
from gpusim.frontend.retarget import _cell_value, code_names, is_dropin_dispatcher
from gpusim.frontend.source import CompiledKernel, KernelParam

CACHE_FORMAT = 5                                     # bump when the disk layout or key changes (2: checked entries; 3: numba config in the key, no side-effect compiles; 4: the plain compilation's code with carried lines; 5: numba-cuda's LTO build through nvJitLink)
PTX_OPTIONS = ("fastmath", "opt", "launch_bounds", "forceinline", "debug", "lineinfo", "lto")   # targetoptions passed to compile_ptx


@dataclass(frozen=True, kw_only=True)
class NumbaKernel(CompiledKernel):
    """A Numba kernel compiled for one set of argument types and one compute capability: the
    seam's `CompiledKernel` (`source.py`) and what Numba's ABI and runtime need besides."""
    language: str = "numba"
    pyfunc: Callable                 # the user's function (not the retargeted copy)
    argtypes: tuple                  # numba types, one per Python argument
    captured: tuple = ()             # (name, device array) captured as globals/closures (captured.py)
    exceptions: dict | None = dataclasses.field(default=None, compare=False)   # debug=True: code -> (class, args, loc)

    @property
    def signature(self):
        """Numba's signature of the compiled kernel (void return), as `overloads[...].signature`."""
        return nbt.void(*self.argtypes)


def kernel_params(pyfunc: Callable, argtypes: tuple) -> tuple[KernelParam, ...]:
    """The kernel's arguments: Python parameter names with their Numba types."""
    names = at.param_names(pyfunc) or ()
    return tuple(KernelParam(names[i] if i < len(names) else f"arg{i}", str(t)) for i, t in enumerate(argtypes))


@dataclass
class CacheStats:
    memory_hits: int = 0
    disk_hits: int = 0
    compiles: int = 0                # real compile_ptx calls
    disk_writes: int = 0
    disk_unkeyable: int = 0          # compiles not written to disk: some frozen value had no content key


_STATS = CacheStats()
_MEMORY: dict[tuple, tuple[NumbaKernel, tuple]] = {}
_LOCK = threading.RLock()


def cache_stats() -> CacheStats:
    """A snapshot of the cache counters since the process started (or `reset_cache_stats`)."""
    return dataclasses.replace(_STATS)


def reset_cache_stats() -> None:
    global _STATS
    _STATS = CacheStats()


def clear_memory_cache() -> None:
    _MEMORY.clear()


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
def compile_kernel(kernel: Any, args: tuple | list, cc: tuple[int, int] = (9, 0)) -> NumbaKernel:
    """Compile `kernel` for the types of `args` (see module doc); cached. A dispatcher keeps
    what it compiled first for these types (`_frozen`)."""
    pyfunc, options, signatures = _unwrap(kernel)
    name = pyfunc.__qualname__
    args = tuple(args)
    if signatures and len(signatures) == 1 and getattr(kernel, "_specialized", False):
        # a specialized drop-in dispatcher (one explicit signature): numba-cuda launches its one
        # kernel whatever the argument types, passing each value as the declared type asks
        argtypes = tuple(sigutils.normalize_signature(signatures[0])[0])
        return _frozen(kernel, (argtypes, cc), lambda: _compile_types(pyfunc, options, argtypes, cc))
    argtypes = at.typeof_args(name, pyfunc, args)
    if signatures:
        argtypes = at.select_signature(name, signatures, argtypes, key=pyfunc)
    extra = compile_key(kernel)
    return _frozen(kernel, (argtypes, cc, extra), lambda: _compile_types(pyfunc, options, argtypes, cc, extra))


def compile_types(kernel: Any, argtypes: tuple, cc: tuple[int, int] = (9, 0)) -> NumbaKernel:
    """Compile `kernel` for explicit Numba argument types (eager compilation); cached."""
    pyfunc, options, _ = _unwrap(kernel)
    argtypes = tuple(argtypes)
    return _frozen(kernel, (argtypes, cc), lambda: _compile_types(pyfunc, options, argtypes, cc))


def _frozen(kernel: Any, key: tuple, build: Callable[[], NumbaKernel]) -> NumbaKernel:
    """Numba's rule for globals: a dispatcher (`numba.cuda.jit` or the drop-in's) compiles once
    per argument types and keeps that kernel, with the globals it froze then, however those
    globals change later ("Numba considers global variables as compile-time constants"; its
    `recompile()` compiles afresh: the drop-in's clears this). A plain function has no
    dispatcher: each launch compiles it as a fresh `cuda.jit` would (the caches above, keyed
    by the globals' values). Numba's configuration stays in the key (a changed setting
    compiles again, as Numba's dispatchers do)."""
    if isinstance(kernel, types.FunctionType):
        return build()
    memo = kernel.__dict__.setdefault("_gpusim_frozen", {})
    full = key + (numba_config(),)
    hit = memo.get(full)
    if hit is None:
        hit = memo[full] = build()
    return hit


def _compile_types(pyfunc: types.FunctionType, options: dict, argtypes: tuple, cc: tuple,
                   extra: tuple = ()) -> NumbaKernel:
    name = pyfunc.__qualname__
    cc = tuple(cc)
    opts = tuple(sorted((k, _freeze(options[k])) for k in PTX_OPTIONS if options.get(k) is not None))
    fp = fingerprint(pyfunc)
    links = tuple(options.get("link") or ())        # link=: .cu/.ptx files and code objects (externs.py)
    mkey = (_Identity(pyfunc.__code__), fp.digest, argtypes, cc, opts, numba_config(), tuple(map(id, links))) + extra
    with _LOCK:
        hit = _MEMORY.get(mkey)
        if hit is not None:
            _STATS.memory_hits += 1
            return hit[0]
        debug = bool(dict(opts).get("debug"))
        path = _disk_path(fp.digest, name, argtypes, cc, opts) if fp.disk_ok and not debug and not extra \
            and not _numba_dumps() else None
        ptx = _disk_load(path)
        exceptions = None
        if ptx is not None:
            _STATS.disk_hits += 1
            _note_device_callees(name, pyfunc, argtypes, cc, dict(opts))
        else:
            ptx, exceptions = _compile_ptx(name, pyfunc, argtypes, cc, dict(opts))
            _STATS.compiles += 1
            if not fp.disk_ok:
                _STATS.disk_unkeyable += 1
            if not getattr(_SIDE_EFFECTS, "value", False):
                _disk_store(path, ptx)
        entry = _entry_name(ptx, name)
        ck = NumbaKernel(name=name, pyfunc=pyfunc, argtypes=argtypes, ptx=ptx, entry=entry,
                         source_file=source_file(pyfunc), first_line=def_line(pyfunc), cc=cc,
                         params=kernel_params(pyfunc, argtypes), captured=fp.captured, exceptions=exceptions,
                         link=links)
        _MEMORY[mkey] = (ck, fp.refs)
        return ck


def _note_device_callees(name: str, pyfunc, argtypes: tuple, cc: tuple, opts: dict) -> None:
    """A disk hit skips Numba, so the kernels this one calls from device code are not
    compiled as device functions and would list no such overloads; note the compile on
    them, for `Dispatcher.overloads` to run when asked (what a compile would have done)."""
    refs = [pyfunc.__globals__[n] for n in code_names(pyfunc.__code__) if n in pyfunc.__globals__]
    refs += [v for ok, v in map(_cell_value, pyfunc.__closure__ or ()) if ok]
    for v in refs:
        if is_dropin_dispatcher(v) and not v.device:
            v.__dict__.setdefault("_lazy_device_compiles", []).append((name, pyfunc, argtypes, cc, opts))


def run_noted_compiles(dispatcher) -> None:
    """Run the compiles `_note_device_callees` noted on `dispatcher` (see there)."""
    pending = dispatcher.__dict__.pop("_lazy_device_compiles", [])
    for name, pyfunc, argtypes, cc, opts in pending:
        with _LOCK:
            _compile_ptx(name, pyfunc, argtypes, cc, opts)


# numba configuration that only the host side reads (launch warnings, the memory manager,
# logging, streams): changing it needs no recompilation
_HOST_CONFIG = frozenset({
    "DISABLE_PERFORMANCE_WARNINGS", "CUDA_WARN_ON_IMPLICIT_COPY", "CUDA_LOW_OCCUPANCY_WARNINGS",
    "CUDA_LOG_LEVEL", "CUDA_LOG_API_ARGS", "CUDA_LOG_SIZE", "CUDA_DEALLOCS_COUNT", "CUDA_DEALLOCS_RATIO",
    "CUDA_ARRAY_INTERFACE_SYNC", "CUDA_PER_THREAD_DEFAULT_STREAM", "CUDA_MEMORY_MANAGER",
    "NUMBA_NUM_THREADS", "NUMBA_DEFAULT_NUM_THREADS", "CACHE_DIR", "SHOW_HELP", "COLOR_SCHEME",
})


def numba_config() -> tuple:
    """Numba's configuration as it affects compilation (`numba.core.config`'s settings, less
    the host-only ones): part of both cache keys, so a changed setting (a test's
    `override_config`, `NUMBA_OPT`) recompiles, as Numba's own dispatchers would."""
    global _CONFIG_NAMES
    if _CONFIG_NAMES is None:
        _CONFIG_NAMES = tuple(k for k in dir(config) if k.isupper() and k not in _HOST_CONFIG)
    d = vars(config)
    vals = [d.get(k) for k in _CONFIG_NAMES]
    return tuple(tuple(v) if type(v) is list else v for v in vals)       # hashable (a list-valued setting too)


_CONFIG_NAMES: tuple | None = None


def _freeze(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _unwrap(kernel: Any) -> tuple[types.FunctionType, dict, list | None]:
    """(python function, target options, explicit signatures or None)."""
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
    return pyfunc, options, sigs


def _numba_dumps() -> bool:
    """Whether Numba is set to print its compilation (NUMBA_DUMP_IR, _LLVM, _ASSEMBLY, ...): such a
    compile is neither read from nor written to disk, so that it runs and prints, as Numba's would."""
    return any(getattr(config, k) for k in dir(config) if k.startswith("DUMP_") and isinstance(getattr(config, k), (bool, int)))


def _entry_name(ptx: str, name: str) -> str:
    m = re.search(r"\.entry\s+([\w$.]+)\s*\(", ptx)
    if not m:
        raise UnsupportedKernel(f"kernel {name}: Numba's PTX has no .entry")
    return m.group(1)


# ----------------------------------------------------------------------------- disk cache
def _versions() -> tuple:
    """What the PTX depends on besides the kernel: Python, numpy, Numba, numba-cuda, NVVM and nvJitLink."""
    found = []
    for dist in ("numba-cuda", "nvidia-nvvm", "nvidia-nvjitlink"):
        try:
            found.append(metadata.version(dist))
        except metadata.PackageNotFoundError:
            found.append("?")
    return (sys.version_info[:2], numpy.__version__, numba.__version__, *found)


def _disk_path(digest: str, name: str, argtypes: tuple, cc: tuple, opts: tuple) -> Path | None:
    if os.environ.get("GPUSIM_DISK_CACHE", "1") == "0":
        return None
    key = repr((CACHE_FORMAT, _versions(), digest, name, [(type(t).__name__, str(t)) for t in argtypes], cc, opts,
                numba_config()))
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
