"""The ALU forms the fast core compiles: each PTX arithmetic form as LLVM IR on one lane.

`form(ins, bound)` returns an emitter for an instruction whose form is listed here, or
None (the reference op runs it). An emitter gets an `IR` (the builder of one lane's
code) and the source values, already of the PTX types `bound.src_types`, and returns
the destination values of the types `bound.dst_types`: the same contract as the
reference's `bound.fn` (`isa.opcodes`), one lane at a time. Every form computes what
its reference function in `isa.semantics` computes, bit for bit:

- integers: add/sub (wrapping; `.sat.s32`), mul/mad `.lo/.hi/.wide`, neg, abs, min,
  max, div and rem (x / 0 = all ones, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0), and,
  or, xor, not, shl/shr (amounts at or past the width give 0 or the sign fill), setp
  with its .and/.or/.xor and `p|q` forms, selp, mov, cvta, cvt between integers
  (`.sat` too);
- f32 and f64: add, sub, mul, fma/mad in `.rn` (f32 `.sat`), neg, abs, min, max,
  setp (f32 `.ftz`), cvt f32<->f64, int<->float (`.rn`, `.rzi/.rni/.rmi/.rpi`).
  Every f32 NaN result is the canonical 0x7FFFFFFF; an f64 NaN result carries the
  first NaN operand in the reference's priority order, quieted, or else is the
  default NaN 0xFFF8000000000000 (what x86 produces for invalid operations, and what
  the reference's numpy computes here). NaN results are selected explicitly, so LLVM's
  constant folding of immediates cannot change them.

Not compiled (the reference runs them): f16/bf16/packed types, `.ftz` arithmetic, other
rounding modes, carry (`.cc`) forms, approximate (MUFU) functions, bit-field and other
rarer opcodes, vector mov. Adding a form here is one function; the property tests in
tests/functional/test_fast_alu.py check every listed form against the reference.

Source: the reference semantics in isa/semantics (which cite the PTX ISA).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from isa.memory_map import WINDOWS
from isa.program import Vector
from isa.types import SIGNED, dtype

I1, I8, I16, I32, I64, I128 = (ir.IntType(n) for n in (1, 8, 16, 32, 64, 128))
F32, F64 = ir.FloatType(), ir.DoubleType()
COMPILED_TYPES = frozenset({"pred", "b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64",
                            "s8", "s16", "s32", "s64", "f32", "f64"})
COMPILED_DTYPES = frozenset(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                                  np.uint16, np.uint32, np.uint64, np.float32, np.float64))
CANON32 = 0x7FFFFFFF
DEFAULT_NAN64 = 0xFFF8000000000000
QUIET64 = 1 << 51


def ir_type(dt: np.dtype) -> ir.Type:
    """The IR type of a value of numpy dtype `dt` (bool: i1)."""
    if dt == np.bool_:
        return I1
    if dt.kind == "f":
        return F32 if dt.itemsize == 4 else F64
    return ir.IntType(8 * dt.itemsize)


class IR:
    """The builder of one lane's code, with the conversions and constants the forms use."""

    def __init__(self, builder: ir.IRBuilder, module: ir.Module):
        self.b = builder
        self.module = module

    # ------------------------------------------------------------------ constants and bits
    def const(self, dt: np.dtype, value) -> ir.Value:
        """A constant of dtype `dt` with the bits of numpy scalar `value` (floats through
        their bits, so NaN payloads survive)."""
        v = np.asarray(value, dt)
        if dt == np.bool_:
            return ir.Constant(I1, int(bool(v)))
        if dt.kind == "f":
            bits = int(v.view(np.uint32 if dt.itemsize == 4 else np.uint64))
            return self.b.bitcast(ir.Constant(ir.IntType(8 * dt.itemsize), bits), ir_type(dt))
        return ir.Constant(ir_type(dt), int(v.astype(np.uint64 if dt.itemsize == 8 else np.int64)) &
                           ((1 << 8 * dt.itemsize) - 1))

    def int_const(self, ty: ir.IntType, value: int) -> ir.Value:
        return ir.Constant(ty, value & ((1 << ty.width) - 1))

    def bits(self, v: ir.Value) -> ir.Value:
        """A float's bits as an integer (integers unchanged)."""
        if v.type == F32:
            return self.b.bitcast(v, I32)
        if v.type == F64:
            return self.b.bitcast(v, I64)
        return v

    def intrinsic(self, name: str, ty: ir.Type, *args) -> ir.Value:
        fn = self.module.declare_intrinsic(name, [ty], ir.FunctionType(ty, [ty] * len(args)))
        return self.b.call(fn, list(args))

    # ------------------------------------------------------------------ register conversions
    def convert(self, v: ir.Value, have: np.dtype, want: np.dtype) -> ir.Value:
        """`gpusim.functional.state.convert` on one lane: same size keeps the bits,
        narrower truncates, wider sign- or zero-extends by the source's kind; bool
        (which the reference converts with astype) only to and from wider integers."""
        b = self.b
        if have == want:
            return v
        if have == np.bool_ or want == np.bool_:
            if have == np.bool_ and want.kind in "iu":
                return b.zext(v, ir_type(want))
            if want == np.bool_ and have.kind in "iu":
                return b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))
            raise NotCompiled("bool conversion")   # (`convertible` rules these out before any IR is built)
        wt = ir_type(want)
        if have.itemsize == want.itemsize:
            return v if v.type == wt else b.bitcast(v, wt)
        iv = self.bits(v)
        it = ir.IntType(8 * want.itemsize)
        if want.itemsize < have.itemsize:
            r = b.trunc(iv, it)
        else:
            r = b.sext(iv, it) if have.kind == "i" else b.zext(iv, it)
        return r if wt == it else b.bitcast(r, wt)

    # ------------------------------------------------------------------ float helpers
    def is_nan(self, v):
        return self.b.fcmp_unordered("uno", v, v)

    def canon32(self, v):
        """Any f32 NaN becomes the canonical NaN."""
        return self.b.select(self.is_nan(v), self.const(np.dtype(np.float32), np.uint32(CANON32).view(np.float32)), v)

    def quiet64(self, v):
        return self.b.bitcast(self.b.or_(self.b.bitcast(v, I64), ir.Constant(I64, QUIET64)), F64)

    def nan64(self, r, operands):
        """f64 NaN choice: where r is NaN, the first NaN of `operands` quieted, else the
        default NaN (`fp_exact.nan_operand` over numpy's result)."""
        b = self.b
        out = b.bitcast(ir.Constant(I64, DEFAULT_NAN64), F64)
        for x in reversed(operands):
            out = b.select(self.is_nan(x), self.quiet64(x), out)
        return b.select(self.is_nan(r), out, r)

    def signbit(self, v):
        iv = self.bits(v)
        return self.b.icmp_signed("<", iv, ir.Constant(iv.type, 0))

    def flush32(self, v):
        """.ftz on an f32: subnormals (exponent field 0) become zero of the same sign."""
        b = self.b
        iv = b.bitcast(v, I32)
        tiny = b.icmp_unsigned("<", b.and_(iv, ir.Constant(I32, 0x7FFFFFFF)), ir.Constant(I32, 0x00800000))
        return b.select(tiny, b.bitcast(b.and_(iv, ir.Constant(I32, 0x80000000)), F32), v)


