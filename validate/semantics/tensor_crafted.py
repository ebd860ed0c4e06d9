"""The crafted dot-product tests of the tensor-core numerics probe (`tensor_inputs.py`): each
decides one question of how the tensor cores round.

Families (`label` prefixes), with p the input precision and pa the accumulator's (24 f32, 11 f16):
- `layout`: small integers, exact in every format: checks the fragment layouts (D is exact).
- `exact`: one product of two full-significand inputs: products are exact (or rounded).
- `align_c`, `align_c_big`, `align_p`: a big and a small addend 2^-s apart (s = 0 .. pa + 16),
  the small one with bits down to its last place: where addends are cut when aligned to the
  largest exponent, and whether C aligns like a product.
- `many_small`: one big term and n terms each 2^-(pa+g) of it: are cut bits kept (extra bits,
  a sticky bit) or does each small term vanish on its own.
- `round`: big + fractions (1/4 .. 7/4) of its last place, even and odd last bits, both signs:
  truncation, round to nearest even or toward -inf, per accumulator type.
- `block`: +B at k = i, -B at k = j, a tiny s at k = l (and +B in C): s survives only when B and
  -B meet before s is aligned, so this maps which k are summed together (block size, the
  interleaving of fp8's two halves, where C joins).
- `carry`: n products near 4 (significands near 2 squared) plus a small term: carry bits beyond
  the leading one and whether the window is fixed before the carry.
- `sub`: subnormal inputs, subnormal products and sums, subnormal C (flushed or kept).
- `special`: NaN payloads in A and C, inf * 0, inf - inf, overflow of f32 and of f16 sums, signed
  zeros of exact cancellation.
- `tf32_low`: f32 inputs with the low 13 bits set (ignored, truncated or rounded to tf32).
- `int`: s8/u8 extremes and s32 overflow (wrap, or saturate with .satfinite).
- random cases `r_ml` (normal values), `r_wide` (wide exponents), `r_bits` (any bit pattern) and
  `r_cancel` (cancelling pairs plus small terms).
"""
from __future__ import annotations

import numpy as np

from isa.semantics.tensor_formats import FORMATS, encode_exact, encode_rn
from validate.semantics.tensor_values import Ctx, _bits_test

INT_TYPES = ("s8", "u8", "s32")


