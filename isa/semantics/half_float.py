"""Half-precision arithmetic: .f16, .bf16 and packed .f16x2/.bf16x2 lanes.

What it models (PTX ISA 9.7.4 "Half Precision Floating-Point Instructions"): `add`, `sub`,
`mul` (.rn, .ftz and .sat for f16), `fma.rn` (.ftz/.sat/.relu for f16, .relu for bf16),
`neg`, `abs` (sign-bit operations; a NaN input gives the canonical NaN, as on H100),
`min`/`max` (.ftz, .NaN, .xorsign.abs), all correctly rounded to nearest even:
- add/sub/mul are computed in float32 and rounded once more to the half format; the
  float32 product of two halves is exact and the float32 sum rounded again is innocuous
  (24 >= 2*11+2 and 24 >= 2*8+2; Figueroa 1995).
- fma forms the exact product in f64, adds with TwoSum and rounds with the residual's sign.
Packed x2 forms compute the low and high 16-bit halves independently. NaN results are the
canonical 0x7FFF; .ftz flushes f16 subnormal inputs and results (after rounding) to
sign-preserving zero; .sat clamps to [+0, 1] with NaN -> +0; .relu maps negative results
(and -0) to +0 and NaN to the canonical NaN.

Not modelled: `.oob` (tensor out-of-bounds NaN), which raises UnsupportedInstruction.

Source: PTX ISA 9.7.4.1-9.7.4.8.
"""
from __future__ import annotations

import numpy as np

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound
from isa.program import Instruction
from isa.semantics import fp_exact as fx
from isa.semantics.fp_exact import BF16, F16, ret, round_f64, sgn, two_sum

_EXP = {"f16": np.uint16(0x7C00), "bf16": np.uint16(0x7F80)}
_ONE = {"f16": np.uint16(0x3C00), "bf16": np.uint16(0x3F80)}
_SIGN, _MAG = np.uint16(0x8000), np.uint16(0x7FFF)
_ZERO = np.uint16(0)


def decode32(bits, base: str):
    """Raw half bits -> exact float32 values."""
    bits = np.asarray(bits, np.uint16)
    return bits.view(np.float16).astype(np.float32) if base == "f16" else fx.bf16_to_f32(bits)


def encode_rn32(x, base: str):
    """float32 values -> raw half bits, round to nearest even, canonical NaN."""
    x = np.asarray(x, np.float32)
    if base == "bf16":
        return fx.f32_to_bf16_rn(x)
    return np.where(x != x, fx.NAN16_BITS, x.astype(np.float16).view(np.uint16))


def flush16(bits):
    """.ftz on raw f16 bits: subnormals become sign-preserving zero."""
    return np.where((bits & _EXP["f16"]) == 0, bits & _SIGN, bits)


def is_nan_bits(bits, base: str):
    return (bits & _MAG) > _EXP[base]


def _finish(bits, base: str, ftz: bool, saturate: bool, relu: bool):
    """Result post-processing on raw bits: canonical NaN, .ftz, .sat, .relu."""
    nan = is_nan_bits(bits, base)
    bits = np.where(nan, fx.NAN16_BITS, bits)
    if ftz:
        bits = flush16(bits)
    if saturate:
        bits = np.where(nan | ((bits & _SIGN) != 0), _ZERO, np.minimum(bits, _ONE[base]))
    if relu:
        bits = np.where(nan, fx.NAN16_BITS, np.where((bits & _SIGN) != 0, _ZERO, bits))
    return bits


def _arith_core(op: str, base: str, ftz: bool, saturate: bool, relu: bool):
    fmt = F16 if base == "f16" else BF16

    def core(*bits):
        if ftz:
            bits = [flush16(np.asarray(b, np.uint16)) for b in bits]
        xs = [decode32(b, base) for b in bits]
        if op == "fma":
            p = xs[0].astype(np.float64) * xs[1]            # exact: 22 (or 16) bit product
            s, e = two_sum(p, xs[2].astype(np.float64))
            if base == "f16":                               # numpy's f64 -> f16 is RN; RN(RO(x)) = RN(x)
                r = fx.f64_to_half_bits(fx.round_to_odd(s, np.where(np.isfinite(s), e, 0.0)), F16)
            else:
                r = fx.f64_to_half_bits(round_f64(s, sgn(e), fmt, "rn"), fmt)
        else:
            r32 = xs[0] + xs[1] if op == "add" else xs[0] - xs[1] if op == "sub" else xs[0] * xs[1]
            r = encode_rn32(r32, base)
        return _finish(np.asarray(r, np.uint16), base, ftz, saturate, relu)
    return core


def _sign_core(op: str, base: str, ftz: bool):
    def core(bits):
        bits = np.asarray(bits, np.uint16)
        if ftz:
            bits = flush16(bits)
        r = bits ^ _SIGN if op == "neg" else bits & _MAG
        return np.where(is_nan_bits(bits, base), fx.NAN16_BITS, r)      # H100: canonical NaN
    return core


def _minmax_core(is_max: bool, base: str, ftz: bool, nan_mode: bool, xor: bool):
    def core(a, b):
        if ftz:
            a, b = flush16(np.asarray(a, np.uint16)), flush16(np.asarray(b, np.uint16))
        r = fx.min_max(decode32(a, base), decode32(b, base), is_max, nan_mode, xor, fx.NAN32)
        r = encode_rn32(r, base)                           # exact: r is one of the inputs
        return flush16(r) if ftz else r
    return core


def lift(core, t: str):
    """Turn a raw-bits core into a Bound fn for values of PTX type t."""
    if t.endswith("x2"):
        return fx.packed2(core)
    if t == "f16":
        return lambda *xs: ret(np.asarray(core(*[np.asarray(x).view(np.uint16) for x in xs])).view(np.float16))
    return lambda *xs: ret(np.asarray(core(*xs), np.uint16))


def bind_half(instr: Instruction) -> Bound:
    """Bind add/sub/mul/fma/neg/abs/min/max on .f16, .bf16, .f16x2, .bf16x2."""
    t, op, mods = instr.types[0], instr.opcode, instr.modifiers
    base = t[:-2] if t.endswith("x2") else t
    is_f16 = base == "f16"

    def need(allowed):
        extra = [m for m in mods if m not in allowed]
        if extra:
            raise UnsupportedInstruction(instr.mnemonic, reason=f"modifier .{extra[0]} not supported for .{t}")

    if op in ("add", "sub", "mul"):
        need(("rn", "ftz", "sat") if is_f16 else ("rn",))
        core, n = _arith_core(op, base, "ftz" in mods, "sat" in mods, False), 2
    elif op == "fma":
        need(("rn", "ftz", "sat", "relu") if is_f16 else ("rn", "relu"))
        core, n = _arith_core(op, base, "ftz" in mods, "sat" in mods, "relu" in mods), 3
    elif op in ("neg", "abs"):
        need(("ftz",) if is_f16 else ())
        core, n = _sign_core(op, base, "ftz" in mods), 1
    elif op in ("min", "max"):
        need(("ftz", "NaN", "xorsign", "abs") if is_f16 else ("NaN", "xorsign", "abs"))
        if ("xorsign" in mods) != ("abs" in mods):
            raise UnsupportedInstruction(instr.mnemonic, reason=".xorsign and .abs go together")
        core = _minmax_core(op == "max", base, "ftz" in mods, "NaN" in mods, "xorsign" in mods)
        n = 2
    else:
        raise UnsupportedInstruction(instr.mnemonic, reason=f"{op} is not defined for .{t}")
    return Bound((t,), (t,) * n, lift(core, t), "fp16")
