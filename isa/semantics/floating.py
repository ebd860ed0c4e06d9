"""Floating-point arithmetic on .f32 and .f64 lanes, bit-exact in every rounding mode.

What it models (PTX ISA 9.7.3 "Floating-Point Instructions"):
- `add`, `sub`, `mul`, `fma`/`mad`, `div.rnd`, `rcp.rnd`, `sqrt.rnd` with .rn/.rz/.rm/.rp,
  correctly rounded. f32 .rn uses numpy's own IEEE float32 operations; the other modes and
  `fma` compute in doubles with the exact sign of the residual (fp_exact). f64 `fma.rn` is
  the Boldo-Melquiond emulation (TwoProduct, TwoSum, round-to-odd); lanes where it cannot be
  proven exact (|a|,|b| > 2**995, products under 2**-960, subnormal results, overflow) are
  recomputed exactly with fractions.Fraction.
- `.ftz` (f32): subnormal inputs and results become sign-preserving zero; mul and fma flush
  when the exact result is below 2**-126 even if it rounds up to 2**-126 (as H100/H200 do),
  the others after rounding. `.sat` (f32): clamp to [+0.0, 1.0], NaN and -0.0 -> +0.0.
- `min`/`max` (NaN operand yields the other; `.NaN`; `.xorsign.abs`; -0.0 < +0.0; 3 inputs),
  `neg`/`abs` (sign-bit operations), `copysign` (d = |b| with the sign of a), `testp`.
- NaN results (PTX: f32 "unspecified NaN", f64 payloads supported) follow what H100/H200 do
  (measured with single inline-PTX instructions): every f32 NaN result is the canonical
  0x7FFFFFFF (also for neg/abs/min/max); an f64 result carries a NaN operand's payload,
  quieted (for several NaN operands: b, then a for add/sub/mul/min/max; b, c, a for fma;
  a, then b for div), neg/abs.f64 return a NaN input quieted with its sign unchanged, and
  invalid operations (inf-inf, 0*inf, 0/0, sqrt(-x)) give 0xFFF8000000000000.
- Exact-zero sums are -0.0 under .rm and +0.0 otherwise (IEEE 754-2019 6.3).

Half precision (f16, bf16, x2) lives in `half_float`; approximate (MUFU) forms of div, rcp,
sqrt, rsqrt, ex2, lg2, sin, cos, tanh in `transcendental`.

Not modelled: `.f32x2` (sm_100), `mad.f32` sm_1x truncation (mapped to `mad.rn.f32`).
Legacy defaults follow the PTX notes: div/rcp/sqrt `.f64` without rounding is `.rn`;
`div/rcp/sqrt.f32` without modifiers is `.approx.ftz`; `mad`/`fma` without rounding is `.rn`.

Sources: PTX ISA 9.7.3.1-9.7.3.17; IEEE 754-2019; papers cited in fp_exact.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound, OpSpec
from isa.program import Instruction
from isa.semantics import fp_exact as fx
from isa.semantics import half_float, transcendental
from isa.semantics.fp_exact import F32, F64, ret, round_f64, sgn, two_prod, two_sum

_RND = ("rn", "rz", "rm", "rp")
_F64_SAFE = 2.0 ** 995      # Veltkamp splitting overflows above this
_F64_HUGE = 2.0 ** 1020     # sums of two such values cannot overflow
_F64_TINY = 2.0 ** -960     # products above this have representable TwoProduct errors
_HALVES = ("f16", "bf16", "f16x2", "bf16x2")


def _unsupported(instr: Instruction, reason: str) -> UnsupportedInstruction:
    return UnsupportedInstruction(instr.mnemonic, reason=reason)


def _check(instr: Instruction, allowed) -> None:
    extra = [m for m in instr.modifiers if m not in allowed]
    if extra:
        raise _unsupported(instr, f"modifier .{extra[0]} not supported here")


def _rounding(instr: Instruction, default: str | None = "rn") -> str | None:
    r = [m for m in instr.modifiers if m in _RND]
    if len(r) > 1:
        raise _unsupported(instr, "more than one rounding modifier")
    return r[0] if r else default


def _nsrc(instr: Instruction, default: int) -> int:
    return len(instr.operands) - 1 if instr.operands else default


# ----------------------------------------------------------------------------- f32 cores
def _up(x):
    return x.astype(np.float64)


def f32_add(rnd: str):
    if rnd == "rn":
        return lambda a, b: a + b

    def add(a, b):
        s, e = two_sum(_up(a), _up(b))
        r = round_f64(s, sgn(e), F32, rnd).astype(np.float32)
        return np.where(s == 0, -((-a) + (-b)), r) if rnd == "rm" else r
    return add


def f32_mul(rnd: str):
    if rnd == "rn":
        return lambda a, b: a * b
    return lambda a, b: round_f64(_up(a) * _up(b), None, F32, rnd).astype(np.float32)


_MID32_MASK, _MID32 = np.uint64(0x1FFFFFFF), np.uint64(0x10000000)


def f32_fma(rnd: str):
    def fma(a, b, c):
        p, c64 = _up(a) * _up(b), _up(c)        # the f32 product is exact in f64
        if rnd == "rn":
            # RN32(RN64(x)) == RN32(x) unless RN64(x) is exactly an f32 midpoint (or lies in the
            # f32 subnormal range); only then take the round-to-odd path (Boldo-Melquiond).
            s = p + c64
            if not np.any(((s.view(np.uint64) & _MID32_MASK) == _MID32) | (np.abs(s) < 2.0 ** -125)):
                return s.astype(np.float32)
        s, e = two_sum(p, c64)
        e = np.where(np.isfinite(s), e, 0.0)
        if rnd == "rn":                         # RN_24(RO_53(x)) == RN_24(x)
            return fx.round_to_odd(s, e).astype(np.float32)
        r = round_f64(s, sgn(e), F32, rnd)
        if rnd == "rm":
            r = np.where(s == 0, -((-p) + (-c64)), r)
        return r.astype(np.float32)
    return fma


def f32_div(rnd: str):
    if rnd == "rn":
        return lambda a, b: a / b

    def div(a, b):
        a64, b64 = _up(a), _up(b)
        q = a64 / b64
        p, pe = two_prod(q, b64)                # q*b == p + pe exactly; a - p is exact
        es = np.where(np.isfinite(q) & (q != 0), sgn((a64 - p) - pe) * sgn(b64), 0)
        return round_f64(q, es, F32, rnd).astype(np.float32)
    return div


def f32_sqrt(rnd: str):
    if rnd == "rn":
        return np.sqrt

    def sqrt(a):
        a64 = _up(a)
        s = np.sqrt(a64)
        p, pe = two_prod(s, s)
        es = np.where(np.isfinite(s) & (s > 0), sgn((a64 - p) - pe), 0)
        return round_f64(s, es, F32, rnd).astype(np.float32)
    return sqrt


def f32_rcp(rnd: str):
    div = f32_div(rnd)
    return lambda a: div(np.float32(1.0), a)


# ----------------------------------------------------------------------------- f64 cores
def _fallback(r, bad, lane_fn, *args):
    return fx.fill_lanes(r, bad, lane_fn, *args) if np.any(bad) else r


def _finite(*xs):
    out = np.isfinite(xs[0])
    for x in xs[1:]:
        out = out & np.isfinite(x)
    return out


def _sign_zero(neg: bool) -> float:
    return -0.0 if neg else 0.0


def f64_add(rnd: str):
    if rnd == "rn":
        return lambda a, b: a + b

    def add(a, b):
        s, e = two_sum(a, b)
        r = round_f64(s, np.where(np.isfinite(s), sgn(e), 0), F64, rnd)
        if rnd == "rm":
            r = np.where(s == 0, -((-a) + (-b)), r)
        bad = ~np.isfinite(s) & _finite(a, b)   # overflow: exact value still finite
        return _fallback(r, bad, lambda x, y: fx.round_fraction(Fraction(x) + Fraction(y), F64, rnd), a, b)
    return add


def f64_mul(rnd: str):
    if rnd == "rn":
        return lambda a, b: a * b

    def mul(a, b):
        p, pe = two_prod(a, b)
        ok = ((np.abs(p) <= _F64_HUGE) & (np.abs(a) <= _F64_SAFE) & (np.abs(b) <= _F64_SAFE)
              & ((np.abs(p) >= _F64_TINY) | (a == 0) | (b == 0)))
        r = round_f64(p, np.where(ok, sgn(pe), 0), F64, rnd)
        return _fallback(r, _finite(a, b) & ~ok, lambda x, y: fx.round_fraction(
            Fraction(x) * Fraction(y), F64, rnd, np.signbit(x) != np.signbit(y)), a, b)
    return mul


def f64_div(rnd: str):
    if rnd == "rn":
        return lambda a, b: a / b

    def div(a, b):
        q = a / b
        p, pe = two_prod(q, b)
        fin = _finite(a, b) & (b != 0)
        aq = np.abs(q)
        ok = fin & ((a == 0) | ((aq >= 2.0 ** -1000) & (aq <= _F64_SAFE) & (np.abs(b) <= _F64_SAFE)
                                & (np.abs(a) >= _F64_TINY) & (np.abs(a) <= _F64_HUGE)))
        es = np.where(ok & (a != 0), sgn((a - p) - pe) * sgn(b), 0)
        r = round_f64(q, es, F64, rnd)
        return _fallback(r, fin & ~ok, lambda x, y: fx.round_fraction(
            Fraction(x) / Fraction(y), F64, rnd, np.signbit(x) != np.signbit(y)), a, b)
    return div


def f64_sqrt(rnd: str):
    if rnd == "rn":
        return np.sqrt

    def sqrt(a):
        s = np.sqrt(a)
        p, pe = two_prod(s, s)
        ok = (a >= _F64_TINY) & (a <= 2.0 ** 990)
        r = round_f64(s, np.where(ok, sgn((a - p) - pe), 0), F64, rnd)
        bad = (a > 0) & np.isfinite(a) & ~ok
        return _fallback(r, bad, lambda x: fx.round_sqrt_fraction(Fraction(x), F64, rnd), a)
    return sqrt


def f64_rcp(rnd: str):
    div = f64_div(rnd)
    return lambda a: div(np.float64(1.0), a)


def _fma_exact(a: float, b: float, c: float, rnd: str) -> float:
    """One lane of fma.f64 with Fractions (finite operands)."""
    x = Fraction(a) * Fraction(b) + Fraction(c)
    if x != 0:
        return fx.round_fraction(x, F64, rnd)
    if (a == 0 or b == 0) and c == 0:
        pneg, cneg = bool(np.signbit(a) ^ np.signbit(b)), bool(np.signbit(c))
        return _sign_zero((pneg or cneg) if rnd == "rm" else (pneg and cneg))
    return _sign_zero(rnd == "rm")


def f64_fma(rnd: str):
    """fma.rnd.f64. Fast path (Boldo & Melquiond 2008, emulated FMA):
    (uh, ul) = TwoProduct(a, b); (th, tl) = TwoSum(c, uh); v = RO(tl + ul); z = RN(th + v).
    Directed modes round z with the exact sign of (th + tl + ul) - z."""
    def fma(a, b, c):
        uh, ul = two_prod(a, b)
        th, tl = two_sum(c, uh)
        z = th + fx.round_to_odd(*two_sum(tl, ul))
        if rnd == "rn":                         # whole-warp check that every lane is ordinary
            au = np.abs(uh)
            if (np.maximum(np.abs(a), np.abs(b)).max() <= _F64_SAFE and np.abs(c).max() <= _F64_HUGE
                    and au.max() <= _F64_HUGE and au.min() >= _F64_TINY and np.abs(z).min() >= 2.0 ** -1021):
                return z
        fin = _finite(a, b, c)
        ok = (fin & (np.abs(a) <= _F64_SAFE) & (np.abs(b) <= _F64_SAFE) & (np.abs(uh) <= _F64_HUGE)
              & (np.abs(c) <= _F64_HUGE) & ((np.abs(uh) >= _F64_TINY) | (a == 0) | (b == 0))
              & ((np.abs(z) >= 2.0 ** -1021) | (z == 0)))
        if rnd != "rn":
            es = np.where(ok, fx.exact_sign(th, -z, tl, ul), 0)
            z = round_f64(z, es, F64, rnd)
        pz = ((a == 0) | (b == 0)) & (c == 0)
        zero = np.where(pz, -((-uh) + (-c)), -0.0) if rnd == "rm" else np.where(pz, uh + c, 0.0)
        z = np.where(z == 0, zero, z)
        special = np.where(np.isinf(c) & _finite(a, b), c, a * b + c)
        z = np.where(fin, z, special)
        return _fallback(z, fin & ~ok, lambda x, y, w: _fma_exact(x, y, w, rnd), a, b, c)
    return fma


# ----------------------------------------------------------------------------- binding
_CORES = {
    ("add", "f32"): f32_add, ("mul", "f32"): f32_mul, ("fma", "f32"): f32_fma, ("div", "f32"): f32_div,
    ("add", "f64"): f64_add, ("mul", "f64"): f64_mul, ("fma", "f64"): f64_fma, ("div", "f64"): f64_div,
    ("sqrt", "f32"): f32_sqrt, ("sqrt", "f64"): f64_sqrt, ("rcp", "f32"): f32_rcp, ("rcp", "f64"): f64_rcp,
}


def _flush_tiny_exact(core, fused: bool):
    """mul/fma .ftz.f32: H100/H200 flush when the *exact* result is below 2**-126, even if it
    rounds up to 2**-126 (measured: mul.rn.ftz.f32(1 - 2**-24, 2**-126) = +0)."""
    def fn(*xs):
        r = core(*xs)
        p = _up(xs[0]) * _up(xs[1])
        s, e = two_sum(p, _up(xs[2])) if fused else (p, 0.0)
        tiny = (np.abs(s) < 2.0 ** -126) | ((np.abs(s) == 2.0 ** -126) & (e * s < 0))
        return np.where(tiny, r * np.float32(0), r)
    return fn


def _f32_op(core, ftz: bool = False, saturate: bool = False):
    """Wrap an f32 core with .ftz, .sat and NaN canonicalisation."""
    def fn(*xs):
        if ftz:
            xs = [fx.flush32(x) for x in xs]
        r = core(*xs)
        if ftz:
            r = fx.flush32(r)
        if saturate:
            r = fx.sat(r)
        return ret(fx.canon32(r))
    return fn


# Which operand's NaN an f64 result carries (quieted) when several are NaN, as measured on
# H100/H200: b before a for add/sub/mul/min/max, b, c, a for fma, a before b for div.
_NAN_ORDER = {"add": (1, 0), "sub": (1, 0), "mul": (1, 0), "fma": (1, 2, 0), "mad": (1, 2, 0),
              "div": (0, 1), "min": (1, 0), "max": (1, 0)}


def _f64_op(core, order=(0,)):
    def fn(*xs):
        return ret(fx.nan_operand(np.asarray(core(*xs)), [xs[i] for i in order]))
    return fn


def _bind_rounded(instr: Instruction, op: str, t: str, nsrc: int) -> Bound:
    """add/sub/mul/fma/mad/div.rnd/sqrt.rnd/rcp.rnd on f32/f64."""
    sat_ok = op in ("add", "sub", "mul", "fma", "mad") and t == "f32"
    _check(instr, _RND + (("ftz",) if t == "f32" else ()) + (("sat",) if sat_ok else ()))
    rnd = _rounding(instr)
    base = {"sub": "add", "mad": "fma"}.get(op, op)
    core = _CORES[(base, t)](rnd)
    if op == "sub":
        add = core
        core = lambda a, b: add(a, -b)      # noqa: E731  (negation is exact)
    mods = instr.modifiers
    if t == "f32" and "ftz" in mods and base in ("mul", "fma"):
        core = _flush_tiny_exact(core, base == "fma")
    fn = _f32_op(core, "ftz" in mods, "sat" in mods) if t == "f32" else _f64_op(core, _NAN_ORDER.get(op, (0,)))
    return Bound((t,), (t,) * nsrc, fn, "fp32" if t == "f32" else "fp64")


def _bind_minmax(instr: Instruction, t: str) -> Bound:
    mods = instr.modifiers
    _check(instr, ("ftz", "NaN", "xorsign", "abs") if t == "f32" else ("NaN", "xorsign", "abs"))
    if ("xorsign" in mods) != ("abs" in mods):
        raise _unsupported(instr, ".xorsign and .abs go together")
    nsrc = _nsrc(instr, 2)
    if nsrc not in (2, 3) or (nsrc == 3 and "xorsign" in mods):
        raise _unsupported(instr, f"{nsrc} source operands")
    is_max, nan_mode, xor = instr.opcode == "max", "NaN" in mods, "xorsign" in mods
    nan = fx.NAN32 if t == "f32" else None
    ftz = "ftz" in mods

    def fn(*xs):
        if ftz:
            xs = [fx.flush32(x) for x in xs]
        if nsrc == 3 and "abs" in mods:
            xs = [np.abs(x) for x in xs]
        r = fx.min_max(xs[0], xs[1], is_max, nan_mode, xor, nan)
        if nsrc == 3:
            r = fx.min_max(r, xs[2], is_max, nan_mode, False, nan)
        if t == "f64":
            r = fx.nan_operand(r, xs[::-1])
        return ret(fx.flush32(r) if ftz else np.asarray(r))
    return Bound((t,), (t,) * nsrc, fn, "fp32" if t == "f32" else "fp64")


_SIGN = {"f32": (np.uint32, 0x80000000), "f64": (np.uint64, 0x8000000000000000)}


def _bind_sign(instr: Instruction, t: str) -> Bound:
    """neg / abs as sign-bit operations. NaN inputs (PTX: unspecified NaN) give what H100/H200
    give: the canonical NaN for f32, the input quieted with its sign unchanged for f64."""
    _check(instr, ("ftz",) if t == "f32" else ())
    ut, bit = _SIGN[t]
    s, mask = ut(bit), ut(~bit & (2 ** (8 * np.dtype(ut).itemsize) - 1))
    ftz = "ftz" in instr.modifiers
    neg = instr.opcode == "neg"

    def fn(a):
        if ftz:
            a = fx.flush32(a)
        bits = np.asarray(a).view(ut)
        r = (bits ^ s if neg else bits & mask).view(np.dtype(t.replace("f", "float")))
        return ret(fx.canon32(r) if t == "f32" else fx.nan_operand(r, [a]))
    return Bound((t,), (t,), fn, "fp32" if t == "f32" else "fp64")


def bind_float(instr: Instruction) -> Bound:
    """Bind a float-typed add/sub/mul/mad/fma/div/min/max/neg/abs (any float type)."""
    types = instr.types
    if len(types) != 1:
        raise _unsupported(instr, "expected one floating-point type")
    t, op = types[0], instr.opcode
    if t in _HALVES:
        return half_float.bind_half(instr)
    if t not in ("f32", "f64"):
        raise _unsupported(instr, f"type .{t} not supported")
    mods = instr.modifiers
    if op == "div" and ("approx" in mods or "full" in mods or (t == "f32" and _rounding(instr, None) is None)):
        return transcendental.bind_mufu(instr)
    if op in ("add", "sub", "mul", "fma", "mad", "div"):
        return _bind_rounded(instr, op, t, 3 if op in ("fma", "mad") else 2)
    if op in ("min", "max"):
        return _bind_minmax(instr, t)
    if op in ("neg", "abs"):
        return _bind_sign(instr, t)
    raise _unsupported(instr, "not a floating-point arithmetic opcode")


def bind_rcp_sqrt(instr: Instruction) -> Bound:
    """rcp / sqrt: `.approx` (and legacy modifier-less .f32) go to the MUFU model,
    `.rn/.rz/.rm/.rp` are correctly rounded."""
    types = instr.types
    if len(types) != 1 or types[0] not in ("f32", "f64"):
        raise _unsupported(instr, "type must be .f32 or .f64")
    t = types[0]
    if "approx" in instr.modifiers or (t == "f32" and _rounding(instr, None) is None):
        return transcendental.bind_mufu(instr)
    return _bind_rounded(instr, instr.opcode, t, 1)


def bind_copysign(instr: Instruction) -> Bound:
    """copysign.type d, a, b: d = b with the sign bit of a."""
    _check(instr, ())
    types = instr.types
    if types not in (("f32",), ("f64",)):
        raise _unsupported(instr, "type must be .f32 or .f64")
    t = types[0]
    ut, bit = _SIGN[t]
    s, mask = ut(bit), ut(~bit & (2 ** (8 * np.dtype(ut).itemsize) - 1))
    ft = np.dtype(t.replace("f", "float"))

    def fn(a, b):
        return ret(((np.asarray(b).view(ut) & mask) | (np.asarray(a).view(ut) & s)).view(ft))
    return Bound((t,), (t, t), fn, "fp32" if t == "f32" else "fp64")


_TESTP = {
    "finite": lambda a, mn: np.isfinite(a),
    "infinite": lambda a, mn: np.isinf(a),
    "number": lambda a, mn: ~np.isnan(a),
    "notanumber": lambda a, mn: np.isnan(a),
    "normal": lambda a, mn: np.isfinite(a) & ((np.abs(a) >= mn) | (a == 0)),   # zeros count as normal
    "subnormal": lambda a, mn: (np.abs(a) < mn) & (a != 0),
}


def bind_testp(instr: Instruction) -> Bound:
    """testp.op.type p, a (op in finite, infinite, number, notanumber, normal, subnormal)."""
    mods, types = instr.modifiers, instr.types
    if len(mods) != 1 or mods[0] not in _TESTP or types not in (("f32",), ("f64",)):
        raise _unsupported(instr, "expected testp.<property>.f32|f64")
    test, t = _TESTP[mods[0]], types[0]
    mn = np.float32(F32.min_normal) if t == "f32" else F64.min_normal
    return Bound(("pred",), (t,), lambda a: ret(np.asarray(test(a, mn))), "fp32" if t == "f32" else "fp64")


def _bind_fma(instr: Instruction) -> Bound:
    return bind_float(instr)


ENTRIES: list[OpSpec] = [
    OpSpec("fma", "alu", _bind_fma, "fused multiply-add, one rounding (f32/f64 all modes; f16/bf16 .rn)"),
    OpSpec("rcp", "alu", bind_rcp_sqrt, "reciprocal: .approx (MUFU) or correctly rounded .rnd"),
    OpSpec("sqrt", "alu", bind_rcp_sqrt, "square root: .approx (MUFU) or correctly rounded .rnd"),
    OpSpec("rsqrt", "alu", transcendental.bind_mufu, "approximate reciprocal square root (MUFU)"),
    OpSpec("ex2", "alu", transcendental.bind_mufu, "approximate 2**a (MUFU)"),
    OpSpec("lg2", "alu", transcendental.bind_mufu, "approximate log2(a) (MUFU)"),
    OpSpec("sin", "alu", transcendental.bind_mufu, "approximate sine (MUFU)"),
    OpSpec("cos", "alu", transcendental.bind_mufu, "approximate cosine (MUFU)"),
    OpSpec("tanh", "alu", transcendental.bind_mufu, "approximate hyperbolic tangent (MUFU)"),
    OpSpec("copysign", "alu", bind_copysign, "d = b with the sign of a"),
    OpSpec("testp", "alu", bind_testp, "test a float property into a predicate"),
]
