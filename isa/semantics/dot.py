"""Integer dot products: dp4a (four 8-bit products), dp2a (two 16x8-bit products, .lo/.hi),
accumulated into 32 bits.

Every form ptxas 13 accepts for these opcodes on sm_90, bit-exact.

Sources: PTX ISA 9.0, "Integer Arithmetic Instructions" (dp4a, dp2a); checked against
inline-asm runs of each instruction on an NVIDIA H200 (sm_90), November 2026.
"""
from __future__ import annotations

import numpy as np

from isa.opcodes import OpSpec
from isa.semantics.bits import int_bound
from isa.semantics.integer import arity, check_mods, unsupported
from isa.types import dtype


def _bytes(x, signed: bool, idx):
    v = (x >> np.uint32(8 * idx)) & np.uint32(0xFF)
    v = v.astype(np.int64)
    return np.where(v >= 128, v - 256, v) if signed else v


def _halves(x, signed: bool, idx):
    v = ((x >> np.uint32(16 * idx)) & np.uint32(0xFFFF)).astype(np.int64)
    return np.where(v >= 32768, v - 65536, v) if signed else v


def _dot_types(instr, ts):
    if len(ts) != 2 or any(t not in ("u32", "s32") for t in ts):
        raise unsupported(instr, "needs .atype.btype from .u32/.s32")
    return ts, ("u32" if ts == ("u32", "u32") else "s32")


def bind_dp4a(instr):
    arity(instr, 4)
    check_mods(instr, set())
    (ta, tb), tc = _dot_types(instr, instr.types)
    sa, sb, out = ta == "s32", tb == "s32", dtype(tc)

    def fn(a, b, c):
        a, b = a.view(np.uint32), b.view(np.uint32)
        acc = c.astype(np.int64)
        for i in range(4):
            acc = acc + _bytes(a, sa, i) * _bytes(b, sb, i)
        return acc.astype(out)
    return int_bound(tc, 3, fn, srcs=(ta, tb, tc))


def bind_dp2a(instr):
    arity(instr, 4)
    mods = check_mods(instr, {"lo", "hi"})
    if len(mods) != 1:
        raise unsupported(instr, "needs .lo or .hi")
    (ta, tb), tc = _dot_types(instr, instr.types)
    sa, sb, out, base = ta == "s32", tb == "s32", dtype(tc), (0 if mods[0] == "lo" else 2)

    def fn(a, b, c):
        a, b = a.view(np.uint32), b.view(np.uint32)
        acc = c.astype(np.int64)
        for i in range(2):
            acc = acc + _halves(a, sa, i) * _bytes(b, sb, base + i)
        return acc.astype(out)
    return int_bound(tc, 3, fn, srcs=(ta, tb, tc))


ENTRIES: list[OpSpec] = [
    OpSpec("dp4a", "alu", bind_dp4a, "d = c + four-way byte dot product"),
    OpSpec("dp2a", "alu", bind_dp2a, "d = c + two-way 16x8-bit dot product"),
]
