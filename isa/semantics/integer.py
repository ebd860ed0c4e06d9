"""Integer arithmetic: add, sub, mul, mad, mul24, mad24, sad, div, rem, abs, neg, min, max.

Models every integer form that ptxas 13 accepts for these opcodes (16/32/64-bit signed and
unsigned, `.lo/.hi/.wide`, `.sat.s32`, `.relu`, packed `.u16x2/.s16x2` for add/min/max), bit-exact
and wrapping. The same opcodes with a float type (`add.f32`, `min.f16x2`, ...) are handed to
`isa.semantics.floating.bind_float`; this module owns the shared `OpSpec`s.

The carry forms (`add.cc`, `addc`, `sub.cc`, `subc`, `mad.cc`, `madc`) are bound by
`isa.semantics.carry`, which also defines how the executor holds the carry flag.

Division by zero (PTX says "unspecified, machine-specific"): `div` and `rem` by zero give all
bits set (-1 for signed types) for every dividend, for all six types; read on an NVIDIA H200
(driver 580.159, sm_90, inline-asm `div`/`rem`) in November 2026. Signed overflow `INT_MIN / -1`
gives INT_MIN and `INT_MIN % -1` gives 0 (same reading). Signed division truncates toward zero.

Sources: PTX ISA 9.0, "Integer Arithmetic Instructions"; NVIDIA H200 readings above.
"""
from __future__ import annotations

import numpy as np

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound, OpSpec
from isa.program import Instruction
from isa.semantics.carry import bind_carry
from isa.types import FLOATS, SIGNED, UNSIGNED, dtype, unsigned_dtype

S16_32_64 = frozenset({"s16", "s32", "s64"})
INT_TYPES = frozenset({"s16", "s32", "s64", "u16", "u32", "u64"})
PACKED_16X2 = ("u16x2", "s16x2")           # not in program.TYPE_NAMES, so they show up as modifiers
_WIDE = {"s16": "s32", "u16": "u32", "s32": "s64", "u32": "u64"}
_U64 = np.dtype(np.uint64)
_M32 = np.uint64(0xFFFF_FFFF)
_S32 = np.uint64(32)


# ----------------------------------------------------------------------------- shared helpers
def unsupported(instr: Instruction, reason: str) -> UnsupportedInstruction:
    return UnsupportedInstruction(instr.mnemonic, ptx_line=instr.ptx_line, reason=reason)


def arity(instr: Instruction, n: int) -> None:
    if len(instr.operands) != n:
        raise unsupported(instr, f"expects {n} operands, got {len(instr.operands)}")


def only_type(instr: Instruction, allowed) -> str:
    ts = instr.types
    if len(ts) != 1 or ts[0] not in allowed:
        raise unsupported(instr, f"type must be one of {', '.join(sorted(allowed))}")
    return ts[0]


def check_mods(instr: Instruction, allowed) -> tuple[str, ...]:
    mods = instr.modifiers
    bad = [m for m in mods if m not in allowed]
    if bad:
        raise unsupported(instr, f"modifier .{bad[0]} not supported")
    return mods


def is_float(instr: Instruction) -> bool:
    return any(t in FLOATS for t in instr.types)


def float_bind(instr: Instruction) -> Bound:
    """Hand a float-typed form of a shared opcode to the floating-point module."""
    try:
        # a sibling family, only for float forms (refused cleanly without it)
        from isa.semantics.floating import bind_float
    except ModuleNotFoundError as e:
        if e.name != "isa.semantics.floating":
            raise
        raise unsupported(instr, "floating-point semantics are not available") from None
    return bind_float(instr)


def mulhi_u64(a, b):
    """High 64 bits of the 128-bit product of uint64 a and b, exactly, with 32-bit limbs."""
    al, ah = a & _M32, a >> _S32
    bl, bh = b & _M32, b >> _S32
    lh, hl = al * bh, ah * bl
    mid = ((al * bl) >> _S32) + (lh & _M32) + (hl & _M32)
    return ah * bh + (lh >> _S32) + (hl >> _S32) + (mid >> _S32)


