"""Exact floating-point building blocks shared by the PTX float semantics.

What it models: IEEE 754 binary formats (f16, bf16, tf32, f32, f64) and correctly rounded
results in every PTX rounding mode (.rn ties-to-even, .rna ties-away, .rz, .rm, .rp),
computed with numpy over lanes. The idea throughout: compute a double `x` and the *sign* of
the exact residual `X - x` (error-free transformations make that sign exact), then round
`x` with that sign to the target format (`round_f64`). Lanes whose operands lie where the
transformations are not exact (splitting overflow, underflowing error terms) are
recomputed with `fractions.Fraction` (`round_fraction`), one lane at a time.

What it does not model: floating-point exception flags; NaN payloads (callers decide).

Sources:
- D. E. Knuth, TAOCP vol. 2, 4.2.2 (TwoSum); T. J. Dekker, "A floating-point technique for
  extending the available precision", Numer. Math. 18, 1971 (TwoProduct, Veltkamp split).
- S. Boldo, G. Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms
  using rounding to odd", IEEE Trans. Computers 57(4), 2008 (round-to-odd; FMA emulation).
- J. R. Shewchuk, "Adaptive precision floating-point arithmetic and fast robust geometric
  predicates", 1997 (grow-expansion; sign of an expansion).
- S. A. Figueroa, "When is double rounding innocuous?", SIGNUM Newsl. 30(3), 1995: RN_p of
  RN_q of a single +,-,*,/,sqrt equals RN_p when q >= 2p+2 (so f32 -> f16/bf16 and
  f64 -> f32 double rounding of one operation is exact).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np


@dataclass(frozen=True, slots=True)
class FloatFormat:
    """A binary floating-point format: `precision` significand bits (with the hidden bit),
    normal exponents `emin..emax`."""
    name: str
    precision: int
    emin: int
    emax: int

    @property
    def max_finite(self) -> float:
        return math.ldexp(2.0 - 2.0 ** (1 - self.precision), self.emax)

    @property
    def min_normal(self) -> float:
        return math.ldexp(1.0, self.emin)


F16 = FloatFormat("f16", 11, -14, 15)
BF16 = FloatFormat("bf16", 8, -126, 127)
TF32 = FloatFormat("tf32", 11, -126, 127)
F32 = FloatFormat("f32", 24, -126, 127)
F64 = FloatFormat("f64", 53, -1022, 1023)
FORMATS = {"f16": F16, "bf16": BF16, "tf32": TF32, "f32": F32, "f64": F64}

ROUNDING = ("rn", "rna", "rz", "rm", "rp")

# Canonical NaNs that NVIDIA hardware produces for generated single/half NaNs.
NAN32 = np.uint32(0x7FFFFFFF).view(np.float32)
NAN16_BITS = np.uint16(0x7FFF)
NAN64_RCP = np.uint64(0x7FFFFFFF00000000).view(np.float64)   # rcp/rsqrt.approx.ftz.f64
MIN_NORMAL32 = np.float32(2.0 ** -126)


def ret(x):
    """Turn a 0-d array into a numpy scalar (fn results are arrays over lanes or scalars)."""
    return x[()] if type(x) is np.ndarray and x.ndim == 0 else x


def sgn(x):
    """Sign of x as int8 (-1, 0, +1); NaN gives 0."""
    return (x > 0).astype(np.int8) - (x < 0).astype(np.int8)


# ----------------------------------------------------------------------------- error-free transformations
def two_sum(a, b):
    """s + e == a + b exactly, s = RN(a + b) (Knuth). Exact unless s overflows."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a):
    """Veltkamp split of a double into 26- and 27-bit halves; overflows for |a| > 2**995."""
    t = a * 134217729.0
    hi = t - (t - a)
    return hi, a - hi


def two_prod(a, b):
    """p + e == a * b exactly, p = RN(a*b) (Dekker). Exact when |a|, |b| <= 2**995 and
    a*b is 0 or |a*b| >= 2**-960 (no underflow in the error term)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def round_to_odd(s, e):
    """RO(s + e) for s = RN(s + e): the double bracketing the exact sum whose last bit is 1
    (s itself when e == 0). Then RN_q(RO_53(X)) == RN_q(X) for q <= 51 (Boldo-Melquiond)."""
    s = np.asarray(s, np.float64)
    inexact = e != 0
    toward_zero = ((e < 0) != (s < 0)) & inexact        # |s| > |x|: truncation is one below
    return ((s.view(np.int64) - toward_zero) | inexact).view(np.float64)


def exact_sign(*terms):
    """Exact sign (-1, 0, +1 as int8) of a sum of finite doubles: Shewchuk's grow-expansion
    makes a nonoverlapping expansion whose largest nonzero component has the sum's sign."""
    expansion = [np.asarray(terms[0], np.float64)]
    for b in terms[1:]:
        q = b
        grown = []
        for comp in expansion:
            q, h = two_sum(q, comp)
            grown.append(h)
        grown.append(q)
        expansion = grown
    out = np.zeros(np.broadcast(*expansion).shape, np.int8)
    for comp in expansion:                      # increasing magnitude: last nonzero wins
        out = np.where(comp != 0, sgn(comp), out)
    return out