# ------------------------------------------------------------------------- float families
def fam_exact(x: Ctx):
    pa_in = FORMATS.get(x.atype).precision if x.atype != "f64" else 53
    pb_in = FORMATS.get(x.btype).precision if x.btype != "f64" else 53
    out = []
    for i in range(8):
        k = int(x.rng.integers(x.k))
        s = 2.0 ** ((x.e0 // 2) if i % 2 else 0)
        out.append(x.test([(k, x.sig(pa_in) * s, x.sig(pb_in))], 0.0, f"exact:k={k}"))
    return out


def fam_align(x: Ctx):
    out = []
    big = 2.0 ** x.e0
    for s in range(x.pa + 17):
        for sg in (1, -1):
            small = sg * x.sig(x.pa) * 2.0 ** (x.e0 - s)
            out.append(x.test([(0, big)], small, f"align_c:s={s}:{'+' if sg > 0 else '-'}"))
            pin = min(FORMATS[x.atype].precision if x.atype != "f64" else 53, x.pa)
            sp = sg * x.sig(pin) * 2.0 ** (x.e0 - s)
            cbig = big * (1 + 2.0 ** (1 - x.pa))
            out.append(x.test([(x.k - 1, sp)], cbig, f"align_c_big:s={s}:{'+' if sg > 0 else '-'}"))
            k1 = 1 + int(x.rng.integers(x.k - 1))
            out.append(x.test([(0, big), (k1, sp)], 0.0, f"align_p:s={s}:k={k1}:{'+' if sg > 0 else '-'}"))
    return out


def fam_many_small(x: Ctx):
    out = []
    big = 2.0 ** x.e0
    for g in (0, 1, 2, 3, 5):
        for n in sorted({1, 2, 3, 4, 7, 8, 15, x.k - 1}):
            if n > x.k - 1:
                continue
            small = 2.0 ** (x.e0 - x.pa - g)
            out.append(x.test([(0, big)] + [(1 + i, small) for i in range(n)], 0.0, f"many_small:g={g}:n={n}"))
            if n <= x.k:
                out.append(x.test([(i, small) for i in range(n)], big, f"many_small_c:g={g}:n={n}"))
    return out


def fam_round(x: Ctx):
    out = []
    ulp = 2.0 ** (x.e0 + 1 - x.pa)
    for odd in (0, 1):
        big = 2.0 ** x.e0 * (1 + odd * 2.0 ** (1 - x.pa))
        for f in (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75):
            for sg in (1, -1):
                tag = f"f={f}:odd={odd}:{'+' if sg > 0 else '-'}"
                out.append(x.test([(x.k // 2, sg * f * ulp)], big, f"round_c:{tag}"))
                if odd == 0:
                    out.append(x.test([(0, big), (x.k - 1, sg * f * ulp)], 0.0, f"round_p:{tag}"))
    return out


def fam_block(x: Ctx):
    out = []
    big = 2.0 ** x.e0
    s = 2.0 ** (x.e0 - x.pa - 8)
    K = x.k
    for j in range(1, K):
        l = (j + 1) % K or 1
        if l == j:
            continue
        out.append(x.test([(0, big), (j, -big), (l, s)], 0.0, f"block:i=0:j={j}:l={l}"))
    for l in range(1, K - 1):
        out.append(x.test([(0, big), (K - 1, -big), (l, s)], 0.0, f"block:i=0:j={K - 1}:l={l}"))
    for j in range(K):
        l = (j + 1) % K
        out.append(x.test([(j, -big), (l, s)], big, f"block_c:j={j}:l={l}"))
    for l in range(K):
        out.append(x.test([(l, s)], 0.0, f"block_s:l={l}"))          # s alone: exact
    return out


def fam_carry(x: Ctx):
    out = []
    fa, fb = FORMATS.get(x.atype), FORMATS.get(x.btype)
    pin = fa.precision if fa else 53
    pbn = fb.precision if fb else 53
    h = min(x.e0 // 2, fa.emax - 1) if fa else x.e0 // 2
    hb = min(x.e0 - h, fb.emax - 1) if fb else x.e0 - h
    a = (2 - 2.0 ** (1 - pin)) * 2.0 ** h
    b = (2 - 2.0 ** (1 - pbn)) * 2.0 ** hb
    ep = h + hb
    for n in sorted({1, 2, 3, 4, 8, 16, x.k}):
        if n > x.k:
            continue
        terms = [(i, a, b) for i in range(n)]
        out.append(x.test(terms, 0.0, f"carry:n={n}"))
        if n < x.k:
            for d in (2, 0, -2):
                out.append(x.test(terms + [(n, 2.0 ** (ep - x.pa + d))], 0.0, f"carry:n={n}:small={d}"))
        for d in (2, 0, -2):
            out.append(x.test(terms, 2.0 ** (ep - x.pa + d), f"carry_c:n={n}:small={d}"))
    return out


def fam_sub(x: Ctx):
    out = []
    fa = FORMATS.get(x.atype)
    fb = FORMATS.get(x.btype)
    if fa is None or fb is None:                        # f64
        tiny = 2.0 ** -1074
        out.append(x.test([(0, tiny, 1.0)], 0.0, "sub:in"))
        out.append(x.test([(0, 2.0 ** -1000, 2.0 ** -60)], 0.0, "sub:prod"))
        out.append(x.test([(0, 2.0 ** -1022, 1.0), (1, -1.5 * 2.0 ** -1023, 1.0)], 0.0, "sub:sum"))
        out.append(x.test([], tiny, "sub:c"))
        return out
    amin, bmin = fa.min_subnormal, fb.min_subnormal
    amaxsub = amin * ((1 << fa.man_bits) - 1)
    out.append(x.test([(0, amin, 1.0)], 0.0, "sub:a_min"))
    out.append(x.test([(1, amaxsub, 1.0)], 0.0, "sub:a_maxsub"))
    out.append(x.test([(2, amin, bmin)], 0.0, "sub:a_min*b_min"))
    out.append(x.test([(3, amaxsub, fb.min_subnormal * ((1 << fb.man_bits) - 1))], 0.0, "sub:maxsub*maxsub"))
    out.append(x.test([(0, amin, 2.0 ** fb.emax)], 0.0, "sub:a_min*b_max"))
    out.append(x.test([(0, amin, 1.0), (1, -amin, 1.0), (2, amaxsub, 1.0)], 0.0, "sub:sum"))
    cf = FORMATS.get(x.ctype)
    if cf is not None:
        cmin = cf.min_subnormal
        out.append(x.test([], cmin, "sub:c_min"))
        out.append(x.test([], cmin * 3, "sub:c_3"))
        out.append(x.test([], cmin * ((1 << cf.man_bits) - 1), "sub:c_maxsub"))
        out.append(x.test([(0, amin, 1.0)], cmin, "sub:c_min+a_min"))
        cn = 2.0 ** cf.emin
        for sh in (1, 2, 3, 8):
            out.append(x.test([(0, -cn * 2.0 ** -sh)], cn, f"sub:cnorm-2^-{sh}"))
        # products below the accumulator's normal range, with low bits (rounding of subnormal D)
        for e in (cf.emin - 1, cf.emin - 5, cf.emin - cf.man_bits, cf.emin - cf.man_bits - 1, cf.emin - cf.man_bits - 3):
            for frac in (1.0, 1.5, 1.25, 1.75):
                out.append(x.test([(0, frac * 2.0 ** e)], 0.0, f"sub:prod=2^{e}*{frac}"))
                out.append(x.test([(0, frac * 2.0 ** e)], cmin, f"sub:prod=2^{e}*{frac}+cmin"))
    return out


def fam_special(x: Ctx):
    out = []
    fa, fb, cf = FORMATS.get(x.atype), FORMATS.get(x.btype), FORMATS.get(x.ctype)
    if fa is None:
        nan_a = [0x7FF8000000000000, 0x7FF0000000000001, 0xFFF8000000000123]
        inf_a = 0x7FF0000000000000
        one_a = one_b = 0x3FF0000000000000
        zero_neg = 0x8000000000000000
    else:
        sh = fa.shift
        w = 1 + fa.exp_bits + fa.man_bits
        top = ((1 << fa.exp_bits) - 1) << fa.man_bits
        if fa.ocp_e4m3:
            nan_a = [0x7F, 0xFF]
            inf_a = None
        else:
            nan_a = [(top | 1 << (fa.man_bits - 1)) << sh, (top | 1) << sh,
                     ((1 << (w - 1)) | top | (1 << (fa.man_bits - 1)) | 1) << sh]
            inf_a = top << sh
        one_a = int(encode_exact(1.0, fa))
        one_b = int(encode_exact(1.0, fb))
        zero_neg = (1 << (w - 1)) << sh
    enc_c = (lambda v: int(np.asarray(v, np.float64).view(np.uint64))) if cf is None else \
        (lambda v: int(encode_rn(v, cf)))
    c_nans = ([0x7FC00000, 0x7FA00000, 0xFFC00123, 0x7F800001] if x.ctype == "f32" else
              [0x7E00, 0x7D00, 0xFE01, 0x7C01] if x.ctype == "f16" else
              [0x7FF8000000000000, 0x7FF4000000000000, 0xFFF8000000000123])
    c_inf = enc_c(np.inf)
    for v in nan_a:
        out.append(_bits_test(x, {0: v}, {0: one_b}, 0, f"special:nan_a={v:#x}"))
        out.append(_bits_test(x, {0: v, 1: one_a}, {0: one_b, 1: one_b}, c_nans[0], f"special:nan_a={v:#x}+nan_c"))
    for v in c_nans:
        out.append(_bits_test(x, {0: one_a}, {0: one_b}, v, f"special:nan_c={v:#x}"))
        out.append(_bits_test(x, {}, {}, v, f"special:nan_c_only={v:#x}"))
    if inf_a is not None:
        zero_b = 0
        out.append(_bits_test(x, {0: inf_a}, {0: zero_b}, 0, "special:inf*0"))
        out.append(_bits_test(x, {0: inf_a}, {0: one_b}, 0, "special:inf"))
        out.append(_bits_test(x, {0: inf_a, 1: inf_a}, {0: one_b, 1: one_b}, 0, "special:inf+inf"))
        neg_b = one_b | ((1 << (fb.bits - fb.shift - 1)) << fb.shift if fb is not None else 1 << 63)
        out.append(_bits_test(x, {0: inf_a, 1: inf_a}, {0: one_b, 1: neg_b}, 0, "special:inf-inf"))
        out.append(_bits_test(x, {0: inf_a}, {0: one_b}, enc_c(-np.inf), "special:inf_a-inf_c"))
    out.append(_bits_test(x, {0: one_a}, {0: one_b}, c_inf, "special:inf_c"))
    out.append(_bits_test(x, {}, {}, c_inf, "special:inf_c_only"))
    # signed zeros
    neg0_c = enc_c(-0.0)
    out.append(_bits_test(x, {0: zero_neg}, {0: one_b}, neg0_c, "special:-0*1+-0"))
    out.append(_bits_test(x, {0: zero_neg}, {0: one_b}, 0, "special:-0*1++0"))
    out.append(_bits_test(x, {}, {}, neg0_c, "special:c=-0_only"))
    t = x.test([(0, 1.0)], -1.0, "special:1-1")
    out.append(t)
    out.append(x.test([(0, 1.0), (1, -1.0)], 0.0, "special:p1-p1"))
    out.append(x.test([(0, 1.0), (1, -1.0)], -0.0, "special:p1-p1+-0"))
    # overflow of the accumulator
    if cf is not None:
        mx = cf.max_finite
        ulp = 2.0 ** (cf.emax - cf.man_bits)
        for f in (0.25, 0.5, 0.75, 1.0, 4.0):
            out.append(x.test([(0, f * ulp)], mx, f"special:max+{f}ulp"))
        big = [v for v in (2.0 ** (cf.emax - 1), 2.0 ** (cf.emax - 2)) if x.split(v) is not None]
        if big:
            out.append(x.test([(i, big[0]) for i in range(min(4, x.k))], 0.0, "special:sum_overflow"))
            out.append(x.test([(0, big[0]), (1, big[0]), (2, -big[0])], 0.0, "special:transient_overflow"))
            out.append(x.test([(0, big[0])], mx, "special:c_max+big"))
    return out


def fam_tf32_low(x: Ctx):
    out = []
    f32 = FORMATS["f32"]
    for i, low in enumerate((0x1FFF, 0x1000, 0x0FFF, 0x1001, 0x0001, 0x1800)):
        for base in (1.0, 1.0 + 2.0 ** -10):
            a = int(encode_exact(base, f32)) | low
            out.append(_bits_test(x, {0: a}, {0: int(encode_exact(1.0, f32))}, 0, f"tf32_low:a={a:#x}"))
            out.append(_bits_test(x, {0: int(encode_exact(1.0, f32))}, {0: a}, 0, f"tf32_low:b={a:#x}"))
    for _ in range(8):
        a = int(x.rng.integers(0x3F000000, 0x40000000))
        b = int(x.rng.integers(0x3F000000, 0x40000000))
        out.append(_bits_test(x, {0: a, 1: b}, {0: b, 1: a}, 0, f"tf32_low:rand={a:#x},{b:#x}"))
    return out


# ------------------------------------------------------------------------- integer family
def int_tests(x: Ctx):
    lo_a, hi_a = (-128, 127) if x.atype == "s8" else (0, 255)
    lo_b, hi_b = (-128, 127) if x.btype == "s8" else (0, 255)
    out = []
    imax, imin = 2 ** 31 - 1, -2 ** 31

    def t(a, b, c, label):
        av = np.full(x.k, a, np.int64) if np.isscalar(a) else np.asarray(a, np.int64)
        bv = np.full(x.k, b, np.int64) if np.isscalar(b) else np.asarray(b, np.int64)
        return (av.astype(np.uint64) & 0xFF, bv.astype(np.uint64) & 0xFF,
                np.uint64(c & 0xFFFFFFFF), label)

    for a, b in ((lo_a, lo_b), (hi_a, hi_b), (lo_a, hi_b), (hi_a, lo_b)):
        s = a * b * x.k
        for c in (0, imax - s, imax - s + 1, imin - s, imin - s - 1, imax, imin):
            if imin <= c <= imax:
                out.append(t(a, b, c, f"int:a={a}:b={b}:c={c}"))
    for _ in range(16):
        out.append(t(x.rng.integers(lo_a, hi_a + 1, x.k), x.rng.integers(lo_b, hi_b + 1, x.k),
                     int(x.rng.integers(imin, imax + 1)), "int:rand"))
    return out