def mulhi_s64(a, b):
    ua, ub = a.view(_U64), b.view(_U64)
    hi = mulhi_u64(ua, ub) - np.where(a < 0, ub, np.uint64(0)) - np.where(b < 0, ua, np.uint64(0))
    return hi.view(np.int64)


def mul_hi(t: str):
    if t == "u64":
        return mulhi_u64
    if t == "s64":
        return mulhi_s64
    dt, wide, n = dtype(t), dtype(_WIDE[t]), dtype(t).itemsize * 8
    return lambda a, b: ((a.astype(wide) * b.astype(wide)) >> n).astype(dt)


def _mul_wide(t: str):
    wide = dtype(_WIDE[t])
    return lambda a, b: a.astype(wide) * b.astype(wide)


def _sat32(x64):
    return np.clip(x64, -(1 << 31), (1 << 31) - 1).astype(np.int32)


def _packed(fn16, signed: bool):
    """Apply fn16 to the two 16-bit halves of b32 operands (low half first)."""
    h = np.dtype(np.int16) if signed else np.dtype(np.uint16)

    def f(a, b):
        lo = fn16((a & 0xFFFF).astype(np.uint16).view(h), (b & 0xFFFF).astype(np.uint16).view(h))
        hi = fn16((a >> 16).astype(np.uint16).view(h), (b >> 16).astype(np.uint16).view(h))
        return lo.view(np.uint16).astype(np.uint32) | (hi.view(np.uint16).astype(np.uint32) << 16)
    return f


def _packed_type(instr: Instruction) -> str | None:
    p = [m for m in instr.modifiers if m in PACKED_16X2]
    return p[0] if p else None


def _int_bound(t: str, n_src: int, fn, dst: str | None = None, srcs: tuple[str, ...] | None = None) -> Bound:
    return Bound((dst or t,), srcs or (t,) * n_src, fn, "int")


# ----------------------------------------------------------------------------- add / sub
def bind_add(instr: Instruction) -> Bound:
    return _bind_addsub(instr, np.add, "add")


def bind_sub(instr: Instruction) -> Bound:
    return _bind_addsub(instr, np.subtract, "sub")


def _bind_addsub(instr: Instruction, ufunc, op: str) -> Bound:
    if is_float(instr):
        return float_bind(instr)
    if "cc" in instr.modifiers:
        return bind_carry(instr, unsupported, mul_hi)
    arity(instr, 3)
    pk = _packed_type(instr)
    if pk is not None and op == "add":
        check_mods(instr, {pk})
        return _int_bound("b32", 2, _packed(ufunc, pk == "s16x2"))
    mods = check_mods(instr, {"sat"})
    t = only_type(instr, INT_TYPES)
    if mods:
        if t != "s32":
            raise unsupported(instr, ".sat applies to .s32 only")
        return _int_bound(t, 2, lambda a, b: _sat32(ufunc(a.astype(np.int64), b.astype(np.int64))))
    return _int_bound(t, 2, ufunc)


# ----------------------------------------------------------------------------- mul / mad
def bind_mul(instr: Instruction) -> Bound:
    if is_float(instr):
        return float_bind(instr)
    arity(instr, 3)
    t = only_type(instr, INT_TYPES)
    mode = _mode(instr, ("lo", "hi", "wide"), set())
    if mode == "lo":
        return _int_bound(t, 2, np.multiply)
    if mode == "hi":
        return _int_bound(t, 2, mul_hi(t))
    if t not in _WIDE:
        raise unsupported(instr, ".wide applies to 16- and 32-bit types")
    return _int_bound(t, 2, _mul_wide(t), dst=_WIDE[t])


def bind_mad(instr: Instruction) -> Bound:
    if is_float(instr):
        return float_bind(instr)
    if "cc" in instr.modifiers:
        return bind_carry(instr, unsupported, mul_hi)
    arity(instr, 4)
    t = only_type(instr, INT_TYPES)
    mode = _mode(instr, ("lo", "hi", "wide"), {"sat"})
    sat = "sat" in instr.modifiers
    if sat and (mode != "hi" or t != "s32"):
        raise unsupported(instr, ".sat applies to mad.hi.s32 only")
    if mode == "lo":
        return _int_bound(t, 3, lambda a, b, c: a * b + c)
    if mode == "hi":
        hi = mul_hi(t)
        if sat:
            return _int_bound(t, 3, lambda a, b, c: _sat32(hi(a, b).astype(np.int64) + c))
        return _int_bound(t, 3, lambda a, b, c: hi(a, b) + c)
    if t not in _WIDE:
        raise unsupported(instr, ".wide applies to 16- and 32-bit types")
    w = _WIDE[t]
    wide = _mul_wide(t)
    return _int_bound(t, 3, lambda a, b, c: wide(a, b) + c, dst=w, srcs=(t, t, w))


