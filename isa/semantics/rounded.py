"""Correctly rounded f32/f64 arithmetic cores: add, mul, fma, div, sqrt, rcp in .rn/.rz/.rm/.rp.

What it models: each core is `core(rnd)(*operands) -> result` on numpy values of one float
type, bit-exact to IEEE 754 rounding of the exact result (PTX ISA 9.7.3.3-9.7.3.17).
- f32 .rn add/sub/mul/div/sqrt are numpy's own IEEE float32 operations. The other f32 modes
  and fma compute in doubles (the f32 product is exact there), take the exact sign of the
  residual from TwoSum/TwoProduct and round with `fp_exact.round_f64`; `fma.rn.f32` falls
  back to round-to-odd only where the double result sits exactly on an f32 midpoint.
- f64 `fma.rn` is the Boldo-Melquiond emulation: (uh, ul) = TwoProduct(a, b);
  (th, tl) = TwoSum(c, uh); v = RO(tl + ul); z = RN(th + v). Directed modes round z with the
  exact sign of (th + tl + ul) - z (Shewchuk expansion). f64 directed add/mul/div/sqrt use
  the TwoSum/TwoProduct residual sign.
- Lanes where those transformations are not provably exact (|a|,|b| > 2**995, products
  below 2**-960, subnormal fma results, overflow) are recomputed with fractions.Fraction.
- Exact-zero sums are -0.0 under .rm and +0.0 otherwise (IEEE 754-2019 6.3).

What it does not model: .ftz, .sat and NaN choice; `floating` wraps the cores with those.

Sources: PTX ISA 9.7.3; IEEE 754-2019; the papers cited in fp_exact.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from isa.semantics import fp_exact as fx
from isa.semantics.fp_exact import F32, F64, round_f64, sgn, two_prod, two_sum

_F64_SAFE = 2.0 ** 995      # Veltkamp splitting overflows above this
_F64_HUGE = 2.0 ** 1020     # sums of two such values cannot overflow
_F64_TINY = 2.0 ** -960     # products above this have representable TwoProduct errors


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
CORES = {
    ("add", "f32"): f32_add, ("mul", "f32"): f32_mul, ("fma", "f32"): f32_fma, ("div", "f32"): f32_div,
    ("add", "f64"): f64_add, ("mul", "f64"): f64_mul, ("fma", "f64"): f64_fma, ("div", "f64"): f64_div,
    ("sqrt", "f32"): f32_sqrt, ("sqrt", "f64"): f64_sqrt, ("rcp", "f32"): f32_rcp, ("rcp", "f64"): f64_rcp,
}
