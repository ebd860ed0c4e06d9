"""Compiled floating-point forms and conversions of the fast core: f32/f64 add, sub, mul,
fma/mad in `.rn` (f32 `.sat`), neg, abs, min, max (`isa.semantics.floating`), div.full.f32
(`.ftz` too: IEEE division, `isa.semantics.transcendental`), and cvt between integers (`.sat`
too), integer <-> float (`.rn`; `.rzi/.rni/.rmi/.rpi`), f32 <-> f64, f32 pairs to f16x2 (`.rn`)
(`isa.semantics.convert`). Every f32 NaN result is the canonical 0x7FFFFFFF; an f64 NaN
result carries the first NaN operand in the reference's priority order, quieted, or else
the default NaN 0xFFF8000000000000 (what x86 produces for an invalid operation, and what
the reference's numpy computes here). Each maker returns an emitter or None."""
from __future__ import annotations

from llvmlite import ir

from gpusim.functional.fastpath.alu_ir import F32, F64, I16, I32, I64, ext as _ext, one_type as _one_type
from gpusim.functional.fastpath.forms_int import INT_TYPES
from isa.types import SIGNED, dtype

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
    if dt == "f16x2" and st == "f32" and mods == {"rn"} and bound.src_types == ("f32", "f32"):
        return _cvt_f16x2
    return None


def _f16_bits(e, v):
    """An f32 rounded to f16 (nearest even; overflow to infinity, subnormals kept: the IEEE
    conversion, which F16C does in one instruction) as its 16 bits, NaN as 0x7FFF."""
    b = e.b
    h = b.bitcast(b.fptrunc(v, ir.HalfType()), I16)
    return b.select(e.is_nan(v), ir.Constant(I16, 0x7FFF), h)


def _cvt_f16x2(e, s):
    """cvt.rn.f16x2.f32 d, a, b: a's f16 in the high half, b's in the low (`convert.bind_cvt`)."""
    b = e.b
    hi = b.zext(_f16_bits(e, s[0]), I32)
    lo = b.zext(_f16_bits(e, s[1]), I32)
    return [b.or_(b.shl(hi, ir.Constant(I32, 16)), lo)]


def _div_full(ins, bound):
    """div.full.f32 (`.ftz`): IEEE division rounded to nearest, inputs and result flushed with
    `.ftz`, NaN canonical (`transcendental._div_full`)."""
    mods = set(ins.modifiers)
    if ins.types != ("f32",) or "full" not in mods or mods - {"full", "ftz"} or bound.src_types != ("f32", "f32"):
        return None
    ftz = "ftz" in mods

    def fn(e, s):
        a, c = s
        if ftz:
            a, c = e.flush32(a), e.flush32(c)
        d = e.b.fdiv(a, c)
        return [e.canon32(e.flush32(d) if ftz else d)]
    return fn


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
