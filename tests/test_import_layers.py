"""The import layers of isa/ and gpusim/, read from the source (ast: nothing is imported), and
the rule that an import inside a function says why (there and in programs/, validate/ and benchmarks/).

The graph has one node per module and an edge for every import of another module of
isa/ or gpusim/, at the top of a file or inside a function (an import inside a function
is a dependency too, only a later one); imports under `if TYPE_CHECKING:` are left out.
A unit is a package directly in isa/ or gpusim/ with everything under it (`gpusim.frontend`,
`gpusim.cuda`, `isa.semantics`), or the top-level package itself with its own modules
(`isa`: `isa.opcodes`, `isa.inline`, ...; `gpusim`: `gpusim/__init__`, `gpusim.api`, ...).
"""
from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("isa", "gpusim")


def _modules() -> dict[str, Path]:
    out = {}
    for top in TOPS:
        for p in sorted((ROOT / top).rglob("*.py")):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = p
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module of ours that importing `name` names (a package for a name inside it)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _statements(body: list, in_function: bool = False, type_checking: bool = False):
    """(statement, inside a function, under `if TYPE_CHECKING:`) for every statement, nested
    ones included (imports are statements: expressions are not entered)."""
    for node in body:
        yield node, in_function, type_checking
        func = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        tc = type_checking or (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
        for name in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(node, name, []), func, tc and name == "body" or type_checking)
        for h in getattr(node, "handlers", []):
            yield from _statements(h.body, func, type_checking)
        for case in getattr(node, "cases", []):
            yield from _statements(case.body, func, type_checking)


@functools.cache
def _imports(module: str) -> list:
    """[(import node, the modules of ours it names, whether inside a function)] of `module`."""
    return list(_read_imports(module))


def _read_imports(module: str):
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node, in_function, type_checking in _statements(tree.body):
        if type_checking:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        targets = {t for t in map(_resolve, names) if t and t != module}
        yield node, targets, in_function


@functools.cache
def _graph() -> dict[str, set[str]]:
    edges = defaultdict(set)
    for m in MODULES:
        for _, targets, _ in _imports(m):
            edges[m] |= targets
    return edges


def _unit(module: str) -> str:
    sub = ".".join(module.split(".")[:2])
    return sub if MODULES.get(sub, Path()).name == "__init__.py" else module.split(".")[0]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for root in MODULES:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycle_crosses_a_package_boundary():
    crossing = [c for c in _cycles(_graph()) if len({_unit(m) for m in c}) > 1]
    assert not crossing, "import cycles across units: " + "; ".join(
        f"{sorted({_unit(m) for m in c})} through {c}" for c in crossing)


def test_the_cycle_finder_sees_a_cycle_across_units():
    edges = defaultdict(set, {"gpusim.api": {"gpusim.frontend.source"}, "gpusim.frontend.source": {"gpusim.api"}})
    (cycle,) = _cycles(edges)
    assert cycle == ["gpusim.api", "gpusim.frontend.source"]
    assert {_unit(m) for m in cycle} == {"gpusim", "gpusim.frontend"}
    assert _unit("isa.opcodes") == "isa" != _unit("isa.semantics.tensor") == "isa.semantics"


def _reachable(start: str, edges) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for w in edges[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_gpusim_api_and_everything_below_it_never_import_the_drop_ins():
    below = _reachable("gpusim.api", _graph())
    assert "gpusim.frontend.compile" in below and "gpusim.timing.engine" in below
    assert not {m for m in below if _unit(m) in ("gpusim.cuda", "gpusim.cupy")}


def test_isa_imports_nothing_of_gpusim():
    edges = _graph()
    assert not {(m, t) for m in MODULES if m.startswith("isa") for t in edges[m] if t.startswith("gpusim")}


# what `validate measure` and the GPU-side probes import on a GPU machine, where gpusim is not installed
GPU_SIDE = ["validate.heldout", "validate.heldout2, validate.orderings", "validate.mechanisms",
            "validate.shared_banks_probe"]


@pytest.mark.parametrize("modules", GPU_SIDE)
def test_the_gpu_side_imports_nothing_of_gpusim_or_isa(modules):
    code = (f"import sys, {modules}; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('gpusim', 'isa')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def _says_why(lines: list[str], node: ast.stmt) -> bool:
    """A comment on the import's lines (beyond a lint pragma), or on the line just above."""
    for text in lines[node.lineno - 1:node.end_lineno]:
        comment = text.partition("#")[2]
        if re.sub(r"noqa(:\s*[A-Z0-9, ]+)?|type:\s*ignore\S*", "", comment).strip():
            return True
    return node.lineno > 1 and lines[node.lineno - 2].strip().startswith("#")


# the packages above gpusim whose imports inside functions must say why too (not in the layer graph)
USERS = ("programs", "validate", "benchmarks")


def _function_imports(path: Path):
    """Import statements inside functions of the file at `path` (not under `if TYPE_CHECKING:`)."""
    for node, in_function, type_checking in _statements(ast.parse(path.read_text(), str(path)).body):
        if in_function and not type_checking and isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def test_every_import_inside_a_function_says_why():
    bare = []
    paths = list(MODULES.values()) + [p for top in USERS for p in sorted((ROOT / top).rglob("*.py"))]
    for path in paths:
        lines = path.read_text().splitlines()
        for node in _function_imports(path):
            if not _says_why(lines, node):
                bare.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not bare, f"{len(bare)} imports inside functions without a comment saying why:\n" + "\n".join(bare)