def convertible(have: np.dtype, want: np.dtype) -> bool:
    """Whether `IR.convert` handles have -> want (both dtypes of compiled types)."""
    if have == want:
        return True
    if have == np.bool_ or want == np.bool_:
        other = want if have == np.bool_ else have
        return other.kind in "iu" and other.itemsize > 1          # a 1-byte int would be a bit view in numpy
    return True


class NotCompiled(Exception):
    """A form (or a conversion it needs) that the fast core leaves to the reference."""


# ----------------------------------------------------------------------------- integer forms
INT_TYPES = frozenset({"s16", "s32", "s64", "u16", "u32", "u64"})
_WIDE = {"s16": "s32", "u16": "u32", "s32": "s64", "u32": "u64"}


def _ext(e: IR, v, t: str, ty):
    return e.b.sext(v, ty) if t in SIGNED else e.b.zext(v, ty)


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


def _one_type(ins, allowed) -> str | None:
    return ins.types[0] if len(ins.types) == 1 and ins.types[0] in allowed else None


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


# ----------------------------------------------------------------------------- compare and select
_INT_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
            "lo": "<", "ls": "<=", "hi": ">", "hs": ">="}
_FLOAT_CMP = {"eq": ("o", "=="), "lt": ("o", "<"), "le": ("o", "<="), "gt": ("o", ">"), "ge": ("o", ">="),
              "ne": ("o", "!="), "equ": ("u", "=="), "neu": ("u", "!="), "ltu": ("u", "<"), "leu": ("u", "<="),
              "gtu": ("u", ">"), "geu": ("u", ">="), "num": ("o", "ord"), "nan": ("u", "uno")}
