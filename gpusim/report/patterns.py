"""What a kernel's source says about its accesses, for the verdict's advice and its count of
index arithmetic: which shared arrays a line indexes and with how many dimensions, the
arrays' declared shapes, and which lines only compute indices or control flow.

Read from the kernel's Python source (`ast`), never executed:
- shared arrays: `name = cuda.shared.array(shape, dtype)` (any callee ending in
  `.shared.array`); the shape's names are resolved from the module's constant
  assignments (`TILE = 32`, `TILE + 1`) and the integer names it imports from modules
  already loaded (read from `sys.modules`), else left unknown;
- a line's subscripts: `name[a, b]` is a 2-D access of `name`, `name[a]` a 1-D one;
- index names: variables that appear in a subscript of any array, and (transitively) the
  variables they are computed from (`k = i * w + j; x[k]`: k, i, j and w);
- control lines: `if`/`while` conditions and `for` headers;
- steering names: variables in conditions and loop bounds, and what they are computed from;
- work lines: any other assignment (or augmented assignment) whose target is neither an
  index nor a steering name: integer arithmetic there is the kernel's work, not overhead.

Not modelled: device functions' bodies (their lines belong to the call site in the
counters); arrays passed in by the caller (`cuda.shared.array` in another function);
names rebound to different roles.
"""
from __future__ import annotations

import ast
import linecache
import sys
from dataclasses import dataclass, field
from functools import lru_cache


@dataclass(frozen=True)
class SourceFacts:
    shared_shapes: dict = field(default_factory=dict)      # shared array name -> shape tuple (ints or None)
    subscripts: dict = field(default_factory=dict)         # line -> ((array name, dims), ...)
    index_names: frozenset = frozenset()
    control_lines: frozenset = frozenset()
    work_lines: frozenset = frozenset()                    # assignments whose target is no index
    index_lines: frozenset = frozenset()                   # assignments to an index or steering name

    def shared_on(self, line: int) -> list[tuple[str, int]]:
        """(shared array, dims of the subscript) accessed on `line`."""
        return [(n, d) for n, d in self.subscripts.get(line, ()) if n in self.shared_shapes]

    def arrays_on(self, line: int) -> list[tuple[str, int]]:
        """(array, dims of the subscript) of every non-shared array accessed on `line`."""
        return [(n, d) for n, d in self.subscripts.get(line, ()) if n not in self.shared_shapes]


def facts(path: str) -> SourceFacts:
    text = "".join(linecache.getlines(path)) if path else ""
    return _facts(text)


@lru_cache(maxsize=64)
def _facts(text: str) -> SourceFacts:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return SourceFacts()
    consts = _module_constants(tree)
    shapes: dict[str, tuple] = {}
    subs: dict[int, list] = {}
    index: set[str] = set()
    feeds: dict[str, set[str]] = {}                        # target -> names its value is computed from
    assigned: dict[int, set[str]] = {}
    control: set[int] = set()
    steer: set[str] = set()                                # names in conditions and loop bounds
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _is_shared_array(node.value):
            for t in node.targets:
                if isinstance(t, ast.Name) and node.value.args:
                    shapes[t.id] = _shape(node.value.args[0], consts)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            dims = len(node.slice.elts) if isinstance(node.slice, ast.Tuple) else 1
            for ln in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                subs.setdefault(ln, []).append((node.value.id, dims))
            index.update(n.id for n in ast.walk(node.slice) if isinstance(n, ast.Name))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)
                     and isinstance(n.ctx, ast.Store)}
            used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} if node.value else set()
            for t in names:
                feeds.setdefault(t, set()).update(used)
            assigned.setdefault(node.lineno, set()).update(names)
        if isinstance(node, (ast.If, ast.While)):
            control.update(range(node.test.lineno, (node.test.end_lineno or node.test.lineno) + 1))
            steer.update(n.id for n in ast.walk(node.test) if isinstance(n, ast.Name))
        if isinstance(node, ast.For):
            control.update(range(node.lineno, (node.iter.end_lineno or node.lineno) + 1))
            steer.update(n.id for n in ast.walk(node.iter) if isinstance(n, ast.Name))
    _close(index, feeds)                                   # what indices are computed from is index arithmetic too
    _close(steer, feeds)                                   # and what conditions and trip counts are computed from
    work = {ln for ln, names in assigned.items() if names and not names & (index | steer)}
    idx = {ln for ln, names in assigned.items() if names & (index | steer)}
    return SourceFacts(shapes, {k: tuple(v) for k, v in subs.items()}, frozenset(index), frozenset(control),
                       frozenset(work - control), frozenset(idx - control))


def _close(names: set[str], feeds: dict[str, set[str]]) -> None:
    """Add to `names` every name they are (transitively) computed from."""
    todo = list(names)
    while todo:
        for x in feeds.get(todo.pop(), ()):
            if x not in names:
                names.add(x)
                todo.append(x)


def _is_shared_array(call: ast.Call) -> bool:
    f = call.func
    return isinstance(f, ast.Attribute) and f.attr == "array" and isinstance(f.value, ast.Attribute) \
        and f.value.attr == "shared"


def _module_constants(tree) -> dict[str, int]:
    """Integer constants of the module: its own assignments, and names it imports from a
    module already loaded (read from `sys.modules`, nothing imported here)."""
    out: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mod = sys.modules.get(node.module)
            for a in node.names:
                v = getattr(mod, a.name, None) if mod is not None else None
                if isinstance(v, int) and not isinstance(v, bool):
                    out[a.asname or a.name] = v
        if isinstance(node, ast.Assign):
            for t, v in _pairs(node):
                val = _int(v, out)
                if val is not None:
                    out[t] = val
    return out


def _pairs(node: ast.Assign):
    for t in node.targets:
        if isinstance(t, ast.Name):
            yield t.id, node.value
        elif isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(t.elts) == len(node.value.elts):
            for a, b in zip(t.elts, node.value.elts):
                if isinstance(a, ast.Name):
                    yield a.id, b


_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.FloorDiv: lambda a, b: a // b if b else None, ast.LShift: lambda a, b: a << b if 0 <= b < 64 else None}


def _int(node, consts: dict[str, int]) -> int | None:
    """An integer constant expression of literals, known names, + - * // <<; else None."""
    if isinstance(node, ast.Constant):
        v = node.value
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _int(node.left, consts), _int(node.right, consts)
        return None if a is None or b is None else _OPS[type(node.op)](a, b)
    return None


def _shape(node, consts) -> tuple:
    if isinstance(node, ast.Tuple):
        return tuple(_int(e, consts) for e in node.elts)
    return (_int(node, consts),)
