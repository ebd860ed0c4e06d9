"""Memory instructions: ld, ldu, st, prefetch. Their effect needs machine state, so
the executor (`gpusim.functional`) carries them out; this entry states their operand
types and unit class.

`ld.{space}{.v2,.v4}.type d, [a]`: destinations are the loaded values (a vector
operand flattens to its elements), the source is the address (u64, or u32 for
32-bit shared addresses). `st.{space}{.vN}.type [a], b`: no destinations; sources
are the address then the values. Cache operators (.ca .cg .cs .lu .cv .wb .wt),
`.nc`, `.volatile`, `.relaxed/.acquire/.release` and scopes are accepted and do not
change the value semantics here.

Source: PTX ISA, "Data Movement and Conversion Instructions: ld, ldu, st, prefetch".
"""
from __future__ import annotations

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound, OpSpec
from isa.program import Instruction, Vector


def _vec_width(instr: Instruction) -> int:
    for m in instr.modifiers:
        if m in ("v2", "v4", "v8"):
            return int(m[1:])
    return 1


def _value_type(instr: Instruction) -> str:
    ts = instr.types
    if len(ts) != 1:
        raise UnsupportedInstruction(instr.mnemonic, reason="expected exactly one type")
    return ts[0]


def bind_ld(instr: Instruction) -> Bound:
    t = _value_type(instr)
    n = _vec_width(instr)
    d = instr.operands[0]
    if n > 1 and not (isinstance(d, Vector) and len(d.elems) == n):
        raise UnsupportedInstruction(instr.mnemonic, reason=f"vector load needs a {n}-element destination")
    return Bound((t,) * n, ("u64",), None, "ldst")


def bind_st(instr: Instruction) -> Bound:
    t = _value_type(instr)
    n = _vec_width(instr)
    return Bound((), ("u64",) + (t,) * n, None, "ldst")


def bind_prefetch(instr: Instruction) -> Bound:
    return Bound((), ("u64",), None, "ldst")


ENTRIES = [
    OpSpec("ld", "mem", bind_ld, "load from a state space (or generic address) into registers"),
    OpSpec("ldu", "mem", bind_ld, "load a value uniform across the warp (same as ld here)"),
    OpSpec("st", "mem", bind_st, "store registers to a state space (or generic address)"),
    OpSpec("prefetch", "mem", bind_prefetch, "cache hint; no architectural effect"),
    OpSpec("prefetchu", "mem", bind_prefetch, "cache hint; no architectural effect"),
]
