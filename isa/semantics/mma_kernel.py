"""The compiled pass of `isa.semantics.mma_batch`: the block-FMA arithmetic of the scalar
reference `isa.semantics.mma_numerics.dot`, bit for bit, for every `BlockFma` parameter set, one
batch element's D at a time (`_kernel`; `mma_batch.mma` and `mma_batch.mma_acc` call it; its
per-element steps, the rounding and the general path, are `mma_steps`').

It decodes each warp's B and each row of A to float64 values and anchor exponents (8- and 16-bit
patterns through small tables per class of sign and exponent bits, `mma_batch._classes`, with the
tables of every pattern for zeros, subnormals and non-finite values; f32/tf32 from their bits) and runs the reference's steps for a
batch element's D at a time, a row's columns together in the loops over k (the anchor maxima,
the scaled products' sums) and every element together in the passes between them, loops the
compiler vectorises:
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
  `mma_numerics._cut` and `round_to_format` do them, except, for an f32 accumulator without a
  sum cut, a finite result under RNE or a normal one under RZ, which the FPU's float64 ->
  float32 conversion rounds as the model does (RZ: float64's 29 extra significand bits
  cleared first);
- NaN and infinity: a block's products plus its addend, summed in float64, are non-finite
  exactly when the reference's `_special` decides the block (a NaN, inf * 0, inf - inf, or an
  infinity; finite products never overflow float64), and that sum is its result.

C and D are flat arrays addressed per element: element (i, j) of batch element t at
tpos[t] + cpos[i N + j], read from `cbits` and written to `out`, which may be the same array
(D in place of C: each element is read, as part of its row, before its row is written, and no
two elements share a position).

Compiled once per machine (numba, `cache=True`, like the fast core's kernels); `nogil`.

Sources: as `isa.semantics.mma_numerics` (the model); IEEE 754 float64 arithmetic.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from isa.semantics.mma_steps import (F32_MIN_NORMAL, F32_OVERFLOW, FNONE, NONE, RZ32_MASK, _block_one, _decode32,
                                      _exp, _finish, _pow2, _rn_bits, _value)


@njit(cache=True, nogil=True)
def _kernel(abits, bbits, bidx, cbits, cpos, tpos, atv, ate, btv, bte, amask32, bmask32, aflip, bflip, aemin, bemin,
            asplit, bsplit, order, zero_c, out, block, window, rne, exp_sum, floor, c_last_rn, signed_zero, sum_bits,
            sum_rne, overflow_inf, man, expb, bias, emin, nan_bits):
    """out[t, i, j] = accumulator bits of C + sum_k A B as `mma_numerics.dot` computes it
    (module docstring) for the bit patterns abits (T, M, K), bbits[bidx[t]] (N, K) (B transposed,
    decoded once for consecutive t with the same bidx),
    C and D element (i, j) at cbits[tpos[t] + cpos[i N + j]], out[tpos[t] + cpos[i N + j]]
    (flat: a fragment's register order, or its registers' rows; C taken as +0 where zero_c[t]); k visited in `order`;
    8- and 16-bit inputs decoded through their class tables (`asplit`, `bsplit`: (significand bits, scales,
    implicit bits, exponents), `mma_batch._classes`) and their full tables (atv/ate, btv/bte); f32 / tf32
    ones from their bits (`mma_steps._decode32`). Each warp's B and
    each row of A are decoded once, then D is computed a batch element at a time
    (its M x N elements in flat arrays: a pass over them one loop). The common
    case runs over a row's columns together (loops the compiler vectorises): with `exp_sum`
    anchors, where row i of A, column j of B and the running value are finite, so is every
    product (at most 2^512), and a product is zero exactly when one of its inputs is, whose
    exponent is NONE: the block's anchor is the plain maximum of ea + eb (below NONE / 2 when
    every product is zero), and the cut terms, integers below 2^(window + 1), are summed
    exactly in float64 (`np.trunc` / `np.floor` of the scaled product), four k at a time (every
    partial sum is an integer below 2^53, so any order of the additions gives the same sum; the
    anchors' maxima likewise, on float32 exponents: integers below 2^22 in magnitude, exact, and
    max / add on 8 or 16 of them a vector instruction, where int64 has no vector max below
    AVX-512); an f32 accumulator
    rounds there as the FPU converts (RNE; RZ by clearing float64's extra significand bits)
    where that is the model's rounding (normal results). Any other element takes
    `_block_one` and `_finish`."""
    nt, m, k = abits.shape
    aman, ahs, ahb, ahe = asplit
    bman, bhs, bhb, bhe = bsplit
    n = bbits.shape[1]
    mn = m * n
    prod = np.empty(max(block, 1), np.float64)
    inf_bits = ((1 << expb) - 1) << man
    av = np.empty((m, k), np.float64)
    ae = np.empty((m, k), np.float32)
    afin = np.empty(m, np.bool_)
    bv = np.empty((k, n), np.float64)
    be = np.empty((k, n), np.float32)
    cvals = np.empty(mn, np.float64)
    acc = np.empty(mn, np.float64)
    bits = np.empty(mn, np.int64)                    # acc's bits once a block rounded it, else -1
    amax = np.empty(mn, np.float32)
    scale = np.empty(mn, np.float64)
    sf = np.empty(mn, np.float64)
    fast = np.empty(mn, np.bool_)
    done = np.empty(mn, np.bool_)                    # element rounded by the vectorised f32 pass
    anchor = np.empty(mn, np.int64)                  # the block's anchor with C's exponent (fast elements)
    bfin = np.empty(n, np.bool_)
    f32_out = sum_bits == 0 and not signed_zero and man == 23 and expb == 8 and overflow_inf
    c_f32 = man == 23 and expb == 8
    vec = exp_sum and window + 7 <= 52 and block <= 64   # the float64 sum of <= 65 terms < 2^(window+1) is exact
    for t in range(nt):
        tb = bidx[t]
        for j in range(n if t == 0 or tb != bidx[t - 1] else 0):
            bfin[j] = True
            for kk in range(k):
                x = np.int64(bbits[tb, j, order[kk]]) ^ bflip
                if bmask32 == 0:                         # 8/16-bit: the class tables (`mma_batch._classes`;
                    x &= len(btv) - 1                    # written out: a call passing arrays costs ~15 ns)
                    h = x >> bman
                    c = bhb[h]
                    if c >= 0:
                        v, ev = bhs[h] * np.float64(c + (x & ((np.int64(1) << bman) - 1))), bhe[h]
                    else:
                        v, ev = btv[x], bte[x]
                else:
                    v, ev = _decode32(x, bmask32, bemin)
                bv[kk, j] = v
                be[kk, j] = ev
                if not math.isfinite(v):
                    bfin[j] = False
        for i in range(m):                               # A's rows
            afin[i] = vec
            for kk in range(k):
                x = np.int64(abits[t, i, order[kk]]) ^ aflip
                if amask32 == 0:
                    x &= len(atv) - 1
                    h = x >> aman
                    c = ahb[h]
                    if c >= 0:
                        v, ev = ahs[h] * np.float64(c + (x & ((np.int64(1) << aman) - 1))), ahe[h]
                    else:
                        v, ev = atv[x], ate[x]
                else:
                    v, ev = _decode32(x, amask32, aemin)
                av[i, kk] = v
                ae[i, kk] = ev
                if not math.isfinite(v):
                    afin[i] = False
        tp = tpos[t]
        if zero_c[t]:
            cvals[:] = 0.0
        elif c_f32:                                      # f32 C: the float32 itself (NaN payloads never reach D)
            for e in range(mn):
                cvals[e] = np.float64(np.uint32(cbits[tp + cpos[e]]).view(np.float32))
        else:
            for e in range(mn):
                cvals[e] = _value(np.int64(cbits[tp + cpos[e]]), man, expb, bias, emin)
        for e in range(mn):
            acc[e] = 0.0 if c_last_rn else cvals[e]
            bits[e] = -1
        ndone = 0                                        # elements the last block's vectorised pass rounded
        for k0 in range(0, k, block):
            k1 = min(k0 + block, k)
            nfast = 0
            for i in range(m):
                fa = afin[i]
                for j in range(n):
                    e = i * n + j
                    f = fa and bfin[j] and math.isfinite(acc[e])
                    fast[e] = f
                    nfast += f
            if nfast:
                for i in range(m):                       # the anchors: row i's over its columns
                    am = amax[i * n:(i + 1) * n]
                    aei = ae[i]
                    for j in range(n):
                        am[j] = FNONE
                    kq = k0
                    while kq + 4 <= k1:                  # four k at a time: amax loaded and stored once
                        a0, a1, a2, a3 = aei[kq], aei[kq + 1], aei[kq + 2], aei[kq + 3]
                        for j in range(n):
                            am[j] = max(am[j], max(max(a0 + be[kq, j], a1 + be[kq + 1, j]),
                                                   max(a2 + be[kq + 2, j], a3 + be[kq + 3, j])))
                        kq += 4
                    for kk in range(kq, k1):
                        ai = aei[kk]
                        for j in range(n):
                            am[j] = max(am[j], ai + be[kk, j])
                for e in range(mn):                      # selects, no branches: vectorised
                    xf = amax[e]
                    x = np.int64(xf)
                    x = NONE if x < NONE // 2 else x
                    amax[e] = FNONE if x == NONE else xf
                    a = acc[e]
                    f = fast[e]
                    x = max(x, max(_exp(a), emin) if a != 0 and f else NONE)
                    anchor[e] = x
                    live = f and x != NONE
                    sc = _pow2(window - 1 - (x if live else window - 1))
                    sa = a * sc
                    sa = np.floor(sa) if floor else np.trunc(sa)
                    scale[e] = sc if live else 0.0
                    sf[e] = sa if live else 0.0
                for i in range(m):                       # the cut terms' sums: row i's over its columns
                    sfi = sf[i * n:(i + 1) * n]
                    sci = scale[i * n:(i + 1) * n]
                    avi = av[i]
                    kq = k0
                    while kq + 4 <= k1:                  # four k at a time (exact sums: any order)
                        a0, a1, a2, a3 = avi[kq], avi[kq + 1], avi[kq + 2], avi[kq + 3]
                        if floor:
                            for j in range(n):
                                sc = sci[j]
                                sfi[j] += (np.floor(a0 * bv[kq, j] * sc) + np.floor(a1 * bv[kq + 1, j] * sc)) \
                                    + (np.floor(a2 * bv[kq + 2, j] * sc) + np.floor(a3 * bv[kq + 3, j] * sc))
                        else:
                            for j in range(n):
                                sc = sci[j]
                                sfi[j] += (np.trunc(a0 * bv[kq, j] * sc) + np.trunc(a1 * bv[kq + 1, j] * sc)) \
                                    + (np.trunc(a2 * bv[kq + 2, j] * sc) + np.trunc(a3 * bv[kq + 3, j] * sc))
                        kq += 4
                    for kk in range(kq, k1):
                        ai = avi[kk]
                        if floor:
                            for j in range(n):
                                sfi[j] += np.floor(ai * bv[kk, j] * sci[j])
                        else:
                            for j in range(n):
                                sfi[j] += np.trunc(ai * bv[kk, j] * sci[j])
            ndone = 0
            if f32_out and nfast:                        # the common case over the tile, vectorised
                for e in range(mn):
                    x = anchor[e]
                    v = sf[e] * _pow2(x - window + 1 if x != NONE else 0)
                    absv = abs(v)
                    if not rne:
                        v = np.int64(np.float64(v).view(np.int64) & RZ32_MASK).view(np.float64)
                    r = np.float32(v)
                    ok = fast[e] and (rne or absv == 0 or (absv >= F32_MIN_NORMAL and absv < F32_OVERFLOW)) \
                        and abs(r) < np.float32(F32_OVERFLOW)
                    done[e] = ok
                    ndone += ok
                    rb = np.int64(r.view(np.uint32)) if r != 0 else np.int64(0)
                    bits[e] = rb if ok else bits[e]
                    acc[e] = (np.float64(r) if r != 0 else 0.0) if ok else acc[e]
            else:
                done[:] = False
            for e in range(mn if ndone < mn else 0):     # (none left when the pass rounded them all)
                if done[e]:
                    continue
                if fast[e]:
                    x = anchor[e]
                    lsb = x - window + 1 if x != NONE else 0
                    if f32_out:                          # hardware rounding where it is the model's
                        v = sf[e] * _pow2(lsb)           # exact: |sf| < 2^53, lsb in [-1022, 1023]
                        absv = abs(v)
                        if rne or (absv >= F32_MIN_NORMAL and absv < F32_OVERFLOW):
                            if not rne:                  # rz of a normal f32: drop float64's extra 29 bits
                                v = np.int64(np.float64(v).view(np.int64) & RZ32_MASK).view(np.float64)
                            r = np.float32(v)            # RNE (also subnormal, overflow to inf)
                            if math.isinf(r):
                                acc[e] = np.float64(r)
                                bits[e] = -1
                            else:
                                acc[e] = np.float64(r) if r != 0 else 0.0
                                bits[e] = np.int64(r.view(np.uint32)) if r != 0 else np.int64(0)
                            continue
                    acc[e], bits[e] = _finish(np.int64(sf[e]), lsb, amax[e] == NONE, acc[e], man, expb, bias,
                                              emin, rne, overflow_inf, signed_zero, sum_bits, sum_rne)
                    continue
                i = e // n
                special, x, s, lsb, allzero = _block_one(av[i], bv, ae[i], be, e - i * n, k0, k1, acc[e], exp_sum,
                                                         window, floor, emin, prod)
                if special:
                    acc[e] = x
                    bits[e] = -1
                else:
                    acc[e], bits[e] = _finish(s, lsb, allzero, acc[e], man, expb, bias, emin, rne,
                                              overflow_inf, signed_zero, sum_bits, sum_rne)
        rounded = not c_last_rn                          # every element's bits known: stored without branches
        for e in range(mn if ndone < mn else 0):         # (the last block's pass rounded them all: known)
            rounded &= bits[e] >= 0
        if rounded:
            for e in range(mn):
                out[tp + cpos[e]] = bits[e]
        else:
            for e in range(mn):
                x = acc[e]
                p = tp + cpos[e]
                if c_last_rn:                                    # IEEE add (FADD / HADD2), RN
                    x = x + cvals[e]
                elif bits[e] >= 0:
                    out[p] = bits[e]
                    continue
                if math.isnan(x):
                    out[p] = nan_bits
                elif math.isinf(x):
                    out[p] = inf_bits | ((np.int64(1) << (expb + man)) if x < 0 else 0)
                else:
                    out[p] = _rn_bits(x, man, expb, bias, emin)
