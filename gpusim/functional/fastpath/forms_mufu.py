"""The approximate (MUFU) f32 forms the fast core compiles: rcp, sqrt, rsqrt and ex2
`.approx[.ftz].f32` (and the legacy modifier-less f32 forms, `.approx.ftz`), and div.approx.f32,
as `isa.semantics.transcendental` defines them, one lane at a time:

- the input flushed under `.ftz`, widened to float64, the function in float64, rounded once to
  f32 (nearest even), the result flushed under `.ftz`, a NaN made the canonical one;
- rcp, sqrt and rsqrt are IEEE float64 division and square root (`1 / x`, `sqrt(x)`,
  `1 / sqrt(x)`), the operations numpy performs;
- ex2 is `transcendental.exp2`'s polynomial, the same float64 operations in the same order (no
  fused multiply-add), so the same bits, and a loop the optimiser vectorises;
- div.approx.f32: a * (1/b), the reciprocal rounded to 24 bits, as `_div_approx`.

lg2, sin, cos and tanh stay with the reference: numpy's float64 functions, which compiled code
would not reproduce to the bit.

Source: the reference semantics in isa/semantics/transcendental.py (which cite the PTX ISA).
"""
from __future__ import annotations

from llvmlite import ir

from gpusim.functional.fastpath.alu_ir import CANON32, F32, F64, I32, I64
from isa.semantics.transcendental import EXP2_COEFFS, EXP2_RANGE

_OPS = ("rcp", "sqrt", "rsqrt", "ex2")
_LOW29, _HALF29 = (1 << 29) - 1, (1 << 28) - 1


def _exp2(e, x):
    """`transcendental.exp2` of float64 x."""
    b = e.b
    nan = e.is_nan(x)
    lo, hi = (ir.Constant(F64, v) for v in EXP2_RANGE)
    xc = b.select(b.fcmp_ordered("<", x, lo), lo, x)          # numpy's maximum/minimum: NaN handled apart
    xc = b.select(b.fcmp_ordered(">", xc, hi), hi, xc)
    xc = b.select(nan, ir.Constant(F64, 0.0), xc)
    n = e.intrinsic("llvm.roundeven", F64, xc)
    f = b.fsub(xc, n)
    p = ir.Constant(F64, EXP2_COEFFS[-1])
    for c in EXP2_COEFFS[-2::-1]:
        p = b.fadd(b.fmul(p, f), ir.Constant(F64, c))
    scale = b.bitcast(b.shl(b.add(b.fptosi(n, I64), ir.Constant(I64, 1023)), ir.Constant(I64, 52)), F64)
    return b.select(nan, x, b.fmul(p, scale))


def _canon(e, r):
    """The f32 result with a NaN made canonical, decided on its bits: LLVM's O3 pipeline folds the
    float NaN test (`IR.canon32`) away behind fptrunc(sqrt(fpext x)), which it narrows to an f32
    square root."""
    b = e.b
    bits = b.bitcast(r, I32)
    nan = b.icmp_unsigned(">", b.and_(bits, ir.Constant(I32, 0x7FFFFFFF)), ir.Constant(I32, 0x7F800000))
    return b.bitcast(b.select(nan, ir.Constant(I32, CANON32), bits), F32)


def _f64_of(e, op: str, x):
    """The reference's float64 function `op` of float64 x."""
    b = e.b
    if op == "rcp":
        return b.fdiv(ir.Constant(F64, 1.0), x)
    if op == "sqrt":
        return e.intrinsic("llvm.sqrt", F64, x)
    if op == "rsqrt":
        return b.fdiv(ir.Constant(F64, 1.0), e.intrinsic("llvm.sqrt", F64, x))
    return _exp2(e, x)


def _mode(ins):
    """(ftz,) of an approximate f32 form that `transcendental.bind_mufu` accepts, else None."""
    mods = ins.modifiers
    if len(ins.types) != 1 or ins.types[0] != "f32" or any(m not in ("approx", "ftz", "full") for m in mods):
        return None
    legacy = "approx" not in mods and "full" not in mods
    return ("ftz" in mods or legacy,)


def mufu(ins, bound):
    """The emitter of an approximate f32 form (module docstring), or None."""
    op = ins.opcode
    mode = _mode(ins)
    if mode is None or bound.src_types != ("f32",) * len(bound.src_types) or bound.dst_types != ("f32",):
        return None
    (ftz,) = mode
    if op == "div":
        if "full" in ins.modifiers or len(bound.src_types) != 2:
            return None
        return _div_approx(ftz)
    if op not in _OPS or "full" in ins.modifiers or len(bound.src_types) != 1:
        return None

    def fn(e, s):
        a = e.flush32(s[0]) if ftz else s[0]
        r = e.b.fptrunc(_f64_of(e, op, e.b.fpext(a, F64)), F32)
        return [_canon(e, e.flush32(r) if ftz else r)]
    return fn


def _div_approx(ftz: bool):
    def fn(e, s):
        b = e.b
        a, d = (e.flush32(s[0]), e.flush32(s[1])) if ftz else (s[0], s[1])
        d64 = b.fpext(d, F64)
        rb = b.bitcast(b.fdiv(ir.Constant(F64, 1.0), d64), I64)
        odd = b.and_(b.lshr(rb, ir.Constant(I64, 29)), ir.Constant(I64, 1))
        rb = b.and_(b.add(b.add(rb, ir.Constant(I64, _HALF29)), odd), ir.Constant(I64, ~_LOW29 & (2 ** 64 - 1)))
        r = b.bitcast(rb, F64)
        big = b.fcmp_ordered(">", e.intrinsic("llvm.fabs", F64, d64), ir.Constant(F64, 2.0 ** 126))
        r = b.select(big, b.fmul(r, ir.Constant(F64, 0.0)), r)
        q = b.fptrunc(b.fmul(b.fpext(a, F64), r), F32)
        return [_canon(e, e.flush32(q) if ftz else q)]
    return fn
