"""The opcode table, assembled from one module per instruction family.

Each family module exposes `ENTRIES: list[OpSpec]`; `OPCODES` maps opcode name ->
entry. A name defined twice is a programming error caught at import.
"""
from __future__ import annotations

import importlib

from isa.opcodes import OpSpec

_FAMILIES = ("integer", "bits", "bitfields", "dot", "compare", "moves", "atomics", "floating", "transcendental",
             "convert", "memory", "control", "warp", "tensor", "wgmma", "wmma", "async_copy", "cluster")


def _collect() -> dict[str, OpSpec]:
    table: dict[str, OpSpec] = {}
    for fam in _FAMILIES:
        try:
            mod = importlib.import_module(f"isa.semantics.{fam}")
        except ModuleNotFoundError as e:
            if e.name == f"isa.semantics.{fam}":
                continue            # a family not written yet
            raise
        for spec in getattr(mod, "ENTRIES", ()):
            if spec.name in table:
                raise RuntimeError(f"opcode {spec.name!r} defined twice (isa.semantics.{fam})")
            table[spec.name] = spec
    return table


OPCODES: dict[str, OpSpec] = _collect()
