"""cvt to and from the 8-bit float pairs .e4m3x2 and .e5m2x2.

What it models (PTX ISA 9.7.9.21 "cvt", fp8 forms, sm_89+):
- `cvt.rn.satfinite{.relu}.e4m3x2.f32 d, a, b` / `.e5m2x2`: d (.b16) = fp8(a) << 8 | fp8(b);
- `cvt.rn.satfinite{.relu}.e4m3x2.f16x2 d, a` / `.bf16x2`: each half of a to the byte in the
  same position of d;
- `cvt.rn{.relu}.f16x2.e4m3x2 d, a` / `.e5m2x2`: each byte of a (.b16) to the f16 half in the
  same position of d (exact: every fp8 value is an f16 value).
Formats (OCP OFP8, NVIDIA `__nv_fp8_e4m3`/`__nv_fp8_e5m2`): E4M3 has bias 7, 3 mantissa
bits, subnormals, no infinities, NaN S.1111.111 and MAX_NORM 448; E5M2 has bias 15, 2
mantissa bits, subnormals, infinities (S.11111.00), NaN and MAX_NORM 57344. Rounding is
to nearest, ties to even, from the exact value. `.satfinite` maps values beyond MAX_NORM
and ±inf to ±MAX_NORM; NaN gives the canonical NaN 0x7F; `.relu` maps negatives to +0.
To f16: a NaN byte gives the canonical f16 NaN 0x7FFF; ±0 keep their sign.

Not modelled: `.e2m1x2`, `.e2m3x2`, `.e3m2x2`, `.ue8m0x2` (fp4/fp6/scale formats),
`.rs` stochastic rounding.

Sources: PTX ISA 9.7.9.21 (cvt, "fp8 formats"); OCP 8-bit Floating Point
Specification (OFP8) rev. 1.0, tables 1-2; CUDA `cuda_fp8.hpp`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound
from isa.program import Instruction
from isa.semantics import fp_exact as fx
from isa.semantics.fp_exact import ret


@dataclass(frozen=True)
class Fp8Format:
    name: str
    exp_bits: int
    man_bits: int
    bias: int
    max_norm: float
    has_inf: bool


E4M3 = Fp8Format("e4m3", 4, 3, 7, 448.0, False)
E5M2 = Fp8Format("e5m2", 5, 2, 15, 57344.0, True)
FORMATS = {"e4m3x2": E4M3, "e5m2x2": E5M2}
NAN_BYTE = np.uint8(0x7F)
F16_NAN = np.uint16(0x7FFF)


def encode(x, fmt: Fp8Format, relu: bool = False) -> np.ndarray:
    """float64 values -> fp8 bytes: round to nearest even, satfinite, canonical NaN."""
    x = np.asarray(x, np.float64)
    nan = np.isnan(x)
    neg = np.signbit(x) & ~nan
    if relu:
        x = np.where(neg, 0.0, x)
        neg = np.zeros_like(neg)
    a = np.abs(np.where(nan, 0.0, x))
    a = np.minimum(a, fmt.max_norm * 2)                   # inf -> something above MAX_NORM
    emin = 1 - fmt.bias
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.maximum(e, emin)
    q = np.exp2(e - fmt.man_bits)                          # the spacing of values at a's exponent
    r = np.rint(a / q) * q                                 # exact: q is a power of two
    r = np.minimum(r, fmt.max_norm)                        # .satfinite
    with np.errstate(divide="ignore"):
        er = np.floor(np.log2(np.where(r > 0, r, 1.0)))
    sub = (er < emin) | (r == 0)
    er = np.maximum(er, emin)
    man = np.where(sub, r / np.exp2(emin - fmt.man_bits), r / np.exp2(er - fmt.man_bits) - (1 << fmt.man_bits))
    expf = np.where(sub | (r == 0), 0, er + fmt.bias)
    bits = (expf.astype(np.int64) << fmt.man_bits) | man.astype(np.int64)
    bits = bits | (neg.astype(np.int64) << 7)
    return np.where(nan, NAN_BYTE, bits.astype(np.uint8)).astype(np.uint8)


def decode(b, fmt: Fp8Format) -> np.ndarray:
    """fp8 bytes -> float64 (NaN for NaN encodings, ±inf for E5M2's infinities)."""
    b = np.asarray(b).astype(np.int64) & 0xFF
    sign = np.where(b & 0x80, -1.0, 1.0)
    expf = (b >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1)
    man = b & ((1 << fmt.man_bits) - 1)
    emin = 1 - fmt.bias
    val = np.where(expf == 0, man * np.exp2(emin - fmt.man_bits),
                   (man + (1 << fmt.man_bits)) * np.exp2(expf - fmt.bias - fmt.man_bits))
    top = expf == (1 << fmt.exp_bits) - 1
    if fmt.has_inf:
        val = np.where(top & (man == 0), np.inf, np.where(top, np.nan, val))
    else:
        val = np.where(top & (man == (1 << fmt.man_bits) - 1), np.nan, val)
    return sign * val


def to_f16_bits(b, fmt: Fp8Format) -> np.ndarray:
    v = decode(b, fmt)
    bits = v.astype(np.float16).view(np.uint16)
    return np.where(np.isnan(v), F16_NAN, bits).astype(np.uint16)


def _half(bits, src: str) -> np.ndarray:
    bits = np.asarray(bits).astype(np.uint16)
    if src == "bf16x2":
        return fx.bf16_to_f32(bits).astype(np.float64)
    return bits.view(np.float16).astype(np.float64)


def bind_cvt_fp8(instr: Instruction) -> Bound:
    """The fp8 forms of cvt (see module doc)."""
    parts = instr.mnemonic.split(".")[1:]
    mods = set(instr.modifiers)

    def bad(reason: str) -> UnsupportedInstruction:
        return UnsupportedInstruction(instr.mnemonic, reason=reason)
    typed = [p for p in parts if p in FORMATS or p in ("f32", "f16x2", "bf16x2")]
    if len(typed) != 2:
        raise bad("an fp8 cvt names one fp8 pair type and one of .f32/.f16x2/.bf16x2")
    dt, st = typed
    relu = "relu" in mods
    other = mods - set(FORMATS) - {"rn", "satfinite", "relu"}
    if other:
        raise bad(f"modifier .{sorted(other)[0]} not supported with fp8 types")
    if dt in FORMATS:
        fmt = FORMATS[dt]
        if "rn" not in mods or "satfinite" not in mods:
            raise bad("conversions to fp8 need .rn.satfinite")
        if st == "f32":
            def pair(a, b):
                hi = encode(np.asarray(a, np.float32).astype(np.float64), fmt, relu).astype(np.uint16)
                lo = encode(np.asarray(b, np.float32).astype(np.float64), fmt, relu).astype(np.uint16)
                return ret((hi << np.uint16(8)) | lo)
            return Bound(("b16",), ("f32", "f32"), pair, "fp32")

        def packed(a):
            a = np.asarray(a).astype(np.uint32)
            hi = encode(_half(a >> np.uint32(16), st), fmt, relu).astype(np.uint16)
            lo = encode(_half(a & np.uint32(0xFFFF), st), fmt, relu).astype(np.uint16)
            return ret((hi << np.uint16(8)) | lo)
        return Bound(("b16",), ("b32",), packed, "fp16")
    if st in FORMATS and dt == "f16x2":
        fmt = FORMATS[st]

        def widen(a):
            a = np.asarray(a).astype(np.uint16)
            hi = to_f16_bits(a >> np.uint16(8), fmt).astype(np.uint32)
            lo = to_f16_bits(a & np.uint16(0xFF), fmt).astype(np.uint32)
            if relu:
                hi = _relu16(hi)
                lo = _relu16(lo)
            return ret((hi << np.uint32(16)) | lo)
        return Bound(("b32",), ("b16",), widen, "fp16")
    raise bad(f"cvt from .{st} to .{dt} not supported")


def _relu16(bits):
    neg = (bits & 0x8000) != 0
    nan = (bits & 0x7C00) == 0x7C00
    nan &= (bits & 0x3FF) != 0
    return np.where(nan, np.uint32(0x7FFF), np.where(neg, np.uint32(0), bits)).astype(np.uint32)