_INT_CMP_TYPES = frozenset({"b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64"})


def _setp(ins, bound):
    mods = list(ins.modifiers)
    ftz = "ftz" in mods
    if ftz:
        mods.remove("ftz")
    boolop = next((m for m in mods if m in ("and", "or", "xor")), None)
    if boolop:
        mods.remove(boolop)
    if len(mods) != 1 or len(ins.types) != 1:
        return None
    op, t = mods[0], ins.types[0]
    if t in _INT_CMP_TYPES and op in _INT_CMP and not ftz:
        signed = t in SIGNED

        def cmp(e, a, b_):
            return (e.b.icmp_signed if signed else e.b.icmp_unsigned)(_INT_CMP[op], a, b_)
    elif t in ("f32", "f64") and op in _FLOAT_CMP and (not ftz or t == "f32"):
        kind, pred = _FLOAT_CMP[op]

        def cmp(e, a, b_):
            if ftz:
                a, b_ = e.flush32(a), e.flush32(b_)
            return (e.b.fcmp_ordered if kind == "o" else e.b.fcmp_unordered)(pred, a, b_)
    else:
        return None
    pair = len(bound.dst_types) == 2
    f = {"and": "and_", "or": "or_", "xor": "xor"}.get(boolop)

    def fn(e, s):
        r = cmp(e, s[0], s[1])
        if not pair:
            return [getattr(e.b, f)(r, s[2]) if f else r]
        nr = e.b.not_(r)
        return [getattr(e.b, f)(r, s[2]), getattr(e.b, f)(nr, s[2])] if f else [r, nr]
    return fn


def _selp(ins, bound):
    if ins.modifiers or _one_type(ins, COMPILED_TYPES - {"pred"}) is None:
        return None
    return lambda e, s: [e.b.select(s[2], s[0], s[1])]


def _mov(ins, bound):
    if ins.modifiers or _one_type(ins, COMPILED_TYPES) is None or any(isinstance(o, Vector) for o in ins.operands):
        return None
    return lambda e, s: [s[0]]


def _cvta(ins, bound):
    if bound.dst_types != ("u64",) or bound.src_types != ("u64",):
        return None
    space = next((m.split("::", 1)[0] for m in ins.modifiers if m != "to"), None)
    if space not in WINDOWS or any(m.endswith("::cluster") for m in ins.modifiers):
        return None
    base = WINDOWS[space]
    if base == 0:
        return lambda e, s: [s[0]]
    if "to" in ins.modifiers:
        return lambda e, s: [e.b.sub(s[0], ir.Constant(I64, base))]
    return lambda e, s: [e.b.add(s[0], ir.Constant(I64, base))]


# ----------------------------------------------------------------------------- conversions
_IRND = {"rni": "llvm.roundeven", "rzi": "llvm.trunc", "rmi": "llvm.floor", "rpi": "llvm.ceil"}
_INTS = INT_TYPES | {"s8", "u8"}


def _cvt(ins, bound):
    if len(ins.types) != 2:
        return None
    dt, st = ins.types
    mods = set(ins.modifiers)
    if dt in _INTS and st in _INTS:
        if mods - {"sat"}:
            return None
        return _cvt_int(dt, st, "sat" in mods)
    if st in ("f32", "f64") and dt in _INTS:
        irnd = mods & set(_IRND)
        if mods - irnd or len(irnd) > 1:
            return None
        return _cvt_f2i(st, dt, irnd.pop() if irnd else "rzi")
    if dt in ("f32", "f64") and (st in _INTS or st in ("f32", "f64")) and dt != st:
        if mods - {"rn"}:
            return None
        return _cvt_to_float(st, dt)
    return None


