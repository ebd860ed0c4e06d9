"""Tensor-core matrix multiply-accumulate over whole batches: the block-FMA arithmetic of the
scalar reference `isa.semantics.mma_numerics.dot`, bit for bit, for every `BlockFma` parameter
set, compiled (tests/isa/test_mma_batch.py compares the two on random and edge-rich inputs of
every form and on random parameter sets).

What it computes: `mma(A, B, C, atype, btype, ctype, model)` with A (..., M, K), B (..., K, N),
C (..., M, N) bit patterns and any leading batch shape (the warps of a warp instruction, and
anything else), D (..., M, N) accumulator bits. numpy decodes the inputs to float64 and their
anchor exponents for the whole batch; one compiled pass (`_kernel`) then runs the reference's
steps for every output element:
- every input of these formats is a float64, and so is every product (at most 2 x 11
  significand bits; magnitudes between 2^-272 and 2^256, normal float64s), so `a * b` is the
  exact product;
- a block's anchor is the largest exponent sum (or leading exponent) of its nonzero products
  and of its addend (C: at most 24 bits, down to 2^-149); scaling a term by 2^-lsb (lsb =
  anchor - window + 1, the anchor between -272 and 256) is exact (every scaled term is a normal
  float64 below 2^(window + 1)), and `trunc` / `floor` of it is the reference's shift of the
  integer significand (magnitude / floor truncation);
- the cut terms are integers below 2^(window + 1), at most 33 of them, so their float64 sum is
  exact; QGMMA's sum cut and the rounding to the accumulator are done on int64 as
  `mma_numerics._cut` and `round_to_format` do them;
- NaN and infinity: a block's products plus its addend, summed in float64, are non-finite
  exactly when the reference's `_special` decides the block (a NaN, inf * 0, inf - inf, or an
  infinity; finite products never overflow float64), and that sum is its result.

Compiled once per machine (numba, `cache=True`, like the fast core's kernels); `nogil`.

Sources: as `isa.semantics.mma_numerics` (the model); IEEE 754 float64 arithmetic.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numba import njit

from isa.semantics.mma_numerics import ACC, BlockFma
from isa.semantics.tensor_formats import FORMATS, decode

NONE = -(1 << 20)                       # anchor of a zero term: joins no maximum


@lru_cache(maxsize=None)
def _table(name: str, emin: int) -> tuple[np.ndarray, np.ndarray]:
    """(float64 value, anchor exponent `in_exp`) of every bit pattern of an 8- or 16-bit format."""
    v = decode(np.arange(1 << FORMATS[name].bits, dtype=np.int64), FORMATS[name])
    e = in_exp(v, emin)
    v.flags.writeable = e.flags.writeable = False
    return v, e


def in_exp(v: np.ndarray, emin: int) -> np.ndarray:
    """The exponent each nonzero finite value gives an `exp_sum` anchor (a subnormal: emin);
    NONE for zero (and for NaN/inf, whose blocks are decided otherwise)."""
    ok = (v != 0) & np.isfinite(v)
    e = np.frexp(np.where(ok, v, 1.0))[1].astype(np.int64) - 1
    return np.where(ok, np.maximum(e, emin), NONE)


def operand(bits, name: str, emin: int | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Bit patterns (any integer dtype) -> (exact float64 values, `in_exp` exponents with this
    emin, or None without an emin); tf32 ignores its low 13 bits."""
    fmt = FORMATS[name]
    if fmt.bits <= 16:
        idx = np.asarray(bits).astype(np.intp) & ((1 << fmt.bits) - 1)
        v, e = _table(name, 0 if emin is None else emin)
        return v[idx], None if emin is None else e[idx]
    b = np.asarray(bits).astype(np.uint32)
    if fmt.shift:
        b = b & np.uint32(0xFFFFFFFF ^ ((1 << fmt.shift) - 1))
    with np.errstate(invalid="ignore"):                   # signalling NaNs stay NaN
        v = b.view(np.float32).astype(np.float64)
    return v, None if emin is None else in_exp(v, emin)


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


@njit(cache=True, nogil=True)
def _finite_rows(v):
    """(T, R) flags: row r of batch t (over the last axis) holds only finite values."""
    nt, r, k = v.shape
    ok = np.ones((nt, r), np.bool_)
    for t in range(nt):
        for i in range(r):
            for kk in range(k):
                if not math.isfinite(v[t, i, kk]):
                    ok[t, i] = False
                    break
    return ok


