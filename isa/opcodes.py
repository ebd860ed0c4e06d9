"""The opcode table's entries: one declarative entry per PTX opcode the simulator understands.

An entry (`OpSpec`) says what kind of instruction it is, which functional-unit class
executes it, and how to give it meaning. For `kind == "alu"` entries, `bind(instr)`
returns a `Bound`: the PTX type of every destination and source *value* (vector
operands and `%p|%q` pairs flattened, in operand order) and `fn`, a function of the
source values (numpy arrays over lanes, or numpy scalars for uniform values, already
converted to `src_types`) that returns the destination value, or a tuple of them when
there are several. `fn` must never return one of its inputs (return a fresh array).

Entries of other kinds (`mem`, `control`, `sync`, `warp`) are carried out by the
executor in `gpusim.functional`, which needs machine state; their `bind` still
reports operand types, and `atom`/`red` bind the combining function.

The entries themselves are declared in `isa.semantics` (one module per family, each
importing these types) and collected there into `OPCODES`; `isa.optable` looks
instructions up in it (`lookup`, `bind`).

Source: PTX ISA, chapter "Instructions".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from isa.program import Instruction

# Functional-unit classes: what the timing model schedules on.
UNIT_CLASSES = ("int", "fp32", "fp64", "fp16", "sfu", "ldst", "branch", "sync", "shuffle", "misc", "tensor")
# "tensor": warp- or warpgroup-wide tensor-core and matrix-memory instructions (mma, ldmatrix, wgmma);
# "async": asynchronous copies and their completion (cp.async, mbarrier) and warp-level helpers
# (elect.sync, setmaxnreg); both carried out by gpusim.functional.tensor_ops / async_ops
KINDS = ("alu", "mem", "control", "sync", "warp", "tensor", "async")


@dataclass(frozen=True, slots=True)
class Bound:
    """An instruction specialised for execution (see module docstring)."""
    dst_types: tuple[str, ...]
    src_types: tuple[str, ...]
    fn: Callable[..., Any] | None
    unit: str


@dataclass(frozen=True, slots=True)
class OpSpec:
    """One opcode: `bind(instr) -> Bound` (raises UnsupportedInstruction for type or
    modifier combinations it does not implement); `kind` in KINDS; `doc` one line."""
    name: str
    kind: str
    bind: Callable[[Instruction], Bound]
    doc: str

