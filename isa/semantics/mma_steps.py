"""The per-element steps of `isa.semantics.mma_kernel._kernel`, compiled scalar functions: float64
fields read and written through the bits, the rounding to an accumulator format
(`mma_numerics.round_to_format`), QGMMA's sum cut, an input pattern's decoding, and one
element's block in full generality (any anchor, NaN / infinity), which the kernel's vectorised
passes hand the elements they do not take. Why each is exact: `mma_kernel`'s docstring.

Compiled once per machine (numba, `cache=True`); `nogil`.

Sources: as `isa.semantics.mma_numerics` (the model); IEEE 754 float64 arithmetic.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

NONE = -(1 << 20)                       # anchor of a zero term: joins no maximum
F32_MIN_NORMAL = 2.0 ** -126
F32_OVERFLOW = 2.0 ** 128
F32_POW2_MAX = 2.0 ** 127            # the largest power of two a float32 holds
RZ32_MASK = ~((1 << 29) - 1)            # float64 significand bits beyond f32's 23

# -------------------------------------------------------------------- compiled scalar steps
# (float64 fields read and written through the bits: every value here is a normal float64)
@njit(cache=True, nogil=True, inline="always")
def _exp(x):
    """Leading-bit exponent of a nonzero finite float64 (normal: all values here are)."""
    return ((np.float64(x).view(np.int64) >> 52) & 0x7FF) - 1023


@njit(cache=True, nogil=True, inline="always")
def _pow2(e):
    """2.0 ** e for -1022 <= e <= 1023."""
    return np.int64(e + 1023 << 52).view(np.float64)


@njit(cache=True, nogil=True, inline="always")
def _bitlen(a):
    """Bit length of 0 <= a < 2^53."""
    return _exp(float(a)) + 1 if a else 0


@njit(cache=True, nogil=True)
def _round(s, e, man, expb, bias, emin, rne, overflow_inf, neg_zero):
    """`mma_numerics.round_to_format` of s * 2^e (|s| < 2^53): the format's bits."""
    signbit = np.int64(1) << (expb + man)
    a = abs(s)
    if a == 0:
        return signbit if neg_zero else np.int64(0)
    q = max(_bitlen(a) - 1 + e, emin) - man              # exponent of the last kept bit
    if q > e:
        sh = q - e
        if sh > 62:
            kept = np.int64(0)
        else:
            kept = a >> sh
            if rne:
                rem = a - (kept << sh)
                half = np.int64(1) << (sh - 1)
                if rem > half or (rem == half and kept & 1):
                    kept += 1
    else:
        kept = a << (e - q)
    if kept >> (man + 1):
        kept >>= 1
        q += 1
    top = (1 << expb) - 1
    if kept >> man == 0:
        body = kept
    else:
        ef = q + man + bias
        if ef >= top:
            body = (top << man) if rne or overflow_inf else ((top - 1) << man) | ((1 << man) - 1)
        else:
            body = (ef << man) | (kept & ((1 << man) - 1))
    return (signbit if s < 0 else 0) | body


@njit(cache=True, nogil=True, inline="always")
def _value(bits, man, expb, bias, emin):
    """Accumulator bits -> float64."""
    top = (1 << expb) - 1
    ef = (bits >> man) & top
    mant = bits & ((1 << man) - 1)
    neg = (bits >> (expb + man)) & 1
    if ef == top:
        return (-math.inf if neg else math.inf) if mant == 0 else math.nan
    if ef == 0:
        v = float(mant) * _pow2(emin - man)
        return -v if neg else v
    return np.int64((neg << 63) | ((ef - bias + 1023) << 52) | (mant << (52 - man))).view(np.float64)


@njit(cache=True, nogil=True)
def _rn_bits(x, man, expb, bias, emin):
    """Bits of float64 x rounded to nearest even in the accumulator format (-0 kept, x finite)."""
    if x == 0:
        return np.int64(1) << (expb + man) if math.copysign(1.0, x) < 0 else np.int64(0)
    xb = np.float64(x).view(np.int64)
    m53 = (xb & ((np.int64(1) << 52) - 1)) | (np.int64(1) << 52)
    e = ((xb >> 52) & 0x7FF) - 1023 - 52
    return _round(-m53 if x < 0 else m53, e, man, expb, bias, emin, True, True, False)


@njit(cache=True, nogil=True, inline="always")
def _cut(x, floor):
    """The integer part of float64 x (|x| < 2^62): toward 0, or with `floor` toward -inf
    (`math.trunc` / `math.floor`; the int64 conversion truncates in one instruction)."""
    i = np.int64(x)
    return i - 1 if floor and x < i else i


@njit(cache=True, nogil=True, inline="always")
def _finish(s, lsb, allzero, acc, man, expb, bias, emin, rne, overflow_inf, signed_zero, sum_bits, sum_rne):
    """A block's exact cut sum s * 2^lsb -> (accumulator value, its bits): QGMMA's sum cut
    (`mma_numerics._cut`), the rounding to the accumulator, a zero result made +0."""
    if sum_bits:
        sa = abs(s)
        sh = _bitlen(sa) - sum_bits
        if sh > 0:
            kept = sa >> sh
            rem = sa - (kept << sh)
            half = np.int64(1) << (sh - 1)
            if sum_rne and (rem > half or (rem == half and kept & 1)):
                kept += 1
            s = -kept if s < 0 else kept
            lsb += sh
    neg_zero = signed_zero and s == 0 and allzero and acc == 0 and math.copysign(1.0, acc) < 0
    bits = _round(s, lsb, man, expb, bias, emin, rne, overflow_inf, neg_zero)
    acc = _value(bits, man, expb, bias, emin)
    if acc == 0 and not signed_zero:
        return 0.0, np.int64(0)
    return acc, bits


@njit(cache=True, nogil=True)
def _decode32(x, mask32, emin):
    """(float64 value, `in_exp` exponent) of f32 / tf32 pattern x (its sign already flipped by
    imm-scale), its low bits cleared by `mask32`."""
    v = np.float64(np.uint32(x & mask32).view(np.float32))
    if v != 0 and math.isfinite(v):
        return v, np.int32(max(_exp(v), emin))
    return v, np.int32(NONE)


@njit(cache=True, nogil=True)
def _block_one(av, bv, ae, be, j, k0, k1, acc, exp_sum, window, floor, emin, prod):
    """One element's block k0..k1 in full generality (any anchor, NaN / infinity): (True, the
    float64 sum that decides a non-finite block) or (False, s, lsb, allzero) for `_finish`."""
    amax = NONE
    finite = math.isfinite(acc)
    for kk in range(k0, k1):
        p = av[kk] * bv[kk, j]
        prod[kk - k0] = p
        finite &= math.isfinite(p)
        if p != 0:
            anc = np.int64(ae[kk] + be[kk, j]) if exp_sum else _exp(p)
            amax = max(amax, anc)
    if not finite:                                   # NaN / inf decided for the block
        for kk in range(k1 - k0):
            acc += prod[kk]
        return True, acc, np.int64(0), 0, False
    allzero = amax == NONE
    if acc != 0:
        ce = _exp(acc)
        amax = max(amax, max(ce, emin) if exp_sum else ce)
    if amax == NONE:
        return False, 0.0, np.int64(0), 0, allzero
    lsb = amax - window + 1
    scale = _pow2(-lsb)
    s = _cut(acc * scale, floor)
    for kk in range(k0, k1):
        s += _cut(prod[kk - k0] * scale, floor)
    return False, 0.0, s, lsb, allzero