def _cvt_int(dt: str, st: str, sat: bool):
    dw, sw = dtype(dt).itemsize * 8, dtype(st).itemsize * 8

    def plain(e, s):
        a = s[0]
        if dw == sw:
            return [a]
        return [e.b.trunc(a, ir.IntType(dw)) if dw < sw else _ext(e, a, st, ir.IntType(dw))]
    if not sat:
        return plain
    lo = -(1 << (dw - 1)) if dt in SIGNED else 0
    hi = (1 << (dw - 1)) - 1 if dt in SIGNED else (1 << dw) - 1

    def sat_fn(e, s):
        b = e.b
        a = s[0]
        if st == "u64":                                  # np.minimum(a, hi) in uint64
            c = ir.Constant(I64, min(hi, (1 << 64) - 1))
            r = b.select(b.icmp_unsigned("<", a, c), a, c)
        else:                                            # clip(a as int64, lo, hi), bounds within int64
            x = a if sw == 64 else _ext(e, a, st, I64)
            clo, chi = ir.Constant(I64, max(lo, -(1 << 63))), ir.Constant(I64, min(hi, (1 << 63) - 1))
            r = b.select(b.icmp_signed("<", x, clo), clo, x)
            r = b.select(b.icmp_signed(">", r, chi), chi, r)
        return [r if dw == 64 else b.trunc(r, ir.IntType(dw))]
    return sat_fn


