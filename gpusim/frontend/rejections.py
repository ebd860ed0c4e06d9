"""Why a kernel cannot be compiled or linked, in the user's terms: the messages of the
`UnsupportedKernel` errors `compile.py` raises.

- `rejected`: Numba refused the kernel. Numba's first meaningful line plus the Python
  source line; a recursive device function (Numba's "insert_unresolved_ref" attribute
  error) names the function and its call cycle; a store into a read-only array names the
  argument and the line.
- `isa_error`: the PTX could not be read or linked (`isa.errors`): device printf is named
  as what it is, with the Python line of the call, and the error becomes gpusim's
  (`gpusim.errors.from_isa`). (Cooperative grid sync is defined, `cg.py`.)
"""
from __future__ import annotations

import inspect
import linecache
import os
import re
import types

from gpusim.errors import UnsupportedKernel, from_isa


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def rejected(name: str, pyfunc: types.FunctionType, exc: BaseException, argtypes: tuple = ()) -> UnsupportedKernel:
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
        at = f" (defined at {source_file(fn)}:{def_line(fn)})" if isinstance(fn, types.FunctionType) else ""
        return UnsupportedKernel(f"kernel {name} cannot be compiled: device function {cycle[0]} is recursive "
                                 f"({' -> '.join(cycle)}){at}. Numba compiles a recursive device function only "
                                 "with an explicit signature, e.g. @cuda.jit(\"int64(int64)\", device=True) "
                                 "(gpusim then runs it on a per-thread call stack)")
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
            where = f" (at {source_file(pyfunc)}:{start + k}: {line.strip()})"
            break
    what = ", ".join(f"argument {i} ({p})" for i, p in ro) or "an argument"
    return UnsupportedKernel(f"kernel {name} stores into {what}, a read-only array (flags.writeable == False)"
                             f"{where}; pass a writable array for the arguments the kernel writes")


def isa_error(e, ck, text: str | None = None):
    """The gpusim error for an `isa` error met while reading or linking `ck`'s PTX, its
    message naming the kernel, what is unsupported in Python terms, and the source line
    (`text`: the PTX as parsed, when it could not be: the line is found from its `.loc`s)."""
    callee = getattr(e, "callee", "") or ""
    line = getattr(e, "ptx_line", 0)
    where = _ptx_source(ck, line) if text is None else _loc_before(text, line)
    if callee == "vprintf":
        msg = f"kernel {ck.name}: print() in a kernel is not supported (device printf{where})"
    elif str(e).startswith(f"kernel {ck.name}"):
        msg = str(e)
    else:
        python_line = where and not where.startswith(" at PTX line") and "(at " not in str(e)
        msg = f"kernel {ck.name}: {e}" + (f" ({where.strip()})" if python_line else "")
    return from_isa(e, msg)


def _ptx_source(ck, ptx_line: int) -> str:
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


_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s*,\s*\d+\s*,\s*\d+)?(?:\s+"([^"]*)")?', re.M)


def _loc_before(text: str, ptx_line: int) -> str:
    """' at file:line: code' from the last `.loc` before PTX line `ptx_line` of `text` (PTX that
    did not parse has no instructions to take it from), else ' at PTX line N'."""
    if not ptx_line:
        return ""
    lines = text.splitlines()
    files = {}
    for m in _FILE.finditer(text):
        files[int(m.group(1))] = os.path.join(m.group(2), m.group(3)) if m.group(3) else m.group(2)
    for ln in reversed(lines[:ptx_line - 1]):
        m = _LOC.match(ln)
        if m and int(m.group(2)) > 0 and int(m.group(1)) in files:
            path, n = files[int(m.group(1))], int(m.group(2))
            code = linecache.getline(path, n).strip()
            return f" at {path}:{n}: {code}" if code else f" at {path}:{n}"
    return f" at PTX line {ptx_line}"


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
    src = source_file(pyfunc)
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
        return f" (kernel defined at {src}:{def_line(pyfunc)})"
    code = linecache.getline(src, line).strip()
    return f" (at {src}:{line}: {code})" if code else f" (at {src}:{line})"


def source_file(pyfunc: types.FunctionType) -> str:
    f = pyfunc.__code__.co_filename
    return f if f.startswith("<") else os.path.abspath(f)


def def_line(pyfunc: types.FunctionType) -> int:
    """The line of `def` (co_firstlineno points at the first decorator)."""
    try:
        body, start = inspect.getsourcelines(pyfunc)
    except (OSError, TypeError):
        return pyfunc.__code__.co_firstlineno
    for i, ln in enumerate(body):
        if ln.lstrip().startswith(("def ", "async def ")):
            return start + i
    return start
