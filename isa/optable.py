"""The opcode table: `lookup(instr)` finds the entry (`isa.opcodes.OpSpec`) of an instruction in
`OPCODES` (assembled by `isa.semantics` from its family modules), `bind(instr)` specialises it
for execution (`isa.opcodes.Bound`); both name the opcode, kernel and source line of what
they refuse.

Source: PTX ISA, chapter "Instructions".
"""
from __future__ import annotations

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound, OpSpec
from isa.program import Instruction
from isa.semantics import OPCODES


def lookup(instr: Instruction, *, kernel: str | None = None, source: str | None = None) -> OpSpec:
    """The table entry for `instr`, or a clear error naming the opcode and lines."""
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