def _mode(instr: Instruction, modes: tuple[str, ...], extra: set[str]) -> str:
    mods = check_mods(instr, set(modes) | extra)
    found = [m for m in mods if m in modes]
    if len(found) != 1:
        raise unsupported(instr, f"needs exactly one of .{', .'.join(modes)}")
    return found[0]


# ----------------------------------------------------------------------------- mul24 / mad24
def _mul24(t: str, mode: str):
    """Product of the low 24 bits (sign-extended for .s32) as an exact 48-bit int64/uint64."""
    if t == "s32":
        def p(a, b):
            return ((a << 8) >> 8).astype(np.int64) * ((b << 8) >> 8).astype(np.int64)
    else:
        def p(a, b):
            return (a & 0xFFFFFF).astype(np.uint64) * (b & 0xFFFFFF).astype(np.uint64)
    dt = dtype(t)
    if mode == "lo":
        return lambda a, b: p(a, b).astype(dt)
    return lambda a, b: (p(a, b) >> 16).astype(dt)


def bind_mul24(instr: Instruction) -> Bound:
    arity(instr, 3)
    t = only_type(instr, {"s32", "u32"})
    return _int_bound(t, 2, _mul24(t, _mode(instr, ("lo", "hi"), set())))


def bind_mad24(instr: Instruction) -> Bound:
    arity(instr, 4)
    t = only_type(instr, {"s32", "u32"})
    mode = _mode(instr, ("lo", "hi"), {"sat"})
    m = _mul24(t, mode)
    if "sat" in instr.modifiers:
        if mode != "hi" or t != "s32":
            raise unsupported(instr, ".sat applies to mad24.hi.s32 only")
        return _int_bound(t, 3, lambda a, b, c: _sat32(m(a, b).astype(np.int64) + c))
    return _int_bound(t, 3, lambda a, b, c: m(a, b) + c)


# ----------------------------------------------------------------------------- sad
def bind_sad(instr: Instruction) -> Bound:
    arity(instr, 4)
    check_mods(instr, set())
    t = only_type(instr, INT_TYPES)
    dt = dtype(t)
    u = unsigned_dtype(dt.itemsize)

    def fn(a, b, c):
        ua, ub = a.view(u), b.view(u)
        return (np.where(a < b, ub - ua, ua - ub) + c.view(u)).view(dt)
    return _int_bound(t, 3, fn)


