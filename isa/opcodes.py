"""The opcode table: one declarative entry per PTX opcode the simulator understands.

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

The entries themselves are declared in `isa.semantics` (one module per family) and
collected here into `OPCODES`.

Source: PTX ISA, chapter "Instructions".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from isa.errors import UnsupportedInstruction
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


def lookup(instr: Instruction, *, kernel: str | None = None, source: str | None = None) -> OpSpec:
    """The table entry for `instr`, or a clear error naming the opcode and lines."""
    from isa.semantics import OPCODES
    spec = OPCODES.get(instr.opcode)
    if spec is None:
        src = source or (f"{instr.loc.file}:{instr.loc.line}" if instr.loc else None)
        raise UnsupportedInstruction(instr.mnemonic, ptx_line=instr.ptx_line, source=src, kernel=kernel)
    return spec


def bind(instr: Instruction, *, kernel: str | None = None) -> tuple[OpSpec, Bound]:
    """Look up and bind `instr`, re-raising binding failures with kernel and source line."""
    spec = lookup(instr, kernel=kernel)
    try:
        return spec, spec.bind(instr)
    except UnsupportedInstruction as e:
        src = f"{instr.loc.file}:{instr.loc.line}" if instr.loc else None
        reason = str(e).split("(", 1)[1].split(")", 1)[0] if "(" in str(e) else "unsupported form"
        raise UnsupportedInstruction(instr.mnemonic, ptx_line=instr.ptx_line, source=src,
                                     kernel=kernel, reason=reason) from None