@njit(cache=True, nogil=True)
def _kernel(a, b, cv, ea, eb, out, block, window, rne, exp_sum, floor, c_last_rn, signed_zero,
            sum_bits, sum_rne, overflow_inf, man, expb, bias, emin, nan_bits):
    """out[t, i, j] = accumulator bits of cv[t, i, j] + sum_k a[t, i, k] b[t, j, k] (values, with
    anchor exponents ea, eb; b and eb transposed) as `mma_numerics.dot` computes it (module
    docstring). Where row i of a and row j of b are finite, so is every product (at most 2^512),
    and a product is zero exactly when one of its inputs is, whose exponent is NONE: the block's
    exp_sum anchor is then the plain maximum of ea + eb (below NONE / 2 when every product is
    zero), with no test per product."""
    nt, m, k = a.shape
    n = b.shape[1]
    prod = np.empty(max(block, 1), np.float64)
    inf_bits = ((1 << expb) - 1) << man
    afin = _finite_rows(a)
    bfin = _finite_rows(b)
    for t in range(nt):
        for i in range(m):
            for j in range(n):
                c = cv[t, i, j]
                acc = 0.0 if c_last_rn else c
                bits = np.int64(-1)                              # acc's bits, once a block rounded it
                fast = exp_sum and afin[t, i] and bfin[t, j]
                for k0 in range(0, k, block):
                    k1 = min(k0 + block, k)
                    amax = NONE
                    if fast and math.isfinite(acc):
                        for kk in range(k0, k1):
                            amax = max(amax, ea[t, i, kk] + eb[t, j, kk])
                        if amax < NONE // 2:
                            amax = NONE
                    else:
                        finite = math.isfinite(acc)
                        for kk in range(k0, k1):
                            p = a[t, i, kk] * b[t, j, kk]
                            prod[kk - k0] = p
                            finite &= math.isfinite(p)
                            if p != 0:
                                anc = ea[t, i, kk] + eb[t, j, kk] if exp_sum else _exp(p)
                                amax = max(amax, anc)
                        if not finite:                           # NaN / inf decided for the block
                            for kk in range(k1 - k0):
                                acc += prod[kk]
                            bits = np.int64(-1)
                            continue
                    allzero = amax == NONE
                    if acc != 0:
                        ce = _exp(acc)
                        amax = max(amax, max(ce, emin) if exp_sum else ce)
                    if amax == NONE:
                        s, lsb = np.int64(0), 0
                    else:
                        lsb = amax - window + 1
                        scale = _pow2(-lsb)
                        s = _cut(acc * scale, floor)
                        for kk in range(k0, k1):
                            s += _cut(a[t, i, kk] * b[t, j, kk] * scale, floor)
                    if sum_bits:                                 # `_cut`
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
                        acc = 0.0
                        bits = np.int64(0)
                if c_last_rn:                                    # IEEE add (FADD / HADD2), RN
                    acc = acc + c
                elif bits >= 0:
                    out[t, i, j] = bits
                    continue
                if math.isnan(acc):
                    out[t, i, j] = nan_bits
                elif math.isinf(acc):
                    out[t, i, j] = inf_bits | ((np.int64(1) << (expb + man)) if acc < 0 else 0)
                else:
                    out[t, i, j] = _rn_bits(acc, man, expb, bias, emin)


def _lead(x: np.ndarray, lead: tuple, tail: tuple) -> np.ndarray:
    """x broadcast to lead + tail and flattened to (-1,) + tail."""
    if x.shape[:-2] != lead:
        x = np.broadcast_to(x, lead + tail)
    return x.reshape((-1,) + tail)


def mma(A, B, C, atype: str, btype: str, ctype: str, model: BlockFma) -> np.ndarray:
    """D (..., M, N) uint64 accumulator bits for A (..., M, K), B (..., K, N), C (..., M, N) bit
    patterns: `mma_numerics.mma` (the scalar reference) over a whole batch at once."""
    A, B, C = np.asarray(A), np.asarray(B), np.asarray(C)
    lead = np.broadcast_shapes(A.shape[:-2], B.shape[:-2], C.shape[:-2])
    m, k = A.shape[-2:]
    n = B.shape[-1]
    if model.rounding not in ("rz", "rne") or model.anchor not in ("exp_sum", "leading") \
            or model.truncate not in ("magnitude", "floor"):
        raise ValueError(f"unknown model parameter in {model}")
    fa, fb, fc = FORMATS[atype], FORMATS[btype], ACC[ctype]
    if model.promote:                                        # exact: the values stay, subnormals may not
        fa = fb = FORMATS[model.promote]
    a, ea = operand(_lead(A, lead, (m, k)), atype, fa.emin)
    b, eb = operand(_lead(B, lead, (k, n)), btype, fb.emin)
    cv = np.ascontiguousarray(operand(_lead(C, lead, (m, n)), ctype, None)[0])
    if model.order is not None:
        order = np.asarray(model.order)
        a, ea, b, eb = a[..., order], ea[..., order], b[:, order, :], eb[:, order, :]
    out = np.empty(cv.shape, np.int64)
    _kernel(np.ascontiguousarray(a), np.ascontiguousarray(np.swapaxes(b, 1, 2)), cv, np.ascontiguousarray(ea),
            np.ascontiguousarray(np.swapaxes(eb, 1, 2)), out, model.block, model.window_bits,
            model.rounding == "rne", model.anchor == "exp_sum", model.truncate == "floor", model.c_last_rn,
            model.signed_zero, model.sum_bits or 0, model.rounding == "rne", model.overflow_inf,
            fc.man_bits, fc.exp_bits, fc.bias, fc.emin, model.nan_bits if ctype == "f32" else model.nan_bits_f16)
    return out.astype(np.uint64).reshape(lead + (m, n))
