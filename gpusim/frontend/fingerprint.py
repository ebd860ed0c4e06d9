"""A key for everything Numba freezes into a kernel's PTX, for the PTX caches.

Numba compiles a kernel from its bytecode and freezes every global it reads (a
module-level constant, a `cuda.const.array_like` table, a device function) into the
PTX at compile time. The key therefore covers, for the kernel and, recursively,
every device function it references: the source text, the file and first line
(they become `.loc` lines), the bytecode, and the value of every global name,
closure cell and default the code mentions. Numpy arrays are keyed by dtype, shape
and a SHA-256 of their bytes, so changing a constant table re-keys the kernel.
A device array (an object with `__cuda_array_interface__`) is keyed by identity: Numba
embeds its pointer, not its values; such objects are listed in `captured`.

`disk_ok` is False when some referenced value has no stable content key (an
arbitrary object, an object array, a function without source text): such a kernel
is still cached in memory (the value's identity joins the key) but never on disk.

Does not model: a value reached only through an object's attribute at run time of
the compiler that the code does not name; objects of library modules (numpy,
numba, math, gpusim, ...) are keyed by their qualified name, assuming the library
version (part of the disk key) fixes their meaning.
"""
from __future__ import annotations

import enum
import hashlib
import inspect
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba.core.types import Type

from gpusim.frontend.captured import interface_of
from gpusim.frontend.retarget import code_names

LIBRARY_ROOTS = frozenset({"numpy", "numba", "numba_cuda", "math", "cmath", "operator", "builtins", "gpusim"})


@dataclass(frozen=True, slots=True)
class Fingerprint:
    digest: str         # hex SHA-256 over code and frozen values
    disk_ok: bool       # every value had a content key (safe to share across processes)
    refs: tuple = field(default=(), compare=False, repr=False)   # objects keyed by id(); hold them
    captured: tuple = field(default=(), compare=False, repr=False)   # (name, device array) the code captures


def _root(module_name: str | None) -> str:
    return (module_name or "").split(".", 1)[0]


class _Hasher:
    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self.disk_ok = True
        self._seen: set[int] = set()
        self._keep: list[Any] = []          # objects whose id() went into the key stay alive
        self.captured: list[tuple[str, Any]] = []   # objects with __cuda_array_interface__ (captured.py)
        self._label = "?"

    def add(self, *parts: Any) -> None:
        for p in parts:
            self._h.update(p if isinstance(p, bytes) else repr(p).encode())
            self._h.update(b"\x1f")

    def digest(self) -> str:
        return self._h.hexdigest()

    def unsure(self, v: Any) -> None:
        self.disk_ok = False
        self._keep.append(v)
        self.add("id", type(v).__qualname__, id(v))

    def function(self, fn: types.FunctionType) -> None:
        code = fn.__code__
        if id(fn) in self._seen:
            self.add("again", code.co_qualname if hasattr(code, "co_qualname") else code.co_name)
            return
        self._seen.add(id(fn))
        self.add("fn", fn.__qualname__, code.co_filename, code.co_firstlineno, code.co_code)
        src = _source_text(fn)
        if src is None:
            self.unsure(fn)
        self.add(src)
        names = code_names(code)
        for name in sorted(names & fn.__globals__.keys()):
            self.add("global", name)
            self._label = name
            self.value(fn.__globals__[name], names)
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            self.add("cell", name)
            self._label = name
            try:
                self.value(cell.cell_contents, names)
            except ValueError:
                self.add("<empty cell>")
        self.value(fn.__defaults__, names)
        self.value(fn.__kwdefaults__, names)

    def value(self, v: Any, names: set[str]) -> None:
        if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
            self.add(type(v).__name__, v)
        elif isinstance(v, np.ndarray):
            if v.dtype.hasobject:
                self.unsure(v)
            else:
                self.add("ndarray", v.dtype.descr, v.shape,
                         hashlib.sha256(np.ascontiguousarray(v).view(np.uint8).tobytes()).hexdigest())
        elif isinstance(v, np.generic):
            self.add("npscalar", v.dtype.descr, v.tobytes())
        elif isinstance(v, (tuple, list)):
            self.add(type(v).__name__, len(v))
            for x in v:
                self.value(x, names)
        elif isinstance(v, dict):
            self.unsure(v)
        elif isinstance(v, np.dtype):
            self.add("dtype", v.descr)
        elif isinstance(v, types.FunctionType):
            if "<locals>" in v.__qualname__:
                # a plain function a kernel refers to is what Numba types through a registry keyed
                # by the function object (@overload): two local functions with the same code may
                # have been registered differently (strict=...), so the object itself is the key
                self.unsure(v)
            self.function(v)
        elif interface_of(v) is not None:       # a device array: Numba embeds its pointer, not its values
            if all(c is not v for _, c in self.captured):
                self.captured.append((self._label, v))
            self.unsure(v)
        elif isinstance(v, types.ModuleType):
            self._module(v, names)
        elif hasattr(v, "py_func") and hasattr(v, "targetoptions"):      # numba or drop-in dispatcher
            simple = (bool, int, float, str, tuple, type(None))
            opts = {k: o for k, o in v.targetoptions.items() if isinstance(o, simple)}
            self.add("dispatcher", type(v).__qualname__, sorted(opts.items()), getattr(v, "explicit_signatures", getattr(v, "signatures", None)))
            self.function(v.py_func)
        elif isinstance(v, enum.Enum):
            self.add("enum", type(v).__module__, type(v).__qualname__, v.name)
            self.value(v.value, names)
        elif isinstance(v, type):
            self.add("type", v.__module__, v.__qualname__)
            if issubclass(v, enum.Enum):
                for member in v:
                    self.add(member.name)
                    self.value(member.value, names)
            elif _root(v.__module__) not in LIBRARY_ROOTS:
                self.unsure(v)
        elif _is_numba_type(v):
            self.add("numba-type", type(v).__qualname__, str(v))
        elif _root(getattr(v, "__module__", None)) in LIBRARY_ROOTS or _root(type(v).__module__) in LIBRARY_ROOTS:
            self.add("library-object", getattr(v, "__module__", None), type(v).__module__, type(v).__qualname__,
                     getattr(v, "__qualname__", getattr(v, "__name__", None)))
        else:
            self.unsure(v)

    def _module(self, mod: types.ModuleType, names: set[str]) -> None:
        self.add("module", mod.__name__)
        if _root(mod.__name__) in LIBRARY_ROOTS or id(mod) in self._seen:
            return
        self._seen.add(id(mod))
        # A user module: Numba freezes `mod.NAME` too; key the attributes the code names.
        for name in sorted(n for n in names if hasattr(mod, n)):
            self.add("attr", name)
            self._label = f"{mod.__name__}.{name}"
            self.value(getattr(mod, name), names)


_SOURCES: dict[int, tuple[types.CodeType, str | None]] = {}


def _source_text(fn: types.FunctionType) -> str | None:
    """inspect.getsource, remembered per code object (a code object's source does not change)."""
    hit = _SOURCES.get(id(fn.__code__))
    if hit is not None and hit[0] is fn.__code__:
        return hit[1]
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        src = None
    _SOURCES[id(fn.__code__)] = (fn.__code__, src)
    return src


def _is_numba_type(v: Any) -> bool:
    return isinstance(v, Type)


def fingerprint(fn: types.FunctionType) -> Fingerprint:
    """The cache key of `fn` and everything it freezes (see module doc)."""
    h = _Hasher()
    h.function(fn)
    return Fingerprint(h.digest(), h.disk_ok, tuple(h._keep), tuple(h.captured))
