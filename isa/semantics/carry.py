"""Extended-precision integer arithmetic through the carry flag: add.cc, addc, sub.cc, subc,
mad.cc, madc.

NVVM emits these for Numba kernels through libdevice's inline asm (the Payne-Hanek argument
reduction of `math.sin`/`math.cos` uses `mad.lo.cc.u32` + `madc.hi.u32`), so they are modelled.

The carry mechanism: CC.CF is one hidden per-thread 1-bit register. The executor holds it as a
predicate register named `CARRY_FLAG` ('%cc.cf', initially false) and asks
`implicit_operands(instr)` which hidden operands an instruction has: `(extra_dsts, extra_srcs)`,
each a tuple of `Reg(CARRY_FLAG)` or empty. These come AFTER the explicit ones, in both the
operand lists and the Bound: `add.cc.u32 d, a, b` binds to dst_types ('u32', 'pred'),
src_types ('u32', 'u32') and fn returns (d, carry_out); `addc.u32 d, a, b` binds to
dst_types ('u32',), src_types ('u32', 'u32', 'pred') and fn(a, b, carry_in) returns d.

Semantics: add.cc: d = a + b, CF = unsigned carry-out; addc: d = a + b + CF. The subtract
forms compute a + ~b + carry-in, as the hardware does: sub.cc: d = a - b, CF = NOT borrow
(1 when a >= b unsigned); subc: d = a - b - (1 - CF), CF = NOT borrow. PTX's text says CF
holds the borrow and subc computes a - (b + CF); chains of sub.cc/subc give the same d either
way, but an addc after a sub.cc reads CF = NOT borrow on an H200 (sub.cc 0 - 0 then
addc 0 + 0 gives 1), so the flag is modelled as the hardware holds it.
mad{.lo,.hi}.cc: d = t + c with t the low/high half of a * b, CF = carry-out of that addition;
madc: d = t + c + CF. Types .u32/.s32/.u64/.s64 (the bit patterns are added; signedness only
picks the signed high half of mad.hi).

Sources: PTX ISA 9.0, "Extended-Precision Integer Arithmetic Instructions"; checked against
inline-asm add.cc/addc/sub.cc/subc/mad.cc/madc chains on an NVIDIA H200 (sm_90), November 2026.
"""
from __future__ import annotations

import numpy as np

from isa.opcodes import Bound
from isa.program import Instruction, Reg
from isa.types import dtype, unsigned_dtype

CARRY_FLAG = "%cc.cf"
CARRY_TYPES = frozenset({"u32", "s32", "u64", "s64"})
_CARRY_OPCODES = frozenset({"add", "sub", "mad", "addc", "subc", "madc"})


def implicit_operands(instr: Instruction) -> tuple[tuple[Reg, ...], tuple[Reg, ...]]:
    """Hidden (destinations, sources) of `instr`: the carry flag, where it writes or reads it."""
    if instr.opcode not in _CARRY_OPCODES:
        return (), ()
    reads = instr.opcode.endswith("c")
    writes = "cc" in instr.modifiers
    cf = (Reg(CARRY_FLAG),)
    return (cf if writes else ()), (cf if reads else ())


def _add_carry(t: str, cin: bool, cout: bool, sub: bool = False):
    """fn(a, b[, cf]) -> d or (d, cf): d = a + b + cf, or for sub d = a + ~b + (cf, or 1 without
    carry-in), on the unsigned bit patterns; cf out is the carry of that addition."""
    dt = dtype(t)
    u = unsigned_dtype(dt.itemsize)

    def fn(a, b, *cf):
        ua, ub = a.view(u), b.view(u)
        if sub:
            ub = ~ub
        s = ua + ub
        carry = s < ua
        if cin or sub:
            c = cf[0].astype(u) if cin else u.type(1)
            s2 = s + c
            carry = carry | (s2 < s)
            s = s2
        return (s.view(dt), carry) if cout else s.view(dt)
    return fn


def bind_carry(instr: Instruction, unsupported, mul_hi) -> Bound:
    """Bound for any carry form; `unsupported(instr, reason)` builds the error to raise and
    `mul_hi(t)` gives the high-half multiply of type t (both from isa.semantics.integer,
    which owns the add/sub/mad/addc/subc/madc OpSpecs)."""
    op = instr.opcode
    base = op[:-1] if op in ("addc", "subc", "madc") else op
    cin, cout = op != base, "cc" in instr.modifiers
    mods = [m for m in instr.modifiers if m != "cc"]
    if len(instr.types) != 1 or instr.types[0] not in CARRY_TYPES:
        raise unsupported(instr, "carry arithmetic takes .u32, .s32, .u64 or .s64")
    t = instr.types[0]
    n_src = 3 if base == "mad" else 2
    if len(instr.operands) != n_src + 1:
        raise unsupported(instr, f"expects {n_src + 1} operands, got {len(instr.operands)}")
    dsts = (t, "pred") if cout else (t,)
    srcs = (t,) * n_src + (("pred",) if cin else ())
    if base in ("add", "sub"):
        if mods:
            raise unsupported(instr, f"modifier .{mods[0]} not supported")
        fn = _add_carry(t, cin, cout, sub=base == "sub")
        return Bound(dsts, srcs, fn, "int")
    if mods not in (["lo"], ["hi"]):
        raise unsupported(instr, "needs .lo or .hi")
    half = np.multiply if mods == ["lo"] else mul_hi(t)
    add = _add_carry(t, cin, cout)
    return Bound(dsts, srcs, lambda a, b, c, *cf: add(half(a, b), c, *cf), "int")
