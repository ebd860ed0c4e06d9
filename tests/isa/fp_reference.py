"""Exact reference rounding for the float semantics tests, independent of isa.semantics.

A value is rounded by bracketing it between two adjacent bit patterns of the target format
(seeded from a float conversion, then corrected with exact Fraction comparisons) and
choosing one by the rounding mode; no code is shared with `isa.semantics.fp_exact`.
Also: random bit-pattern generators that favour special values, and an Instruction builder.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from isa.program import Instruction, Reg

# name: (total bits, exponent bits, fraction bits)
LAYOUT = {"f16": (16, 5, 10), "bf16": (16, 8, 7), "f32": (32, 8, 23), "f64": (64, 11, 52), "tf32": (32, 8, 10)}
UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def instr(mnemonic: str, nsrc: int = 2) -> Instruction:
    """`Instruction` for a dotted mnemonic with one destination and nsrc sources."""
    op, *suffixes = mnemonic.split(".")
    return Instruction(op, tuple(suffixes), tuple(Reg(f"%r{i}") for i in range(nsrc + 1)))


def value(mag_bits: int, fmt: str) -> Fraction:
    """Exact value of a finite non-negative magnitude bit pattern."""
    nb, eb, mb = LAYOUT[fmt]
    if fmt == "tf32":
        mag_bits <<= 13
        nb, eb, mb = LAYOUT["f32"]
    bias = (1 << (eb - 1)) - 1
    e, f = mag_bits >> mb, mag_bits & ((1 << mb) - 1)
    if e == 0:
        return Fraction(f) * Fraction(2) ** (1 - bias - mb)
    return Fraction((1 << mb) | f) * Fraction(2) ** (e - bias - mb)


def _seed(a: Fraction, fmt: str) -> int:
    x = float(a) if a < Fraction(2) ** 1024 else float("inf")
    if fmt == "f64":
        return int(np.float64(x).view(np.uint64))
    if fmt == "f16":
        return int(np.float16(x).view(np.uint16))
    b = int(np.float32(x).view(np.uint32))
    return b >> 16 if fmt == "bf16" else b >> 13 if fmt == "tf32" else b


def round_bits(q: Fraction, fmt: str, mode: str, negative_zero: bool = False) -> int:
    """Bit pattern of q rounded to fmt ('f16','bf16','f32','f64','tf32' as 19 bits) in mode."""
    nb, eb, mb = LAYOUT[fmt]
    if fmt == "tf32":
        nb = 19
    sign = 1 << (nb - 1)
    inf = ((1 << eb) - 1) << mb
    if q == 0:
        return sign if negative_zero else 0
    neg, a = q < 0, abs(q)
    m = min(_seed(a, fmt), inf - 1)
    while m > 0 and value(m, fmt) > a:
        m -= 1
    while m + 1 < inf and value(m + 1, fmt) <= a:
        m += 1
    lo = value(m, fmt)
    hi = value(m + 1, fmt) if m + 1 < inf else Fraction(2) ** (1 << (eb - 1))
    if a == lo:
        r = m
    else:
        mid = (lo + hi) / 2
        if mode == "rn":
            up = a > mid or (a == mid and m % 2 == 1)
        elif mode == "rna":
            up = a >= mid
        elif mode == "rz":
            up = False
        elif mode == "rm":
            up = neg
        else:
            up = not neg
        r = m + up
    return r | (sign if neg else 0)


def exact(x) -> Fraction:
    return Fraction(float(x))


def bits_of(x) -> int:
    a = np.asarray(x)
    return int(a.view(UINT[a.dtype.itemsize * 8])) if a.dtype.kind == "f" else int(a)


def is_nan_bits(b: int, fmt: str) -> bool:
    nb, eb, mb = LAYOUT[fmt]
    return (b & ((1 << (nb - 1)) - 1)) > (((1 << eb) - 1) << mb)


def random_bits(rng, n: int, fmt: str, specials: bool = True) -> np.ndarray:
    """Random bit patterns: uniform over all patterns, plus small exponents (subnormals),
    exponents near 1.0 and special values (±0, ±inf, NaN, ±MAX, ±min subnormal)."""
    nb, eb, mb = LAYOUT[fmt]
    ut = UINT[nb]
    out = rng.integers(0, 1 << nb, n, dtype=np.uint64)
    k = n // 4
    bias = (1 << (eb - 1)) - 1
    near_one = rng.integers(bias - 3, bias + 3, k, dtype=np.uint64) << np.uint64(mb)
    out[:k] = (out[:k] & np.uint64((1 << (nb - 1)) | ((1 << mb) - 1))) | near_one
    sub = (out[k:2 * k] & np.uint64((1 << mb) - 1)) | ((out[k:2 * k] >> np.uint64(nb - 1)) << np.uint64(nb - 1))
    out[k:k + k // 2] = sub[: k // 2]
    if specials:
        inf = ((1 << eb) - 1) << mb
        sp = [0, 1 << (nb - 1), inf, inf | (1 << (nb - 1)), inf | 1, inf - 1, (inf - 1) | (1 << (nb - 1)), 1, (1 << (nb - 1)) | 1]
        idx = rng.integers(0, n, n // 50)
        out[idx] = rng.choice(np.array(sp, np.uint64), idx.size)
    return out.astype(ut)
