"""Compiled integer forms of the fast core: add/sub (wrapping; `.sat.s32`), mul/mad
`.lo/.hi/.wide`, neg, abs, min, max, div and rem (x / 0 = all ones, INT_MIN / -1 = INT_MIN,
INT_MIN % -1 = 0, as `isa.semantics.integer`), and, or, xor, not, shl/shr (amounts at or
past the width give 0 or the sign fill, as numpy's shifts in `isa.semantics.bits`).
Each maker returns an emitter `(IR, sources) -> destinations`, or None (not compiled)."""
from __future__ import annotations

from llvmlite import ir

from gpusim.functional.fastpath.alu_ir import I32, I64, IR, ext as _ext, one_type as _one_type
from isa.types import SIGNED, dtype

INT_TYPES = frozenset({"s16", "s32", "s64", "u16", "u32", "u64"})
_WIDE = {"s16": "s32", "u16": "u32", "s32": "s64", "u32": "u64"}


def _mul_hi(e: IR, a, b_, t: str):
    w = dtype(t).itemsize * 8
    wide = ir.IntType(2 * w)
    p = e.b.mul(_ext(e, a, t, wide), _ext(e, b_, t, wide))
    return e.b.trunc(e.b.lshr(p, ir.Constant(wide, w)), ir.IntType(w))


def _sat32(e: IR, x64):
    b = e.b
    lo, hi = ir.Constant(I64, -(1 << 31)), ir.Constant(I64, (1 << 31) - 1)
    x = b.select(b.icmp_signed("<", x64, lo), lo, x64)
    x = b.select(b.icmp_signed(">", x, hi), hi, x)
    return b.trunc(x, I32)


def _int_arith(ins, bound):
    op, mods = ins.opcode, set(ins.modifiers)
    t = _one_type(ins, INT_TYPES)
    if t is None or "cc" in mods:
        return None
    if op in ("add", "sub"):
        if mods - {"sat"} or (mods and t != "s32"):
            return None
        if mods:
            def sat(e, s):
                a, b_ = (e.b.sext(x, I64) for x in s)
                return [_sat32(e, e.b.add(a, b_) if op == "add" else e.b.sub(a, b_))]
            return sat
        return (lambda e, s: [e.b.add(*s)]) if op == "add" else (lambda e, s: [e.b.sub(*s)])
    if op in ("mul", "mad"):
        modes = mods & {"lo", "hi", "wide"}
        if len(modes) != 1 or mods - modes:
            return None
        mode = modes.pop()
        if mode == "lo":
            return (lambda e, s: [e.b.mul(s[0], s[1])]) if op == "mul" else \
                (lambda e, s: [e.b.add(e.b.mul(s[0], s[1]), s[2])])
        if mode == "hi":
            return (lambda e, s: [_mul_hi(e, s[0], s[1], t)]) if op == "mul" else \
                (lambda e, s: [e.b.add(_mul_hi(e, s[0], s[1], t), s[2])])
        if t not in _WIDE:
            return None
        wt = ir.IntType(2 * dtype(t).itemsize * 8)

        def wide(e, s):
            p = e.b.mul(_ext(e, s[0], t, wt), _ext(e, s[1], t, wt))
            return [p if op == "mul" else e.b.add(p, s[2])]
        return wide
    if mods:
        return None
    if op == "neg" and t in SIGNED:
        return lambda e, s: [e.b.neg(s[0])]
    if op == "abs" and t in SIGNED:
        return lambda e, s: [e.b.select(e.b.icmp_signed("<", s[0], ir.Constant(s[0].type, 0)), e.b.neg(s[0]), s[0])]
    if op in ("min", "max"):
        cmp = "<" if op == "min" else ">"
        signed = t in SIGNED

        def minmax(e, s):
            c = e.b.icmp_signed(cmp, s[0], s[1]) if signed else e.b.icmp_unsigned(cmp, s[0], s[1])
            return [e.b.select(c, s[0], s[1])]
        return minmax
    if op in ("div", "rem"):
        return _divrem(op == "rem", t)
    return None


