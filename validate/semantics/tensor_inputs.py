"""Inputs of the tensor-core numerics probe: dot-product tests crafted to decide how the tensor
cores round, and random matrices, packed into `mma`/`wgmma` operands.

A test is one dot product d = c + sum_k a_k b_k (K terms, the instruction's K). Eight tests share
one instruction: test t is row t of A, column t of B and C[t][t]; the other rows repeat it
transformed (for M = 16: row t + 8 is test t with a and c negated, which tells truncation from
rounding toward minus infinity; for wgmma's M = 64, rows t + 8 r take `ROW_TRANSFORMS[r]`).
Every other element of D is a dot product of real inputs too and is recorded.

The tests (families, `label` prefixes) are crafted in `tensor_crafted.py` over the value helpers
of `tensor_values.py`; here they are packed into cases, with the layout case and the random cases
(`r_ml` normal values, `r_wide` wide exponents, `r_bits` any bit pattern, `r_cancel` cancelling
pairs plus small terms).
"""
from __future__ import annotations

import numpy as np

from isa.semantics.tensor_formats import FORMATS, decode, encode_rn
from validate.semantics.tensor_crafted import (
    fam_align,
    fam_block,
    fam_carry,
    fam_exact,
    fam_many_small,
    fam_round,
    fam_special,
    fam_sub,
    fam_tf32_low,
    int_tests,
)
from validate.semantics.tensor_forms import TYPES
from validate.semantics.tensor_values import Ctx

SEED = 20261128
#: rows t + 8 r of a wgmma (M = 64) case: how row r transforms test t's (a, c)
ROW_TRANSFORMS = ("id", "neg", "half", "neg_half", "c_zero", "c_only", "c_neg", "double")


# ------------------------------------------------------------------------- packing
def _transform(x: Ctx, a: np.ndarray, c: np.ndarray, how: str):
    """Row transform of tests' (a bits (T, K), c bits (T,)) for the extra rows of a case."""
    if x.ctype == "s32":
        if how == "neg":
            return a ^ np.uint64(0xFF), c ^ np.uint64(0xFFFFFFFF)
        if how == "c_only":
            return np.zeros_like(a), c
        if how == "c_zero":
            return a, np.zeros_like(c)
        return a, c
    shift = FORMATS[x.atype].shift if x.atype in FORMATS else 0
    sa = np.uint64(1 << (TYPES[x.atype][0] - 1 - shift)) << np.uint64(shift)
    sc = np.uint64(1 << (TYPES[x.ctype][0] - 1))
    if how == "id":
        return a, c
    if how == "neg":
        return a ^ sa, c ^ sc
    if how == "c_zero":
        return a, np.zeros_like(c)
    if how == "c_only":
        return np.zeros_like(a), c
    if how == "c_neg":
        return a, c ^ sc
    f = {"half": 0.5, "neg_half": -0.5, "double": 2.0}[how]
    if x.atype == "f64":
        return (a.view(np.float64) * f).view(np.uint64), (c.view(np.float64) * f).view(np.uint64)
    fa, fc = FORMATS[x.atype], FORMATS[x.ctype]
    av, cv = decode(a, fa) * f, decode(c, fc) * f
    na, nc = encode_rn(av, fa), encode_rn(cv, fc)
    with np.errstate(invalid="ignore"):
        ok_a = np.all((decode(na, fa) == av) & np.isfinite(av), axis=1)
        ok_c = (decode(nc, fc) == cv) & np.isfinite(cv)
    ok = ok_a & ok_c
    return np.where(ok[:, None], na, a), np.where(ok, nc, c)


def pack_tests(x: Ctx, tests, m: int, n: int):
    """Tests -> A (cases, m, k), B (cases, k, n), C (cases, m, n) bit arrays and a test table."""
    tests = [t for t in tests if t is not None]
    per = min(n, 8)                       # tests per case: columns 0..7, rows t + 8 r
    ncase = (len(tests) + per - 1) // per
    A = np.zeros((ncase, m, x.k), np.uint64)
    B = np.zeros((ncase, x.k, n), np.uint64)
    C = np.zeros((ncase, m, n), np.uint64)
    if not tests:
        return A, B, C, []
    ta = np.stack([np.asarray(t[0], np.uint64) for t in tests])
    tb = np.stack([np.asarray(t[1], np.uint64) for t in tests])
    tc = np.array([np.uint64(t[2]) for t in tests], np.uint64)
    idx = np.arange(len(tests))
    cs, col = idx // per, idx % per
    B[cs, :, col] = tb
    hows = ("id", "neg") if m == 16 else ROW_TRANSFORMS if m == 64 else ("id",)
    for r, how in enumerate(hows):
        ar, cr = _transform(x, ta, tc, how)
        A[cs, col + 8 * r, :] = ar
        C[cs, col + 8 * r, col] = cr
    table = [(int(c), int(k), t[3]) for c, k, t in zip(cs, col, tests)]
    return A, B, C, table


