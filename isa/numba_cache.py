"""numba's on-disk cache of compiled functions, kept in step with the project's other modules.

numba (`cache=True`) stamps a cached function with a hash of its own source file and loads it
while that file is unchanged. A compiled function holds what it calls compiled into it (another
module's `@njit` function) and the module constants it reads frozen in, so a cached caller
outlives an edit of its callee's file: `wgmma_operands._mma_b` kept running the tensor-core pass
of `isa.semantics.mma_kernel` as it was before an edit (found in session 52: a caller timed 55
us a call, its fresh compilation 32 us), and an edit that changes a result would have gone on
giving the old one, silently, in every tree that had run the code before (numba's documentation
says so).

Here the stamp of a function defined under one of the watched trees (`isa` and `gpusim` of this
checkout: `watch`) is a hash of its file, of the files defining compiled functions that it reaches
through imports of such files, and of the modules those import directly (`_closure`; found from
the import statements, anywhere in a file; `from p import m` counts `p.m` where it is a module,
and a package's `__init__` counts with it): an edit there compiles the function again, once, the
next time it is used; an edit of a module without compiled functions that none of them imports
(the executor, the timing model) recompiles nothing. The locators numba chooses between (a
user's NUMBA_CACHE_DIR, the source tree's `__pycache__`, the user-wide cache) are kept, each with
this stamp (`install`, run when `isa` is imported, before any of its or gpusim's compiled
functions is made; idempotent).

Sources: numba 0.68 `numba.core.caching` (`CacheImpl._locator_classes`, `get_source_stamp`);
numba's documentation, "Notes on Caching" ("Cache invalidation fails to recognize changes in functions
defined in a different file").
"""
from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache

from numba.core import caching

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TREES: dict[str, str] = {}            # watched top-level package -> the directory holding it
_COMPILED = re.compile(r"@(?:numba\.)?(?:njit|jit|cfunc|vectorize|guvectorize)\b|\bnjit\(")
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)|import[ \t]+([\w., \t]+))",
                     re.M)


def watch(root: str, packages) -> None:
    """Stamp the compiled functions of `packages` (top-level package names) under `root` by
    their import closure (module docstring)."""
    for p in packages:
        _TREES[p] = os.path.abspath(root)
    _closure.cache_clear()
    _imports.cache_clear()


def _module_file(name: str) -> str | None:
    """The source file of watched module `name` (a package: its __init__), or None."""
    root = _TREES.get(name.split(".")[0])
    if root is None:
        return None
    base = os.path.join(root, *name.split("."))
    for f in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(f):
            return f
    return None


def _with_parents(name: str) -> list[str]:
    """`name` and the packages above it ("a.b.c" -> "a", "a.b", "a.b.c")."""
    parts = name.split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts) + 1)]


@lru_cache(maxsize=None)
def _imports(path: str, stamp: tuple) -> tuple[str, ...]:
    """The watched modules' files that the file at `path` imports (`stamp`: its mtime and size,
    so that an edit while a process runs is read again)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    names = []
    for frm, what, plain in _IMPORT.findall(text):
        if frm:
            names += _with_parents(frm)
            names += [f"{frm}.{w.split()[0]}" for w in what.strip("()").replace("\n", " ").split(",") if w.strip()]
        else:
            names += [n for w in plain.split(",") if w.strip() for n in _with_parents(w.split()[0])]
    files = {_module_file(n) for n in names if n.split(".")[0] in _TREES}
    return tuple(sorted(f for f in files if f is not None and f != path))


def _stat(path: str) -> tuple[float, int]:
    st = os.stat(path)
    return st.st_mtime, st.st_size


@lru_cache(maxsize=None)
def _compiled(path: str, stamp: tuple) -> bool:
    """Whether the file at `path` defines compiled functions (numba's decorators in its text)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return _COMPILED.search(f.read()) is not None


@lru_cache(maxsize=None)
def _closure(path: str) -> tuple[str, ...]:
    """The watched files whose edit may change what a compiled function of `path` computes, sorted
    (found once a process; their bytes are hashed afresh by `dependency_stamp`): `path`, the files
    defining compiled functions that it reaches through imports of such files (whose functions
    its own may call, compiled in), and every watched module that one of those imports directly
    (whose constants compiled code reads frozen in). Imports through modules without compiled
    functions are not followed: an edit of the executor or the timing model recompiles nothing."""
    out, seen, todo = {path}, {path}, [path]
    while todo:
        f = todo.pop()
        for d in _imports(f, _stat(f)):
            out.add(d)
            if d not in seen and _compiled(d, _stat(d)):
                seen.add(d)
                todo.append(d)
    return tuple(sorted(out))


@lru_cache(maxsize=None)
def _file_hash(path: str, mtime: float, size: int) -> bytes:
    """sha256 of a file's bytes (memoized by its mtime and size, as numba memoizes its own)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).digest()


def dependency_stamp(path: str) -> bytes:
    """The hash of the file at `path` and of every watched file in its import closure."""
    h = hashlib.sha256()
    for f in _closure(path):
        h.update(f.encode())
        h.update(_file_hash(f, *_stat(f)))
    return h.digest()


def _watched(path: str) -> bool:
    path = os.path.abspath(path)
    return any(path.startswith(os.path.join(root, p) + os.sep) for p, root in _TREES.items())


class _ClosureStamp:
    """A numba cache locator's stamp by import closure, for functions of the watched trees."""

    def get_source_stamp(self):
        if _watched(self._py_file):
            return dependency_stamp(os.path.abspath(self._py_file))
        return super().get_source_stamp()


def _stamped(cls):
    return type("Closure" + cls.__name__, (_ClosureStamp, cls), {"__doc__": f"numba's {cls.__name__}, stamped by "
                                                                              "import closure (isa.numba_cache)."})


def _numba_class(*names):
    """A class of `numba.core.caching` by its name in this numba or an earlier one (None: neither)."""
    return next((getattr(caching, n) for n in names if hasattr(caching, n)), None)


_IMPL = _numba_class("CacheImpl", "_CacheImpl")
_LOCATORS = {c: _stamped(c) for c in (_numba_class("UserProvidedCacheLocator", "_UserProvidedCacheLocator"),
                                      _numba_class("InTreeCacheLocator", "_InTreeCacheLocator"),
                                      _numba_class("UserWideCacheLocator", "_UserWideCacheLocator")) if c is not None}


def install() -> None:
    """Put the stamped locators in the place of numba's own source-file ones (idempotent)."""
    classes = _IMPL._locator_classes
    classes[:] = [_LOCATORS.get(c, c) for c in classes]


watch(ROOT, ("isa", "gpusim"))
install()
