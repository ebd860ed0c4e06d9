"""The values of one tensor-core form in the numerics probe's inputs (`tensor_inputs.py`): its
A, B and C formats, the accumulator's precision, and value <-> bits helpers (`Ctx`): which values
are representable, a product split into an exact a * b, a random significand of p bits, and one
dot-product test as bit arrays.
"""
from __future__ import annotations

import math

import numpy as np

from isa.semantics.tensor_formats import FORMATS, encode_exact, representable


def acc_precision(ctype: str) -> int:
    return {"f32": 24, "f16": 11, "f64": 53, "s32": 32}[ctype]


def base_exponent(atype: str, ctype: str) -> int:
    if ctype == "f16":
        return 8
    if atype in ("e4m3", "e5m2"):
        return 16
    return 0


class Ctx:
    """Formats of one form, and value <-> bits helpers."""

    def __init__(self, atype: str, btype: str, ctype: str, k: int, rng: np.random.Generator):
        self.atype, self.btype, self.ctype, self.k, self.rng = atype, btype, ctype, k, rng
        self.pa = acc_precision(ctype)
        self.e0 = base_exponent(atype, ctype)

    def fmt(self, t: str):
        return FORMATS.get(t)

    def enc(self, t: str, x) -> np.ndarray:
        if t == "f64":
            return np.asarray(x, np.float64).view(np.uint64)
        return encode_exact(x, FORMATS[t])

    def rep(self, t: str, x) -> bool:
        if t == "f64":
            return True
        if np.ndim(x) == 0:
            return _rep_scalar(float(x), FORMATS[t])
        return representable(x, FORMATS[t])

    def split(self, prod: float) -> tuple[float, float] | None:
        """a, b representable in A's and B's formats with a * b == prod exactly."""
        if prod == 0:
            return 0.0, 0.0
        fb = FORMATS.get(self.btype)
        e = int(np.floor(np.log2(abs(prod))))
        lo, hi = (fb.emin - fb.man_bits, fb.emax) if fb else (-1000, 1000)
        for eb in sorted(range(lo, hi + 1), key=lambda x: abs(x - e // 2)):
            a = prod / 2.0 ** eb
            if self.rep(self.atype, a) and self.rep(self.btype, 2.0 ** eb):
                return a, 2.0 ** eb
        return None

    def sig(self, p: int) -> float:
        """A random significand in [1, 2) with exactly p bits, the last one set."""
        if p <= 1:
            return 1.0
        m = int(self.rng.integers(1 << (p - 1), 1 << p)) | 1
        return m / 2.0 ** (p - 1)

    def test(self, terms, c, label):
        """terms: [(k, product)] or [(k, a, b)]; c: accumulator value. None if not exact."""
        a = np.zeros(self.k)
        b = np.zeros(self.k)
        for t in terms:
            if len(t) == 2:
                ab = self.split(t[1])
                if ab is None:
                    return None
                a[t[0]], b[t[0]] = ab
            else:
                a[t[0]], b[t[0]] = t[1], t[2]
        try:
            return (self.enc(self.atype, a), self.enc(self.btype, b), self.enc(self.ctype, c), label)
        except ValueError:
            return None


def _rep_scalar(v: float, f) -> bool:
    """Fast scalar form of `representable` (finite values)."""
    if v == 0 or math.isnan(v):
        return True
    if math.isinf(v):
        return not f.ocp_e4m3
    if abs(v) > f.max_finite:
        return False
    m, e = math.frexp(abs(v))
    ex = e - 1
    if ex >= f.emin:
        q = math.ldexp(m, f.precision)
    else:
        q = abs(v) / f.min_subnormal
    return q == int(q)


def _bits_test(ctx: Ctx, a_bits, b_bits, c_bits, label):
    a = np.zeros(ctx.k, np.uint64)
    b = np.zeros(ctx.k, np.uint64)
    for k, v in a_bits.items():
        a[k] = v
    for k, v in b_bits.items():
        b[k] = v
    return (a, b, np.uint64(c_bits), label)