# ----------------------------------------------------------------------------- rounding
def round_f64(x, esign, fmt: FloatFormat, mode: str):
    """Round X = x + r to `fmt` in `mode`, where x is a double, r is tiny (|r| below half an
    f64 ulp of x) and `esign` = sign(r) (int array, scalar, or None for r = 0).
    Returns doubles exactly representable in `fmt` (or +-inf); non-finite x passes through.
    Overflow follows IEEE 754: RN and away-directions give inf, the others MAX_NORM."""
    x = np.asarray(x, np.float64)
    neg = np.signbit(x)
    fin = np.isfinite(x)
    ax = np.where(fin, np.abs(x), 0.0)
    e = np.frexp(ax)[1] - 1                     # exponent of the leading bit
    p = fmt.precision
    qexp = np.maximum(e, fmt.emin) - (p - 1)
    y = np.ldexp(ax, -qexp)                     # significand in units of the result ulp
    n = np.floor(y)
    frac = y - n
    emag = 0 if esign is None else np.where(neg, -esign, esign)   # sign of |X| - |x|
    below = (frac == 0) & (emag < 0)
    # just below a power of two the ulp halves: truncation lands on 2^e - ulp/2
    k_down = n - np.where(below, np.where((n == 2.0 ** (p - 1)) & (e > fmt.emin), 0.5, 1.0), 0.0)
    k_up = n + ((frac > 0) | (emag > 0))
    if mode == "rn":
        odd = np.fmod(n, 2.0) == 1.0
        k = n + ((frac > 0.5) | ((frac == 0.5) & ((emag > 0) | ((emag == 0) & odd))))
        away = True
    elif mode == "rna":
        k = n + ((frac > 0.5) | ((frac == 0.5) & (emag >= 0)))
        away = True
    elif mode == "rz":
        k, away = k_down, False
    elif mode in ("rm", "rp"):
        away = neg if mode == "rm" else ~neg
        k = np.where(away, k_up, k_down)
    else:
        raise ValueError(f"unknown rounding mode {mode!r}")
    mag = np.ldexp(k, qexp)
    mag = np.where(mag > fmt.max_finite, np.where(away, np.inf, fmt.max_finite), mag)
    return np.where(fin, np.copysign(mag, x), x)


def round_fraction(q: Fraction, fmt: FloatFormat, mode: str, negative_zero: bool = False) -> float:
    """Correctly round the exact rational q to `fmt` in `mode` (reference and slow path).
    A zero q gives -0.0 when `negative_zero`, else +0.0."""
    if q == 0:
        return -0.0 if negative_zero else 0.0
    neg = q < 0
    a = -q if neg else q
    num, den = a.numerator, a.denominator
    e = num.bit_length() - den.bit_length()     # floor(log2 a) is e or e - 1
    if (num << max(0, -e)) < (den << max(0, e)):
        e -= 1
    qexp = max(e, fmt.emin) - (fmt.precision - 1)
    scaled = a / Fraction(2) ** qexp if qexp >= 0 else a * (1 << -qexp)
    n = scaled.numerator // scaled.denominator
    rem = scaled - n
    away_dir = (mode == "rm" and neg) or (mode == "rp" and not neg)
    if mode == "rn":
        k = n + (rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1))
    elif mode == "rna":
        k = n + (rem >= Fraction(1, 2))
    elif mode in ("rz", "rm", "rp"):
        k = n + (1 if (away_dir and rem != 0) else 0)
    else:
        raise ValueError(f"unknown rounding mode {mode!r}")
    value = Fraction(k) * Fraction(2) ** qexp
    if value > Fraction(fmt.max_finite):
        big = math.inf if mode in ("rn", "rna") or away_dir else fmt.max_finite
        return -big if neg else big
    r = math.ldexp(k, qexp)
    return -r if neg else r


