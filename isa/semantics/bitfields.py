"""Bit fields and byte permutes: bfe, bfi, prmt.

Every form ptxas 13 accepts for these opcodes on sm_90, bit-exact. `bfe`/`bfi` follow the ISA
pseudocode (position and length taken from the low 8 bits for 32-bit types, from all 32 bits
for 64-bit types, as H200 does); `prmt`'s modes use the ISA's byte-selection tables.

Sources: PTX ISA 9.0, "Integer Arithmetic Instructions" (bfe, bfi) and "Data Movement and
Conversion Instructions" (prmt); checked against inline-asm runs of each instruction on an
NVIDIA H200 (sm_90), November 2026.
"""
from __future__ import annotations

import numpy as np

from isa.opcodes import OpSpec
from isa.program import Imm
from isa.semantics.bits import int_bound, plain_type
from isa.semantics.integer import arity, check_mods, only_type, unsupported
from isa.types import dtype


def _field(t: str):
    """f(b, c) -> (pos, len, k, mask_k): position, length, number of field bits inside the word,
    and a k-bit mask. 32-bit forms use b & 0xff and c & 0xff as PTX says; 64-bit forms (which
    ptxas emulates) use all 32 bits of b and c (H200 reading: bfe.u64 a, 0x10f, 4 gives 0)."""
    dt = dtype(t)
    w = dt.itemsize * 8
    one = dt.type(1)
    lim = np.uint32(0xFF) if w == 32 else np.uint32(0xFFFF_FFFF)

    def f(b, c):
        pos = (b & lim).astype(dt)
        ln = (c & lim).astype(dt)
        k = np.minimum(ln, np.where(pos < w, dt.type(w) - pos, dt.type(0)))
        return pos, ln, k, (one << k) - one          # numpy: 1 << w == 0, so mask(w) is all ones
    return f


def bind_bfe(instr):
    t = plain_type(instr, 4, {"u32", "s32", "u64", "s64"})
    dt = dtype(t)
    u = np.dtype(f"u{dt.itemsize}")
    field = _field("u32" if dt.itemsize == 4 else "u64")
    msb = u.type(dt.itemsize * 8 - 1)
    if t[0] == "u":
        def fn(a, b, c):
            pos, _, k, m = field(b, c)
            return (a >> pos) & m
    else:
        def fn(a, b, c):
            ua = a.view(u)
            pos, ln, k, m = field(b, c)
            top = np.minimum(pos + ln - u.type(1), msb)
            sbit = ((ua >> top) & u.type(1)).astype(bool) & (ln != 0)
            return (((ua >> pos) & m) | np.where(sbit, ~m, u.type(0))).view(dt)
    return int_bound(t, 3, fn, srcs=(t, "u32", "u32"))


def bind_bfi(instr):
    t = plain_type(instr, 5, {"b32", "b64"})
    field = _field("u32" if t == "b32" else "u64")

    def fn(a, b, c, d):
        pos, _, k, m = field(c, d)
        m = m << pos
        return (b & ~m) | ((a << pos) & m)
    return int_bound(t, 4, fn, srcs=(t, t, "u32", "u32"))


# ----------------------------------------------------------------------------- prmt
# Byte selectors for d.b0..d.b3 per value of c[1:0] (PTX ISA, prmt mode table).
_PRMT_MODES = {
    "f4e": ((0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6)),
    "b4e": ((0, 7, 6, 5), (1, 0, 7, 6), (2, 1, 0, 7), (3, 2, 1, 0)),
    "rc8": ((0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)),
    "ecl": ((0, 1, 2, 3), (1, 1, 2, 3), (2, 2, 2, 3), (3, 3, 3, 3)),
    "ecr": ((0, 0, 0, 0), (0, 1, 1, 1), (0, 1, 2, 2), (0, 1, 2, 3)),
    "rc16": ((0, 1, 0, 1), (2, 3, 2, 3), (0, 1, 0, 1), (2, 3, 2, 3)),
}


_NIBBLES = np.array([0, 4, 8, 12], dtype=np.uint32)


def _prmt_bytes(a, b, c):
    """The 8 bytes of {b, a} as a (..., 8) uint8 array (byte k = bits 8k+7..8k), little-endian."""
    v = np.empty(np.broadcast(a, b, c).shape + (2,), dtype=np.uint32)
    v[..., 0] = a
    v[..., 1] = b
    return v.view(np.uint8)


def _prmt_pack(out):
    return np.ascontiguousarray(out).view(np.uint32)[..., 0]


def bind_prmt(instr):
    arity(instr, 4)
    mods = check_mods(instr, set(_PRMT_MODES))
    only_type(instr, {"b32"})
    if len(mods) > 1:
        raise unsupported(instr, "at most one mode")
    if mods:
        table = np.array(_PRMT_MODES[mods[0]], dtype=np.intp)          # [c & 3][byte]

        def fn(a, b, c):
            by = _prmt_bytes(a, b, c)
            sel = table[np.asarray(c & np.uint32(3), dtype=np.intp)]
            return _prmt_pack(np.take_along_axis(by, np.broadcast_to(sel, by.shape[:-1] + (4,)), -1))
        return int_bound("b32", 3, fn)
    sel_op = instr.operands[3]
    if isinstance(sel_op, Imm) and isinstance(sel_op.value, int):     # usual: a constant selector
        ctl = [(sel_op.value >> (4 * i)) & 0xF for i in range(4)]
        idx = [x & 7 for x in ctl]
        signed = [i for i in range(4) if ctl[i] & 8]

        def fn(a, b, c):
            out = _prmt_bytes(a, b, c)[..., idx]
            if signed:
                out[..., signed] = np.where(out[..., signed] >= 128, np.uint8(0xFF), np.uint8(0))
            return _prmt_pack(out)
        return int_bound("b32", 3, fn)

    def fn(a, b, c):
        by = _prmt_bytes(a, b, c)
        ctl = (np.asarray(c)[..., None] >> _NIBBLES) & np.uint32(0xF)
        out = np.take_along_axis(by, np.broadcast_to((ctl & np.uint32(7)).astype(np.intp), by.shape[:-1] + (4,)), -1)
        rep = np.where(out >= 128, np.uint8(0xFF), np.uint8(0))
        return _prmt_pack(np.where(ctl >= 8, rep, out))
    return int_bound("b32", 3, fn)


ENTRIES: list[OpSpec] = [
    OpSpec("bfe", "alu", bind_bfe, "d = bit field a[pos +: len], zero- or sign-extended"),
    OpSpec("bfi", "alu", bind_bfi, "d = b with a[0 +: len] inserted at pos"),
    OpSpec("prmt", "alu", bind_prmt, "d = four bytes picked from {b, a}"),
]
