"""The floating-point element formats of tensor-core operands, as bit patterns <-> float64.

What it models: f16, bf16, tf32 (held in a 32-bit container, the low 13 bits unused), e4m3 and
e5m2 (OCP OFP8: e4m3 has no infinities and one NaN per sign, S.1111.111; e5m2 is IEEE-like),
f32; `decode` is exact (every value of these formats is a float64), `encode_rn` rounds a
float64 to nearest even (overflow to infinity, or to the NaN of e4m3, which has no infinity; the
`satfinite` flag clamps to the largest finite value instead), `encode_exact` refuses values
that would need rounding. Integers (s8, u8, s32) are plain two's complement.

Not modelled: f64 (numpy's own float64 is used), fp6/fp4, `.ue8m0` scales.

Sources: IEEE 754-2019 (binary16/32); bfloat16 and TensorFloat-32 as in the PTX ISA 9.0,
5.2.5 "Alternate floating point data formats"; OCP 8-bit Floating Point Specification 1.0.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FloatFormat:
    name: str
    bits: int            # container width
    exp_bits: int
    man_bits: int
    shift: int = 0       # the format sits in the top bits of the container (tf32: 13)
    ocp_e4m3: bool = False

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def emax(self) -> int:
        return self.bias + (1 if self.ocp_e4m3 else 0)

    @property
    def precision(self) -> int:
        return self.man_bits + 1

    @property
    def max_finite(self) -> float:
        if self.ocp_e4m3:
            return float((2 - 2.0 ** (1 - self.man_bits)) * 2.0 ** self.emax)
        return float((2 - 2.0 ** -self.man_bits) * 2.0 ** self.emax)

    @property
    def min_subnormal(self) -> float:
        return float(2.0 ** (self.emin - self.man_bits))


FORMATS = {
    "f16": FloatFormat("f16", 16, 5, 10), "bf16": FloatFormat("bf16", 16, 8, 7),
    "tf32": FloatFormat("tf32", 32, 8, 10, shift=13), "f32": FloatFormat("f32", 32, 8, 23),
    "e4m3": FloatFormat("e4m3", 8, 4, 3, ocp_e4m3=True), "e5m2": FloatFormat("e5m2", 8, 5, 2),
}


def decode(bits, fmt: FloatFormat) -> np.ndarray:
    """Bit patterns -> float64 (tf32 ignores the container's low 13 bits)."""
    b = np.asarray(bits).astype(np.int64) >> fmt.shift
    w = 1 + fmt.exp_bits + fmt.man_bits
    sign = np.where((b >> (w - 1)) & 1, -1.0, 1.0)
    expf = (b >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1)
    man = b & ((1 << fmt.man_bits) - 1)
    val = np.where(expf == 0, man * 2.0 ** (fmt.emin - fmt.man_bits),
                   (man + (1 << fmt.man_bits)) * np.exp2((expf - fmt.bias - fmt.man_bits).astype(np.float64)))
    top = expf == (1 << fmt.exp_bits) - 1
    if fmt.ocp_e4m3:
        val = np.where(top & (man == (1 << fmt.man_bits) - 1), np.nan, val)
    else:
        val = np.where(top & (man == 0), np.inf, np.where(top, np.nan, val))
    return sign * val


def encode_rn(x, fmt: FloatFormat, satfinite: bool = False) -> np.ndarray:
    """float64 -> bit patterns (uint64), round to nearest even; NaN -> the positive quiet NaN."""
    x = np.asarray(x, np.float64)
    nan = np.isnan(x)
    neg = np.signbit(x)
    a = np.abs(np.where(nan, 0.0, x))
    big = np.isinf(a)
    a = np.where(np.isinf(a), fmt.max_finite * 4, a)
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.maximum(e, fmt.emin)
    q = np.exp2(e - fmt.man_bits)
    r = np.rint(a / q) * q
    over = (r > fmt.max_finite) | big
    r = np.minimum(r, fmt.max_finite)
    with np.errstate(divide="ignore"):
        er = np.floor(np.log2(np.where(r > 0, r, 1.0)))
    sub = (er < fmt.emin) | (r == 0)
    er = np.maximum(er, fmt.emin)
    man = np.where(sub, r / 2.0 ** (fmt.emin - fmt.man_bits), r / np.exp2(er - fmt.man_bits) - (1 << fmt.man_bits))
    expf = np.where(sub, 0, er + fmt.bias)
    body = (expf.astype(np.int64) << fmt.man_bits) | man.astype(np.int64)
    w = 1 + fmt.exp_bits + fmt.man_bits
    top = (1 << fmt.exp_bits) - 1
    if not satfinite:
        if fmt.ocp_e4m3:
            body = np.where(over, (top << fmt.man_bits) | ((1 << fmt.man_bits) - 1), body)
        else:
            body = np.where(over, top << fmt.man_bits, body)
    qnan = (top << fmt.man_bits) | ((1 << fmt.man_bits) - 1 if fmt.ocp_e4m3 else 1 << (fmt.man_bits - 1))
    body = np.where(nan, qnan, body | (neg.astype(np.int64) << (w - 1)))
    return (body.astype(np.uint64) << np.uint64(fmt.shift))


def encode_exact(x, fmt: FloatFormat) -> np.ndarray:
    """float64 -> bit patterns; ValueError where a value is not exactly representable."""
    x = np.asarray(x, np.float64)
    b = encode_rn(x, fmt)
    back = decode(b, fmt)
    ok = (back == x) | (np.isnan(back) & np.isnan(x))
    if not np.all(ok):
        raise ValueError(f"not exactly representable in {fmt.name}: {x[~ok][:4]}")
    return b


def representable(x, fmt: FloatFormat) -> bool:
    x = np.asarray(x, np.float64)
    back = decode(encode_rn(x, fmt), fmt)
    return bool(np.all((back == x) | (np.isnan(back) & np.isnan(x))))