# ------------------------------------------------------------------------- random cases
def _rand_float(x: Ctx, t: str, shape, kind: str) -> np.ndarray:
    rng = x.rng
    if t == "f64":
        if kind == "bits":
            return rng.integers(0, 2 ** 63, shape, dtype=np.uint64) ^ (rng.integers(0, 2, shape, dtype=np.uint64) << np.uint64(63))
        v = rng.standard_normal(shape)
        if kind == "wide":
            v = v * np.exp2(rng.integers(-60, 60, shape).astype(float))
        return v.view(np.uint64)
    f = FORMATS[t]
    if kind == "bits":
        raw = rng.integers(0, 1 << (f.bits - f.shift), shape, dtype=np.int64).astype(np.uint64)
        return raw << np.uint64(f.shift)
    if kind == "ml":
        v = rng.standard_normal(shape)
    else:   # wide: exponents over most of the format's range (products kept finite in f16)
        lo, hi = max(f.emin - f.man_bits, -60), min(f.emax, 60)
        if x.ctype == "f16":
            lo, hi = max(lo, -12), min(hi, 6)
        e = rng.integers(lo, hi + 1, shape).astype(float)
        v = np.where(rng.integers(0, 2, shape) == 1, -1.0, 1.0) * (1 + rng.random(shape)) * np.exp2(e)
    return encode_rn(v, f, satfinite=True)


def random_cases(x: Ctx, m: int, n: int, counts: dict[str, int]):
    As, Bs, Cs, labels = [], [], [], []
    for kind, cnt in counts.items():
        for _ in range(cnt):
            if x.ctype == "s32":
                lo_a, hi_a = (-128, 127) if x.atype == "s8" else (0, 255)
                lo_b, hi_b = (-128, 127) if x.btype == "s8" else (0, 255)
                A = x.rng.integers(lo_a, hi_a + 1, (m, x.k)).astype(np.uint64) & np.uint64(0xFF)
                B = x.rng.integers(lo_b, hi_b + 1, (x.k, n)).astype(np.uint64) & np.uint64(0xFF)
                C = x.rng.integers(-2 ** 31, 2 ** 31, (m, n)).astype(np.uint64) & np.uint64(0xFFFFFFFF)
            elif kind == "cancel":
                ak = "ml"
                A = _rand_float(x, x.atype, (m, x.k), ak)
                B = _rand_float(x, x.btype, (x.k, n), ak)
                # make the second half of k cancel the first half exactly, then perturb a few
                half = x.k // 2
                sa = np.uint64(1 << (TYPES[x.atype][0] - 1)) << np.uint64(FORMATS[x.atype].shift if x.atype in FORMATS else 0)
                A[:, half:2 * half] = A[:, :half] ^ sa
                B[half:2 * half, :] = B[:half, :]
                small = _rand_float(x, x.atype, (m, x.k), "wide")
                pick = x.rng.random((m, x.k)) < 0.15
                A = np.where(pick, small, A)
                C = _rand_float(x, x.ctype, (m, n), "ml")
            else:
                A = _rand_float(x, x.atype, (m, x.k), kind)
                B = _rand_float(x, x.btype, (x.k, n), kind)
                C = _rand_float(x, x.ctype, (m, n), "ml" if kind != "wide" else "wide")
            As.append(A)
            Bs.append(B)
            Cs.append(C)
            labels.append(f"r_{kind}")
    if not As:
        z = np.zeros((0, m, x.k), np.uint64)
        return z, np.zeros((0, x.k, n), np.uint64), np.zeros((0, m, n), np.uint64), []
    return np.stack(As), np.stack(Bs), np.stack(Cs), labels


def layout_case(x: Ctx, m: int, n: int):
    """Small integers: D = A B + C exactly in every format (checks the fragment layouts)."""
    a = x.rng.integers(-4, 5, (m, x.k)).astype(float)
    b = x.rng.integers(-4, 5, (x.k, n)).astype(float)
    c = x.rng.integers(-8, 9, (m, n)).astype(float)
    if x.ctype == "s32":
        if x.atype == "u8":
            a = np.abs(a)
        if x.btype == "u8":
            b = np.abs(b)
        f = lambda v, t: v.astype(np.int64).astype(np.uint64) & np.uint64(0xFF if t != "s32" else 0xFFFFFFFF)
        return f(a, x.atype), f(b, x.btype), f(c, "s32")
    return x.enc(x.atype, a), x.enc(x.btype, b), x.enc(x.ctype, c)


def build(atype, btype, ctype, k, m, n, quick: bool, seed_extra: int, crafted: bool = True):
    """All cases of one form: dict with A, B, C bit arrays (cases first), case labels, tests.

    `crafted` False keeps only the layout case and the random cases."""
    x = Ctx(atype, btype, ctype, k, np.random.default_rng([SEED, seed_extra]))
    la, lb, lc = layout_case(x, m, n)
    if not crafted:
        tests = []
    elif ctype == "s32":
        tests = int_tests(x)
    else:
        fams = [fam_exact, fam_align, fam_many_small, fam_round, fam_block, fam_carry, fam_sub, fam_special]
        if atype == "tf32":
            fams.append(fam_tf32_low)
        tests = [t for f in fams for t in f(x)]
    if quick:
        tests = [t for t in tests if t is not None][::7]
    A, B, C, table = pack_tests(x, tests, m, n)
    big = m * n >= 512
    per = {"ml": 6, "wide": 6, "bits": 4, "cancel": 4} if big else {"ml": 24, "wide": 24, "bits": 12, "cancel": 12}
    if quick:
        per = {kk: 1 for kk in per}
    if ctype == "s32":
        per = {"int": sum(per.values())}
    RA, RB, RC, rl = random_cases(x, m, n, per)
    A = np.concatenate([la[None], A, RA])
    B = np.concatenate([lb[None], B, RB])
    C = np.concatenate([lc[None], C, RC])
    labels = ["layout"] + ["crafted"] * (A.shape[0] - 1 - len(rl)) + rl
    table = [(cs + 1, col, lab) for cs, col, lab in table]
    return {"A": A, "B": B, "C": C, "labels": labels, "tests": table}