def _divrem(rem: bool, t: str):
    signed = t in SIGNED
    w = dtype(t).itemsize * 8

    def fn(e, s):
        b = e.b
        a, d = s
        ty = a.type
        zero, one, ones = ir.Constant(ty, 0), ir.Constant(ty, 1), ir.Constant(ty, (1 << w) - 1)
        z = b.icmp_unsigned("==", d, zero)
        if not signed:
            dd = b.select(z, one, d)
            return [b.select(z, ones, b.urem(a, dd) if rem else b.udiv(a, dd))]
        m1 = b.icmp_unsigned("==", d, ones)                         # d == -1
        bad = b.or_(z, b.and_(m1, b.icmp_unsigned("==", a, ir.Constant(ty, 1 << (w - 1))))) if not rem \
            else b.or_(z, m1)
        dd = b.select(bad, one, d)
        return [b.select(z, ones, b.srem(a, dd) if rem else b.sdiv(a, dd))]
    return fn


# ----------------------------------------------------------------------------- logic and shifts
_LOGIC = frozenset({"pred", "b16", "b32", "b64"})
_B = frozenset({"b16", "b32", "b64"})


def _logic(ins, bound):
    if ins.modifiers:
        return None
    op = ins.opcode
    if op in ("and", "or", "xor", "not") and _one_type(ins, _LOGIC):
        if op == "not":
            return lambda e, s: [e.b.not_(s[0])]
        f = {"and": "and_", "or": "or_", "xor": "xor"}[op]
        return lambda e, s: [getattr(e.b, f)(s[0], s[1])]
    if op == "shl" and _one_type(ins, _B):
        return _shift(ins.types[0], "shl")
    if op == "shr" and _one_type(ins, _B | INT_TYPES):
        t = ins.types[0]
        return _shift(t, "ashr" if t in SIGNED else "lshr")
    return None


def _shift(t: str, kind: str):
    """Shift by a u32 amount; amounts at or past the width give 0 (shl, shr.u) or the sign
    fill (shr.s), as numpy's shifts (and PTX) define."""
    w = dtype(t).itemsize * 8

    def fn(e, s):
        b = e.b
        a, n = s
        ty = a.type
        over = b.icmp_unsigned(">=", n, ir.Constant(I32, w))
        amt = b.select(over, ir.Constant(I32, w - 1 if kind == "ashr" else 0), n)
        amt = b.trunc(amt, ty) if w < 32 else (b.zext(amt, ty) if w > 32 else amt)
        if kind == "ashr":
            return [b.ashr(a, amt)]
        r = b.shl(a, amt) if kind == "shl" else b.lshr(a, amt)
        return [b.select(over, ir.Constant(ty, 0), r)]
    return fn


# ----------------------------------------------------------------------------- bit fields
def _bfe(ins, bound):
    """bfe.u32/s32/u64/s64 (`isa.semantics.bitfields.bind_bfe`): the field of a at position
    b and length c (their low 8 bits for 32-bit types, all 32 for 64-bit), clipped to the word;
    the signed forms fill the high bits with the field's top bit (the word's top bit when the
    field runs past it; none for a zero length). Shifts past the width give 0, as numpy's."""
    if ins.modifiers or len(ins.types) != 1 or ins.types[0] not in ("u32", "s32", "u64", "s64"):
        return None
    t = ins.types[0]
    if bound.src_types != (t, "u32", "u32"):
        return None
    w = dtype(t).itemsize * 8
    ty = ir.IntType(w)
    lim = 0xFF if w == 32 else 0xFFFFFFFF
    signed = t in SIGNED

    def fn(e, s):
        b = e.b
        a, pos, ln = s
        pos, ln = b.and_(pos, ir.Constant(I32, lim)), b.and_(ln, ir.Constant(I32, lim))
        if w == 64:
            pos, ln = b.zext(pos, I64), b.zext(ln, I64)
        zero, one, width = ir.Constant(ty, 0), ir.Constant(ty, 1), ir.Constant(ty, w)
        inword = b.icmp_unsigned("<", pos, width)
        room = b.select(inword, b.sub(width, pos), zero)
        k = b.select(b.icmp_unsigned("<", ln, room), ln, room)
        full = b.icmp_unsigned("==", k, width)
        m = b.select(full, ir.Constant(ty, (1 << w) - 1), b.sub(b.shl(one, b.select(full, zero, k)), one))
        r = b.and_(b.select(inword, b.lshr(a, b.select(inword, pos, zero)), zero), m)
        if signed:
            top = b.sub(b.add(pos, ln), one)                     # wraps for a zero field at 0, as numpy's
            top = b.select(b.icmp_unsigned("<", top, ir.Constant(ty, w - 1)), top, ir.Constant(ty, w - 1))
            sbit = b.and_(b.trunc(b.lshr(a, top), ir.IntType(1)), b.icmp_unsigned("!=", ln, zero))
            r = b.or_(r, b.select(sbit, b.not_(m), zero))
        return [r]
    return fn