def _cvt_f2i(st: str, dt: str, irnd: str):
    """convert._float_to_int: round to an integer (in f64), clamp to the range; NaN gives 0,
    or 1 << (bits-1) for an f64 source or a 64-bit destination."""
    dw = dtype(dt).itemsize * 8
    lo = -(1 << (dw - 1)) if dt in SIGNED else 0
    hi = (1 << (dw - 1)) - 1 if dt in SIGNED else (1 << dw) - 1
    nanv = 0 if (st != "f64" and dw < 64) else (lo if dt in SIGNED else hi // 2 + 1)
    ty = ir.IntType(dw)

    def fn(e, s):
        b = e.b
        x = s[0] if st == "f64" else b.fpext(s[0], F64)
        r = e.intrinsic(_IRND[irnd], F64, x)
        over = b.fcmp_ordered(">=", r, ir.Constant(F64, float(hi + 1)))
        under = b.fcmp_ordered("<", r, ir.Constant(F64, float(lo)))
        nan = e.is_nan(r)
        safe = b.select(b.or_(b.or_(over, under), nan), ir.Constant(F64, 0.0), r)
        v = b.fptoui(safe, ty) if dt not in SIGNED else b.fptosi(safe, ty)
        v = b.select(over, e.int_const(ty, hi), v)
        v = b.select(under, e.int_const(ty, lo), v)
        return [b.select(nan, e.int_const(ty, nanv), v)]
    return fn


def _cvt_to_float(st: str, dt: str):
    """int -> float (correctly rounded, .rn) and f32 <-> f64 (.rn), NaNs as convert.py makes them."""
    fty = F32 if dt == "f32" else F64

    def fn(e, s):
        b = e.b
        a = s[0]
        if st in _INTS:
            return [b.sitofp(a, fty) if st in SIGNED else b.uitofp(a, fty)]
        if st == "f32":                                   # exact; a NaN keeps its payload, quieted
            r = b.fpext(a, F64)
            ia = b.zext(b.bitcast(a, I32), I64)
            sign = b.shl(b.lshr(ia, ir.Constant(I64, 31)), ir.Constant(I64, 63))
            mant = b.shl(b.and_(ia, ir.Constant(I64, 0x7FFFFF)), ir.Constant(I64, 29))
            nan = b.bitcast(b.or_(b.or_(sign, mant), ir.Constant(I64, 0x7FF8000000000000)), F64)
            return [b.select(e.is_nan(a), nan, r)]
        r = b.fptrunc(a, F32)                             # f64 -> f32: NaN keeps the top payload bits, quieted
        ia = b.bitcast(a, I64)
        sign = b.trunc(b.shl(b.lshr(ia, ir.Constant(I64, 63)), ir.Constant(I64, 31)), I32)
        mant = b.trunc(b.and_(b.lshr(ia, ir.Constant(I64, 29)), ir.Constant(I64, 0x7FFFFF)), I32)
        nan = b.bitcast(b.or_(b.or_(sign, mant), ir.Constant(I32, 0x7FC00000)), F32)
        return [b.select(e.is_nan(a), nan, r)]
    return fn


# ----------------------------------------------------------------------------- floating point
_NAN_ORDER = {"add": (1, 0), "sub": (1, 0), "mul": (1, 0), "fma": (1, 2, 0), "mad": (1, 2, 0),
              "min": (1, 0), "max": (1, 0)}


def _float(ins, bound):
    t = _one_type(ins, {"f32", "f64"})
    if t is None:
        return None
    op, mods = ins.opcode, set(ins.modifiers)
    if op in ("add", "sub", "mul", "fma", "mad"):
        if mods - {"rn", "sat"} or ("sat" in mods and t != "f32"):
            return None
        sat = "sat" in mods
        order = _NAN_ORDER[op]

        def arith(e, s):
            b = e.b
            if op == "add":
                r = b.fadd(s[0], s[1])
            elif op == "sub":
                r = b.fsub(s[0], s[1])
            elif op == "mul":
                r = b.fmul(s[0], s[1])
            else:
                r = e.intrinsic("llvm.fma", s[0].type, s[0], s[1], s[2])
            if t == "f64":
                return [e.nan64(r, [s[i] for i in order])]
            if sat:                                   # fp_exact.sat: [+0, 1], NaN -> +0
                one, zero = ir.Constant(F32, 1.0), ir.Constant(F32, 0.0)
                r = b.select(b.fcmp_ordered(">", r, zero), b.select(b.fcmp_ordered("<", r, one), r, one), zero)
            return [e.canon32(r)]
        return arith
    if op in ("neg", "abs") and not mods:
        w = 32 if t == "f32" else 64
        ity = ir.IntType(w)
        sign = 1 << (w - 1)

        def signop(e, s):
            b = e.b
            a = s[0]
            ia = b.bitcast(a, ity)
            r = b.bitcast(b.xor(ia, ir.Constant(ity, sign)) if op == "neg" else
                          b.and_(ia, ir.Constant(ity, sign - 1)), a.type)
            return [e.canon32(r) if t == "f32" else b.select(e.is_nan(a), e.quiet64(a), r)]
        return signop
    if op in ("min", "max") and not mods and len(bound.src_types) == 2:
        is_max = op == "max"

        def minmax(e, s):
            b = e.b
            a, c = s
            pick = b.fcmp_ordered(">" if is_max else "<", a, c)
            r = b.select(pick, a, c)
            r = b.select(e.is_nan(c), a, b.select(e.is_nan(a), c, r))      # a NaN operand yields the other
            sa, sc = e.signbit(a), e.signbit(c)
            zs = b.and_(sa, sc) if is_max else b.or_(sa, sc)
            zero = ir.Constant(a.type, 0.0)
            both0 = b.and_(b.fcmp_ordered("==", a, zero), b.fcmp_ordered("==", c, zero))
            r = b.select(both0, b.select(zs, ir.Constant(a.type, -0.0), zero), r)
            return [e.canon32(r) if t == "f32" else e.nan64(r, [c, a])]
        return minmax
    return None


# ----------------------------------------------------------------------------- the table
_FORMS = {
    "add": (_int_arith, _float), "sub": (_int_arith, _float), "mul": (_int_arith, _float),
    "mad": (_int_arith, _float), "fma": (_float,), "neg": (_int_arith, _float), "abs": (_int_arith, _float),
    "min": (_int_arith, _float), "max": (_int_arith, _float), "div": (_int_arith,), "rem": (_int_arith,),
    "and": (_logic,), "or": (_logic,), "xor": (_logic,), "not": (_logic,), "shl": (_logic,), "shr": (_logic,),
    "setp": (_setp,), "selp": (_selp,), "mov": (_mov,), "cvta": (_cvta,), "cvt": (_cvt,),
}


def form(ins, bound):
    """The emitter of `ins` (bound as `bound`), or None when the fast core does not compile it."""
    makers = _FORMS.get(ins.opcode)
    if makers is None:
        return None
    if any(t not in COMPILED_TYPES for t in bound.src_types + bound.dst_types):
        return None
    if any(isinstance(o, Vector) for o in ins.operands):
        return None
    for make in makers:
        f = make(ins, bound)
        if f is not None:
            return f
    return None