def round_sqrt_fraction(a: Fraction, fmt: FloatFormat, mode: str) -> float:
    """Correctly rounded sqrt of a rational a > 0 in `fmt` and `mode` (integer isqrt)."""
    num, den = a.numerator, a.denominator
    ea = num.bit_length() - den.bit_length()
    if (num << max(0, -ea)) < (den << max(0, ea)):
        ea -= 1
    qexp = max(ea // 2, fmt.emin) - (fmt.precision - 1)
    t = a / Fraction(4) ** qexp if qexp >= 0 else a * (1 << (-2 * qexp))
    n = math.isqrt(t.numerator // t.denominator)
    exact = t == n * n
    mid = t - (Fraction(2 * n + 1, 2) ** 2)     # sign of sqrt(t) - (n + 1/2)
    if mode == "rn":
        k = n + (mid > 0 or (mid == 0 and n % 2 == 1))
    elif mode == "rna":
        k = n + (mid >= 0)
    elif mode in ("rz", "rm"):
        k = n
    else:
        k = n + (not exact)
    value = Fraction(k) * Fraction(2) ** qexp
    if value > Fraction(fmt.max_finite):
        return math.inf if mode in ("rn", "rna", "rp") else fmt.max_finite
    return math.ldexp(k, qexp)


def fill_lanes(out, mask, lane_fn, *args):
    """out[i] = lane_fn(*[float(arg[i])]) for lanes where mask is set (the exact slow path).
    Returns a fresh array; `out` may be 0-d."""
    args = np.broadcast_arrays(*[np.asarray(a, np.float64) for a in args])
    out = np.array(np.broadcast_to(out, args[0].shape), np.float64)
    for i in np.flatnonzero(np.broadcast_to(mask, out.shape)):
        out.flat[i] = lane_fn(*[float(a.flat[i]) for a in args])
    return out


# ----------------------------------------------------------------------------- format helpers
def flush32(x):
    """.ftz: f32 subnormals become sign-preserving zero."""
    return np.where(np.abs(x) < MIN_NORMAL32, x * np.float32(0), x)


_QUIET64 = np.uint64(1 << 51)


def nan_operand(r, operands):
    """f64 NaN propagation: where r is NaN and an operand is NaN, take the first NaN operand
    of `operands` (in priority order), quieted; other lanes keep r."""
    if not np.any(r != r):
        return r
    out = r
    for x in reversed(operands):
        x = np.asarray(x, np.float64)
        out = np.where(x != x, (x.view(np.uint64) | _QUIET64).view(np.float64), out)
    return np.where(r != r, out, r)


def canon32(x):
    """Replace any f32 NaN by the canonical 0x7FFFFFFF."""
    return np.where(x != x, NAN32, x)


def sat(x):
    """.sat: clamp to [+0.0, 1.0], NaN -> +0.0."""
    return np.where(x > 0, np.minimum(x, x.dtype.type(1)), x.dtype.type(0))


def bf16_to_f32(bits):
    """Raw bf16 bits (uint16) -> float32 value (exact)."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16_rn(x):
    """float32 -> raw bf16 bits, round to nearest even; NaN -> canonical 0x7FFF."""
    b = np.asarray(x, np.float32).view(np.uint32)
    r = (b + (np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)
    return np.where(x != x, NAN16_BITS, r.astype(np.uint16))


def f64_to_half_bits(x, fmt: FloatFormat):
    """Doubles exactly representable in f16/bf16 (or +-inf, NaN) -> raw uint16 bits;
    NaN -> canonical 0x7FFF."""
    x = np.asarray(x, np.float64)
    if fmt is F16:
        bits = x.astype(np.float16).view(np.uint16)
    else:
        bits = (x.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    return np.where(x != x, NAN16_BITS, bits)


def half_bits_to_f64(bits, fmt: FloatFormat):
    """Raw f16/bf16 bits -> exact doubles."""
    bits = np.asarray(bits, np.uint16)
    if fmt is F16:
        return bits.view(np.float16).astype(np.float64)
    return bf16_to_f32(bits).astype(np.float64)


# ----------------------------------------------------------------------------- shared op cores
def min_max(a, b, is_max: bool, nan_mode: bool, xorsign: bool, nan):
    """PTX min/max of two float arrays: a NaN operand yields the other one (`.NaN`: any NaN
    yields NaN), -0.0 < +0.0, `.xorsign.abs` compares magnitudes and sets the sign to the
    XOR of the input signs. Both-NaN results become `nan` (None keeps numpy's NaN)."""
    if xorsign:
        xs = np.signbit(a) ^ np.signbit(b)
        a, b = np.abs(a), np.abs(b)
    r = np.fmax(a, b) if is_max else np.fmin(a, b)
    zsign = (np.signbit(a) & np.signbit(b)) if is_max else (np.signbit(a) | np.signbit(b))
    zero = r.dtype.type(0)
    r = np.where((a == 0) & (b == 0), np.where(zsign, -zero, zero), r)
    if nan_mode:
        r = np.where(np.isnan(a) | np.isnan(b), r.dtype.type(np.nan) if nan is None else nan, r)
    elif nan is not None:
        r = np.where(r != r, nan, r)
    if xorsign:
        r = np.where(r != r, r, np.where(xs, -np.abs(r), np.abs(r)))
    return r


def packed2(core):
    """Lift `core` (raw uint16 bits per operand -> raw uint16 bits) to packed x2 operands
    held as uint32: the low and high halves are computed independently."""
    def fn(*xs):
        xs = [np.asarray(x, np.uint32) for x in xs]
        lo = core(*[(x & np.uint32(0xFFFF)).astype(np.uint16) for x in xs])
        hi = core(*[(x >> np.uint32(16)).astype(np.uint16) for x in xs])
        return ret((np.asarray(hi).astype(np.uint32) << np.uint32(16)) | np.asarray(lo).astype(np.uint32))
    return fn
