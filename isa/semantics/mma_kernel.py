"""The compiled pass of `isa.semantics.mma_batch`: the block-FMA arithmetic of the scalar
reference `isa.semantics.mma_numerics.dot`, bit for bit, for every `BlockFma` parameter set, one
batch element's D at a time (`_kernel`; `mma_batch.mma` and `mma_batch.mma_acc` call it; its
per-element steps, the rounding and the general path, are `mma_steps`').

It decodes each warp's B and each row of A to float64 values and anchor exponents (8- and 16-bit
patterns through small tables per class of sign and exponent bits, `mma_batch._classes`, with the
tables of every pattern for zeros, subnormals and non-finite values; f32/tf32 from their bits) and runs the reference's steps for a
batch element's D a row at a time, the row's columns together in the loops over k (the anchor
maxima, the scaled products' sums) and in the passes between them, loops the compiler
vectorises:
- every input of these formats is a float64, and so is every product (at most 2 x 11
  significand bits; magnitudes between 2^-272 and 2^256, normal float64s), so `a * b` is the
  exact product;
- a block's anchor is the largest exponent sum (or leading exponent) of its nonzero products
  and of its addend (C: at most 24 bits, down to 2^-149); scaling a term by 2^-lsb (lsb =
  anchor - window + 1, the anchor between -272 and 256) is exact (every scaled term is a normal
  float64 below 2^(window + 1)), and `trunc` / `floor` of it is the reference's shift of the
  integer significand (magnitude / floor truncation);
- the cut terms are integers below 2^(window + 1), so their int64 sum is exact (and so is its
  float64 value where the vectorised loops take a block: at most 65 terms, below 2^53);
  QGMMA's sum cut and the rounding to the accumulator are done on int64 as `mma_numerics._cut`
  and `round_to_format` do them, except, for an f32 accumulator without a sum cut, a finite
  result under RNE or a normal one under RZ, which the FPU's float64 -> float32 conversion
  rounds as the model does (RZ: float64's 29 extra significand bits cleared first);
- where `mma_batch._f32_products` says so (f16 and fp8 inputs: every product a normal float32,
  every scale a float32, a block's cut products below 2^31 in all), the products' cut terms are
  computed in float32 and summed in int32, 8 columns a vector where float64 and int64 take 4:
  the same integers (a scaled product is exact, or below 2^-126 in magnitude where its cut is
  0, or -1 under `floor`, its sign kept). Measured (one process, old and new alternating, the
  captured Triton wgmma calls: A 4 x 16 x 16 f16, N = 64 / 32, f32 accumulator; a private
  numba cache): medians 35.5 / 26.2 us a call against 39.3 / 27.4 (x1.11 / x1.04), 256 columns
  x1.14. Most of a small call's time is elsewhere: per output element the anchors, the
  anchor pass and the f32 pass, C's gather and D's scatter (perf: ~60% of the kernel);
- a block of 16 k (f16 and bf16: HMMA's and HGMMA's block, and wgmma's whole K) takes its
  anchors' maxima and (`f32_products`) its cut products' sum each in one loop over the row's
  columns, the row's 16 values of A held in scalars: for 32 or 64 columns a loop is a few
  vector iterations, and starting one costs about as much (4 k at a time, a row took 8 loops,
  and 2 more to clear the sums). `python benchmarks/mma_kernel_against.py 40587e4`: 0.808 / 0.887
  of the time a call for 32 / 64 columns; random calls (subnormals, zeros, infinities) identical;
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

from isa.semantics.mma_steps import (F32_MIN_NORMAL, F32_OVERFLOW, F32_POW2_MAX, NONE, RZ32_MASK, _block_one,
                                      _decode32, _exp, _finish, _pow2, _rn_bits, _value)

ENONE = -(1 << 14)                      # NONE in the int16 exponents (`_decode`): two of them sum to an int16


@njit(cache=True, nogil=True)
def _decode(src, order, flip, tv, te, split, mask32, emin, v, w, e, fin):
    """Rows of bit patterns src (R, K) -> v[kk, r] (the float64 value), w[kk, r] (the same, a
    non-finite one 0) and e[kk, r] (its `in_exp` exponent; NONE as ENONE for int16 e) of
    pattern src[r, order[kk]] with its sign flipped by `flip`, and fin[r] (row r finite): 8- and
    16-bit patterns through their class tables `split` (`mma_batch._classes`) where the class is
    normal (finite: most patterns take this branch and nothing else), else through the full
    tables (tv, te); f32 / tf32 ones from their bits (low bits cleared by `mask32`,
    `mma_steps._decode32`). Written a k at a time (a row of v, w, e: stores in order, where a
    column at a time is twice as slow); called once per matrix (a call passing arrays costs
    ~15 ns: nothing per element)."""
    hman, hs, hb, he = split
    low = (np.uint64(1) << np.uint64(hman)) - np.uint64(1)
    size = np.uint64(len(tv) - 1)
    for r in range(src.shape[0]):
        fin[r] = True
    for kk in range(src.shape[1]):
        col = order[kk]
        for r in range(src.shape[0]):
            if mask32 == 0:                              # (unsigned indices: no negative-index tests)
                x = (np.uint64(src[r, col]) ^ np.uint64(flip)) & size
                h = x >> np.uint64(hman)
                c = hb[h]
                if c >= 0:
                    val = hs[h] * np.float64(c + np.int64(x & low))
                    v[kk, r] = val
                    w[kk, r] = val
                    e[kk, r] = he[h]
                    continue
                val, ev = tv[x], te[x]
            else:
                val, ev = _decode32(np.int64(src[r, col]) ^ flip, mask32, emin)
            ok = math.isfinite(val)
            fin[r] &= ok
            v[kk, r] = val
            w[kk, r] = val if ok else 0.0
            e[kk, r] = ENONE if ev == NONE else ev


@njit(cache=True, nogil=True, inline="always")
def _cut4(a0, a1, a2, a3, b, k0, j, s):
    """The int32 sum of the cut float32 products a_q b[k0 + q, j] s, q < 4 (`_kernel`'s
    `f32_products` path: each product scaled exactly, converted by truncation)."""
    return np.int32(np.int32(np.int32(a0 * b[k0, j] * s) + np.int32(a1 * b[k0 + 1, j] * s))
                    + np.int32(np.int32(a2 * b[k0 + 2, j] * s) + np.int32(a3 * b[k0 + 3, j] * s)))


@njit(cache=True, nogil=True)
def _kernel(abits, bbits, bidx, cbits, cpos, tpos, atv, ate, btv, bte, amask32, bmask32, aflip, bflip, aemin, bemin,
            asplit, bsplit, order, zero_c, out, block, window, rne, exp_sum, floor, c_last_rn, signed_zero, sum_bits,
            sum_rne, overflow_inf, man, expb, bias, emin, nan_bits, f32_products):
    """out[t, i, j] = accumulator bits of C + sum_k A B as `mma_numerics.dot` computes it
    (module docstring) for the bit patterns abits (T, M, K), bbits[bidx[t]] (N, K) (B transposed,
    decoded once for consecutive t with the same bidx),
    C and D element (i, j) at cbits[tpos[t] + cpos[i N + j]], out[tpos[t] + cpos[i N + j]]
    (flat: a fragment's register order, or its registers' rows; C taken as +0 where zero_c[t]); k visited in `order`;
    8- and 16-bit inputs decoded through their class tables (`asplit`, `bsplit`: (significand bits, scales,
    implicit bits, exponents), `mma_batch._classes`) and their full tables (atv/ate, btv/bte); f32 / tf32
    ones from their bits (`mma_steps._decode32`); `_decode`. Each warp's B and
    each batch element's A are decoded once, then D is computed a row at a time, block by block.
    The common case runs over a row's columns together (loops the compiler vectorises): with
    `exp_sum` anchors, where row i of A, column j of B and the running value are finite, so is
    every product (at most 2^512), and a product is zero exactly when one of its inputs is,
    whose exponent is NONE: the block's anchor is the plain maximum of ea + eb (below NONE / 2
    when every product is zero), on int16 exponents (|e| <= 127, a zero's NONE as ENONE = -2^14:
    every sum of two is an int16, exact, a zero's below ENONE / 2 and a product's above; add and
    max on 16 of them one AVX2 instruction), and the cut terms, integers below 2^(window + 1),
    are the int64 conversions of the scaled products (the conversion truncates, exactly;
    `np.floor` first under `floor`), summed exactly in int64, four k at a time (any order of the
    additions gives the same sum; under `f32_products` in float32 and int32, `_f32_products`). These loops read B with its non-finite values 0 (`bw`; a row
    of A with one skips them) and an element they do not take at scale 0, so that every value
    they compute is finite and small (every int64 conversion exact). An f32 accumulator then rounds there as the FPU converts (RNE; RZ by
    clearing float64's extra significand bits) where that is the model's rounding (any finite
    result under RNE; 0 or a normal f32 under RZ), for the row's columns together. Any other
    element takes `_block_one` and `_finish`."""
    nt, m, k = abits.shape
    n = bbits.shape[1]
    mn = m * n
    prod = np.empty(max(block, 1), np.float64)
    inf_bits = ((1 << expb) - 1) << man
    av = np.empty((m, k), np.float64)
    aw = np.empty((m, k), np.float64)                # (unused: the A rows the vector loops take are finite)
    ae = np.empty((m, k), np.int16)
    afin = np.empty(m, np.bool_)
    bv = np.empty((k, n), np.float64)                # B as decoded (NaN / infinity kept: `_block_one`'s)
    bw = np.empty((k, n), np.float64)                # the same, a non-finite value 0 (the vector loops')
    be = np.empty((k, n), np.int16)
    bfin = np.empty(n, np.bool_)
    cvals = np.empty(mn, np.float64)
    acc = np.empty(mn, np.float64)
    bits = np.empty(mn, np.int64)                    # acc's bits once a block rounded it, else -1
    amax = np.empty(n, np.int16)                     # a row's anchors' maxima (int16, `ENONE`)
    anchor = np.empty(n, np.int64)                   # the block's anchor with C's exponent (fast elements)
    scale = np.empty(n, np.float64)
    isum = np.empty(n, np.int64)                     # the cut terms' sum
    fast = np.empty(n, np.bool_)
    done = np.empty(n, np.bool_)                     # element rounded by the vectorised f32 pass
    f32p = exp_sum and window + 7 <= 52 and block <= 64 and f32_products and n >= 16   # (8 columns a vector)
    av32 = np.empty((m if f32p else 0, k), np.float32)   # A and B (non-finite 0) as float32 (`f32_products`)
    bw32 = np.empty((k if f32p else 0, n), np.float32)
    scale32 = np.empty(n, np.float32)
    isum32 = np.empty(n, np.int32)                   # the products' cut terms' sum (`f32_products`)
    f32_out = sum_bits == 0 and not signed_zero and man == 23 and expb == 8 and overflow_inf
    c_f32 = man == 23 and expb == 8
    vec = exp_sum and window + 7 <= 52 and block <= 64   # the sum of <= 65 terms < 2^(window+1): < 2^53
    for t in range(nt):
        tb = bidx[t]
        newb = t == 0 or tb != bidx[t - 1]
        if newb:                                         # B's values as its columns (k, n)
            _decode(bbits[tb], order, bflip, btv, bte, bsplit, bmask32, bemin, bv, bw, be, bfin)
        _decode(abits[t], order, aflip, atv, ate, asplit, amask32, aemin, av.T, aw.T, ae.T, afin)
        if not vec:
            afin[:] = False
        if f32p:                                         # (exact: `f32_products`)
            if newb:
                for kk in range(k):
                    for j in range(n):
                        bw32[kk, j] = np.float32(bw[kk, j])
            for i in range(m):
                for kk in range(k):
                    av32[i, kk] = np.float32(av[i, kk])
        tp = tpos[t]
        cdst = cvals if c_last_rn else acc               # C: the running value (or the last addend)
        if zero_c[t]:
            cdst[:] = 0.0
        elif c_f32:                                      # f32 C: the float32 itself (NaN payloads never reach D)
            for e in range(mn):                          # (unsigned: no negative-index test)
                cdst[e] = np.float64(np.uint32(cbits[np.uint64(tp + cpos[e])]).view(np.float32))
        else:
            for e in range(mn):
                cdst[e] = _value(np.int64(cbits[tp + cpos[e]]), man, expb, bias, emin)
        if c_last_rn:
            acc[:] = 0.0
        bits[:] = -1
        ndone = 0                                        # elements the last block's vectorised pass rounded
        for k0 in range(0, k, block):
            k1 = min(k0 + block, k)
            ndone = 0
            for i in range(m):                           # a row at a time: its columns together
                r0 = i * n
                fa = afin[i]
                nd = 0
                if fa:
                    kq = k0                              # the anchors: exponent sums' maxima (int16: exact,
                    if k1 - k0 == 16:                    # add and max 16 at a time): a 16-k block in one loop
                        e0, e1, e2, e3, e4, e5, e6, e7 = (ae[i, k0], ae[i, k0 + 1], ae[i, k0 + 2], ae[i, k0 + 3],
                                                          ae[i, k0 + 4], ae[i, k0 + 5], ae[i, k0 + 6], ae[i, k0 + 7])
                        e8, e9, e10, e11, e12, e13, e14, e15 = (ae[i, k0 + 8], ae[i, k0 + 9], ae[i, k0 + 10],
                                                                ae[i, k0 + 11], ae[i, k0 + 12], ae[i, k0 + 13],
                                                                ae[i, k0 + 14], ae[i, k0 + 15])
                        for j in range(n):
                            amax[j] = max(max(max(max(np.int16(e0 + be[k0, j]), np.int16(e1 + be[k0 + 1, j])),
                                                  max(np.int16(e2 + be[k0 + 2, j]), np.int16(e3 + be[k0 + 3, j]))),
                                              max(max(np.int16(e4 + be[k0 + 4, j]), np.int16(e5 + be[k0 + 5, j])),
                                                  max(np.int16(e6 + be[k0 + 6, j]), np.int16(e7 + be[k0 + 7, j])))),
                                          max(max(max(np.int16(e8 + be[k0 + 8, j]), np.int16(e9 + be[k0 + 9, j])),
                                                  max(np.int16(e10 + be[k0 + 10, j]), np.int16(e11 + be[k0 + 11, j]))),
                                              max(max(np.int16(e12 + be[k0 + 12, j]), np.int16(e13 + be[k0 + 13, j])),
                                                  max(np.int16(e14 + be[k0 + 14, j]), np.int16(e15 + be[k0 + 15, j])))))
                        kq = k1
                    else:                                # (else 4 k at a time)
                        for j in range(n):
                            amax[j] = 2 * ENONE
                    while kq + 4 <= k1:
                        a0, a1, a2, a3 = ae[i, kq], ae[i, kq + 1], ae[i, kq + 2], ae[i, kq + 3]
                        for j in range(n):
                            amax[j] = max(amax[j], max(max(np.int16(a0 + be[kq, j]), np.int16(a1 + be[kq + 1, j])),
                                                       max(np.int16(a2 + be[kq + 2, j]), np.int16(a3 + be[kq + 3, j]))))
                        kq += 4
                    for kk in range(kq, k1):
                        ai = ae[i, kk]
                        for j in range(n):
                            amax[j] = max(amax[j], np.int16(ai + be[kk, j]))
                    for j in range(n):                   # selects, no branches: vectorised
                        a = acc[r0 + j]
                        f = bfin[j] & math.isfinite(a)
                        x = np.int64(amax[j])            # a sum with a zero's exponent: below ENONE / 2
                        x = NONE if x < ENONE // 2 else x
                        fast[j] = f
                        x = max(x, max(_exp(a), emin) if (a != 0) & f else NONE)
                        anchor[j] = x
                        live = f & (x != NONE)
                        sc = _pow2(window - 1 - (x if live else window - 1))
                        sa = (a if live else 0.0) * sc
                        isum[j] = np.int64(np.floor(sa)) if floor else np.int64(sa)   # (int64(): trunc)
                        scale[j] = sc if live else 0.0
                        scale32[j] = np.float32(min(sc if live else 0.0, F32_POW2_MAX))
                    kq = k0                              # the cut terms' sums (exact: any order), 4 k at a time
                    if f32p:                             # float32 and int32: 8 columns a vector
                        if k1 - k0 == 16 and not floor:  # a 16-k block in one loop
                            f0, f1, f2, f3, f4, f5, f6, f7 = (av32[i, k0], av32[i, k0 + 1], av32[i, k0 + 2],
                                                              av32[i, k0 + 3], av32[i, k0 + 4], av32[i, k0 + 5],
                                                              av32[i, k0 + 6], av32[i, k0 + 7])
                            f8, f9, f10, f11, f12, f13, f14, f15 = (av32[i, k0 + 8], av32[i, k0 + 9],
                                                                    av32[i, k0 + 10], av32[i, k0 + 11],
                                                                    av32[i, k0 + 12], av32[i, k0 + 13],
                                                                    av32[i, k0 + 14], av32[i, k0 + 15])
                            for j in range(n):
                                s32 = scale32[j]
                                isum32[j] = np.int32(np.int32(_cut4(f0, f1, f2, f3, bw32, k0, j, s32)
                                                              + _cut4(f4, f5, f6, f7, bw32, k0 + 4, j, s32))
                                                     + np.int32(_cut4(f8, f9, f10, f11, bw32, k0 + 8, j, s32)
                                                                + _cut4(f12, f13, f14, f15, bw32, k0 + 12, j, s32)))
                            kq = k1
                        else:
                            for j in range(n):
                                isum32[j] = 0
                        while kq + 4 <= k1:
                            f0, f1, f2, f3 = av32[i, kq], av32[i, kq + 1], av32[i, kq + 2], av32[i, kq + 3]
                            if floor:
                                for j in range(n):
                                    s32 = scale32[j]
                                    isum32[j] += np.int32(np.int32(np.int32(np.floor(f0 * bw32[kq, j] * s32))
                                                                   + np.int32(np.floor(f1 * bw32[kq + 1, j] * s32)))
                                                          + np.int32(np.int32(np.floor(f2 * bw32[kq + 2, j] * s32))
                                                                     + np.int32(np.floor(f3 * bw32[kq + 3, j] * s32))))
                            else:
                                for j in range(n):
                                    s32 = scale32[j]
                                    isum32[j] += np.int32(np.int32(np.int32(f0 * bw32[kq, j] * s32)
                                                                   + np.int32(f1 * bw32[kq + 1, j] * s32))
                                                          + np.int32(np.int32(f2 * bw32[kq + 2, j] * s32)
                                                                     + np.int32(f3 * bw32[kq + 3, j] * s32)))
                            kq += 4
                        for kk in range(kq, k1):
                            fi = av32[i, kk]
                            if floor:
                                for j in range(n):
                                    isum32[j] += np.int32(np.floor(fi * bw32[kk, j] * scale32[j]))
                            else:
                                for j in range(n):
                                    isum32[j] += np.int32(fi * bw32[kk, j] * scale32[j])
                        for j in range(n):
                            isum[j] += isum32[j]
                        kq = k1
                    while kq + 4 <= k1:
                        a0, a1, a2, a3 = av[i, kq], av[i, kq + 1], av[i, kq + 2], av[i, kq + 3]
                        if floor:
                            for j in range(n):
                                sc = scale[j]
                                isum[j] += (np.int64(np.floor(a0 * bw[kq, j] * sc))
                                            + np.int64(np.floor(a1 * bw[kq + 1, j] * sc))) \
                                    + (np.int64(np.floor(a2 * bw[kq + 2, j] * sc))
                                       + np.int64(np.floor(a3 * bw[kq + 3, j] * sc)))
                        else:                            # (the int64 conversion truncates)
                            for j in range(n):
                                sc = scale[j]
                                isum[j] += (np.int64(a0 * bw[kq, j] * sc) + np.int64(a1 * bw[kq + 1, j] * sc)) \
                                    + (np.int64(a2 * bw[kq + 2, j] * sc) + np.int64(a3 * bw[kq + 3, j] * sc))
                        kq += 4
                    for kk in range(kq, k1):
                        ai = av[i, kk]
                        if floor:
                            for j in range(n):
                                isum[j] += np.int64(np.floor(ai * bw[kk, j] * scale[j]))
                        else:
                            for j in range(n):
                                isum[j] += np.int64(ai * bw[kk, j] * scale[j])
                    if f32_out:                          # the common case over the row, vectorised
                        for j in range(n):
                            x = anchor[j]
                            v = np.float64(isum[j]) * _pow2(x - window + 1 if x != NONE else 0)
                            vb = np.float64(v).view(np.int64)
                            ex = (vb >> 52) & 0x7FF          # v: 0 or a normal float64
                            if not rne:                  # rz of a normal f32: drop float64's extra 29 bits
                                v = np.int64(vb & RZ32_MASK).view(np.float64)
                            r = np.float32(v) + np.float32(0.0)   # RNE; -0 + +0 = +0
                            rb = np.int64(np.float32(r).view(np.uint32))
                            # the model's rounding (any finite result under RNE; 0 or a normal f32 under RZ)
                            ok = fast[j] & (rne | (vb << 1 == 0) | (np.uint64(ex - 897) < np.uint64(254))) \
                                & (rb & 0x7FFFFFFF < 0x7F800000)
                            done[j] = ok
                            nd += ok
                            bits[r0 + j] = rb            # (the others' bits: the loop below sets them)
                            acc[r0 + j] = np.float64(r) if ok else acc[r0 + j]
                ndone += nd
                for j in range(n if nd < n else 0):      # (none left when the pass rounded them all)
                    e = r0 + j
                    if fa and f32_out and done[j]:
                        continue
                    if fa and fast[j]:
                        x = anchor[j]
                        lsb = x - window + 1 if x != NONE else 0
                        if f32_out:                      # hardware rounding where it is the model's
                            v = np.float64(isum[j]) * _pow2(lsb)   # exact: |sum| < 2^53, lsb in [-1022, 1023]
                            absv = abs(v)
                            if rne or (absv >= F32_MIN_NORMAL and absv < F32_OVERFLOW):
                                if not rne:              # rz of a normal f32: drop float64's extra 29 bits
                                    v = np.int64(np.float64(v).view(np.int64) & RZ32_MASK).view(np.float64)
                                r = np.float32(v)        # RNE (also subnormal, overflow to inf)
                                if math.isinf(r):
                                    acc[e] = np.float64(r)
                                    bits[e] = -1
                                else:
                                    acc[e] = np.float64(r) if r != 0 else 0.0
                                    bits[e] = np.int64(r.view(np.uint32)) if r != 0 else np.int64(0)
                                continue
                        acc[e], bits[e] = _finish(isum[j], lsb, amax[j] < ENONE // 2, acc[e], man, expb, bias, emin,
                                                  rne, overflow_inf, signed_zero, sum_bits, sum_rne)
                        continue
                    special, x, s, lsb, allzero = _block_one(av[i], bv, ae[i], be, j, k0, k1, acc[e], exp_sum,
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
            for e in range(mn):                          # (unsigned: no negative-index test)
                out[np.uint64(tp + cpos[e])] = bits[e]
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
