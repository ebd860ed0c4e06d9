"""Issue 27's shape rules for isa/ and gpusim/, read from the source: modules stay small by being
split into units, not by cutting one class into mixin files."""
from __future__ import annotations

import ast
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for top in ("isa", "gpusim") for p in (ROOT / top).rglob("*.py"))


def test_the_median_module_of_isa_and_gpusim_stays_at_most_160_lines():
    assert statistics.median(len(p.read_text().splitlines()) for p in SOURCES) <= 160


def _is_exception(cls: ast.ClassDef) -> bool:
    """gpusim.errors' classes that are also isa's exception of the same name (`_isa.<Name>`)."""
    return any(ast.unparse(b) == f"_isa.{cls.name}" for b in cls.bases)


def test_no_class_of_isa_or_gpusim_is_composed_of_mixins():
    # a class with several bases is an exception that is also isa's (gpusim.errors), nothing else
    mixed = [f"{p.relative_to(ROOT)}: {n.name}" for p in SOURCES for n in ast.walk(ast.parse(p.read_text()))
             if isinstance(n, ast.ClassDef) and len(n.bases) > 1 and not _is_exception(n)]
    assert not mixed, mixed