# ----------------------------------------------------------------------------- div / rem
def _divrem(t: str, rem: bool):
    dt = dtype(t)
    ones = dt.type(-1) if t in SIGNED else dt.type(np.iinfo(dt).max)   # what hardware gives for x / 0
    one = dt.type(1)
    if t in UNSIGNED:
        def fn(a, b):
            z = b == 0
            bb = np.where(z, one, b)
            return np.where(z, ones, a % bb if rem else a // bb)
        return fn
    lo = dt.type(np.iinfo(dt).min)
    # np.fmod on integers is C's truncating remainder; divisors 0 and (for INT_MIN) -1 are
    # replaced by 1 first so numpy never sees a trapping case.
    if rem:
        def srem(a, b):
            z = b == 0
            return np.where(z, ones, np.fmod(a, np.where(z | (b == -1), one, b)))
        return srem

    def sdiv(a, b):
        z = b == 0
        bb = np.where(z | ((a == lo) & (b == -1)), one, b)
        return np.where(z, ones, (a - np.fmod(a, bb)) // bb)     # exact multiple: floor == trunc
    return sdiv


def bind_div(instr: Instruction) -> Bound:
    if is_float(instr):
        return float_bind(instr)
    arity(instr, 3)
    check_mods(instr, set())
    t = only_type(instr, INT_TYPES)
    return _int_bound(t, 2, _divrem(t, rem=False))


def bind_addc(instr: Instruction) -> Bound:
    """addc, subc, madc: the carry-in forms."""
    return bind_carry(instr, unsupported, mul_hi)


def bind_rem(instr: Instruction) -> Bound:
    if is_float(instr):
        return float_bind(instr)
    arity(instr, 3)
    check_mods(instr, set())
    t = only_type(instr, INT_TYPES)
    return _int_bound(t, 2, _divrem(t, rem=True))


# ----------------------------------------------------------------------------- abs / neg / min / max
def bind_abs(instr: Instruction) -> Bound:
    if is_float(instr):
        return float_bind(instr)
    arity(instr, 2)
    check_mods(instr, set())
    return _int_bound(only_type(instr, S16_32_64), 1, np.abs)      # abs(INT_MIN) wraps to INT_MIN


def bind_neg(instr: Instruction) -> Bound:
    if is_float(instr):
        return float_bind(instr)
    arity(instr, 2)
    check_mods(instr, set())
    return _int_bound(only_type(instr, S16_32_64), 1, np.negative)


def bind_min(instr: Instruction) -> Bound:
    return _bind_minmax(instr, np.minimum)


def bind_max(instr: Instruction) -> Bound:
    return _bind_minmax(instr, np.maximum)


def _relu(ufunc):
    return lambda a, b: np.maximum(ufunc(a, b), 0)


def _bind_minmax(instr: Instruction, ufunc) -> Bound:
    if is_float(instr):
        return float_bind(instr)
    arity(instr, 3)
    pk = _packed_type(instr)
    relu = "relu" in instr.modifiers
    if pk is not None:
        check_mods(instr, {pk, "relu"})
        if relu and pk != "s16x2":
            raise unsupported(instr, ".relu applies to .s32 and .s16x2 only")
        return _int_bound("b32", 2, _packed(_relu(ufunc) if relu else ufunc, pk == "s16x2"))
    check_mods(instr, {"relu"})
    t = only_type(instr, INT_TYPES)
    if relu:
        if t != "s32":
            raise unsupported(instr, ".relu applies to .s32 and .s16x2 only")
        return _int_bound(t, 2, _relu(ufunc))
    return _int_bound(t, 2, ufunc)


ENTRIES: list[OpSpec] = [
    OpSpec("add", "alu", bind_add, "d = a + b (integer: wrapping, .sat.s32 clamps; float forms delegate)"),
    OpSpec("sub", "alu", bind_sub, "d = a - b (integer: wrapping, .sat.s32 clamps; float forms delegate)"),
    OpSpec("mul", "alu", bind_mul, "d = a * b, .lo/.hi/.wide half of the double-width product"),
    OpSpec("mad", "alu", bind_mad, "d = (a * b).lo/.hi/.wide + c"),
    OpSpec("addc", "alu", bind_addc, "d = a + b + CC.CF; .cc writes the carry-out (see carry.py)"),
    OpSpec("subc", "alu", bind_addc, "d = a - (b + CC.CF); .cc writes the borrow-out"),
    OpSpec("madc", "alu", bind_addc, "d = (a * b).lo/.hi + c + CC.CF; .cc writes the carry-out"),
    OpSpec("mul24", "alu", bind_mul24, "d = bits 31..0 (.lo) or 47..16 (.hi) of a[23:0] * b[23:0]"),
    OpSpec("mad24", "alu", bind_mad24, "d = mul24(a, b) + c"),
    OpSpec("sad", "alu", bind_sad, "d = c + |a - b|"),
    OpSpec("div", "alu", bind_div, "d = a / b, truncating; x / 0 gives all ones (H200)"),
    OpSpec("rem", "alu", bind_rem, "d = a % b, sign of a; x % 0 gives all ones (H200)"),
    OpSpec("abs", "alu", bind_abs, "d = |a| (wrapping)"),
    OpSpec("neg", "alu", bind_neg, "d = -a (wrapping)"),
    OpSpec("min", "alu", bind_min, "d = min(a, b); .relu clamps at 0"),
    OpSpec("max", "alu", bind_max, "d = max(a, b); .relu clamps at 0"),
]
