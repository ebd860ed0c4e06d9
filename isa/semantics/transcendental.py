"""Approximate (MUFU / special-function-unit) float operations.

What it models: the `.approx` and `.full` forms PTX implements with the multi-function unit.
Hardware results are approximations that PTX bounds but does not define bit for bit, so
the simulator computes each function in float64 (numpy; ex2 by a polynomial of its own,
`exp2`, which compiled code reproduces bit for bit) and rounds once to the result type;
every result is then within the PTX bound of the exact value (tests check each bound).
Special inputs (±0, ±inf, NaN, negative arguments) follow the PTX tables, `.ftz` flushes
f32 subnormal inputs and results to sign-preserving zero, and f32 NaN results are the
canonical 0x7FFFFFFF.

Bounds PTX guarantees (PTX ISA 9.7.3.8-22 and 9.7.4.9-10, read from a copy of
docs.nvidia.com/cuda/parallel-thread-execution, 2025), and what the simulator delivers:

| instruction                 | PTX maximum error                                  | here            |
|-----------------------------|----------------------------------------------------|-----------------|
| rcp.approx.f32              | 1 ulp, full range                                  | 0.5 ulp (RN)    |
| sqrt.approx.f32             | relative 2**-23, positive finite range             | 0.5 ulp (RN)    |
| rsqrt.approx.f32            | relative 2**-22.9, positive finite range           | < 0.5001 ulp    |
| ex2.approx.f32              | 2 ulp from the correctly rounded result            | < 0.5001 ulp    |
| lg2.approx.f32              | absolute 2**-22 on (0.5, 2), else relative 2**-22  | < 0.5001 ulp    |
| sin/cos.approx.f32          | absolute 2**-20.5 on [-2pi, 2pi], 2**-14.7 on      | < 0.5001 ulp    |
|                             | [-100pi, 100pi], unspecified outside               |                 |
| tanh.approx.f32             | relative 2**-11                                    | < 0.5001 ulp    |
| div.approx.f32              | 2 ulp for |b| in [2**-126, 2**126]; 0 (NaN if a is | < 1.5 ulp:      |
|                             | inf) for 2**126 < |b| < 2**128                      | a * RN24(1/b)   |
| div.full.f32                | 2 ulp, full range                                  | 0.5 ulp (RN)    |
| rcp.approx.ftz.f64          | none stated ("gross approximation" of 1/a[63:32],  | 1/a[63:32] RN to|
| rsqrt.approx.ftz.f64        | result in 1.11.20 format, low word zero)           | 20 fraction bits|
| rsqrt.approx.f64            | none stated (software emulated)                    | < 1.5 ulp       |
| ex2.approx.f16 / .bf16      | relative 2**-9.9 / 2**-7                           | 0.5 ulp (RN)    |
| tanh.approx.f16 / .bf16     | absolute 2**-10.987 / 2**-8                        | 0.5 ulp (RN)    |

("< 0.5001 ulp": the float64 function is within a few f64 ulps, so the f32 result is the
correctly rounded one except within ~2**-29 ulp of a rounding boundary.)

What it does not model: the hardware's own approximations. Measured on H100/H200 (one
inline-PTX instruction over 16384 random bit patterns, a third of them near 1.0, by a one-off
probe removed in issue 27: `git show 00f418b:validate/semantics/probes/hwprobe.py`; the exact
.rn/.rz/.rm/.rp, cvt, min/max and half-precision ops matched bit for bit), the results
differ from the simulator's in the last bit on 8-31% of lanes: rcp/sqrt.approx.f32 by 1 ulp
(hardware max error 0.89 ulp), rsqrt.approx.f32 by 1 ulp (hardware 1.36 ulp), ex2.approx.f32
by up to 2 ulp (hardware 1.77 ulp), div.approx.f32 by up to 2 ulp (hardware 1.74 ulp),
div.full.f32 by up to 2 ulp, ex2/tanh.approx.f16 and .bf16 by 1 ulp, rsqrt.approx.f64 by
1 ulp, and rcp/rsqrt.approx.ftz.f64 by one unit of the 20-bit result (hardware within
±1.01 units of 1/a[63:32]). lg2 and tanh.approx.f32 differ by more ulps but far inside their
bounds (tanh hardware relative error 2**-16.5); sin/cos hardware absolute error was
2**-20.6 on [-2pi, 2pi] and 2**-14.9 on [-100pi, 100pi], and is large outside.

Sources: PTX ISA 9.7.3 and 9.7.4 (see table); IEEE 754-2019 for special values.
"""
from __future__ import annotations

import numpy as np

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound
from isa.program import Instruction
from isa.semantics import fp_exact as fx
from isa.semantics import half_float
from isa.semantics.fp_exact import BF16, F16, ret

# 2^f = sum_k (ln 2)^k / k! f^k, k <= 13: the coefficients (60-digit ln 2, rounded to float64)
EXP2_COEFFS = (1.0, 0.6931471805599453, 0.24022650695910072, 0.05550410866482158, 0.009618129107628477,
               0.0013333558146428443, 0.0001540353039338161, 1.5252733804059841e-05, 1.321548679014431e-06,
               1.01780860092397e-07, 7.054911620801123e-09, 4.4455382718708116e-10, 2.5678435993488206e-11,
               1.3691488853904128e-12)
EXP2_RANGE = (-151.0, 129.0)     # beyond: 2^x rounds to 0 / overflows in every type ex2 has


def exp2(x):
    """2^x in float64 for float64 x holding f32, f16 or bf16 values: x clamped to EXP2_RANGE,
    n = rint(x), f = x - n (exact, |f| <= 1/2), 2^f by Horner's rule on EXP2_COEFFS (truncation
    below 2^-57, rounding a few float64 ulps: relative error below 2^-50), times 2^n (exact).
    Plain float64 operations in a fixed order, so compiled code computes the same bits
    (`gpusim.functional.fastpath.forms_mufu`); NaN stays NaN."""
    x = np.asarray(x, np.float64)
    lo, hi = EXP2_RANGE
    nan = np.isnan(x)
    xc = np.where(nan, 0.0, np.minimum(np.maximum(x, lo), hi))
    n = np.rint(xc)
    f = xc - n
    p = np.full(xc.shape, EXP2_COEFFS[-1])
    for c in EXP2_COEFFS[-2::-1]:
        p = p * f + c
    r = p * ((n.astype(np.int64) + 1023) << 52).view(np.float64)
    return np.where(nan, x, r)


_F64_FUNCS = {
    "rcp": lambda x: 1.0 / x,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "ex2": exp2,
    "lg2": np.log2,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
}
_HALF_OK = {"ex2": ("f16", "f16x2", "bf16", "bf16x2"), "tanh": ("f16", "f16x2", "bf16", "bf16x2")}
_HI_WORD = np.uint64(0xFFFFFFFF00000000)
_EXP64 = np.uint64(0x7FF0000000000000)


def _f32_unary(func, ftz: bool):
    """f32 `func` through float64, rounded once (module docstring); `.ftz` flushes subnormal
    inputs and results, NaN results are canonical. (`fp_exact.flush32` and `canon32`, applied
    only where some lane needs them: the result, a fresh array, is the same.)"""
    def fn(a):
        if ftz:
            a = _flushed(np.asarray(a, np.float32))
        r = func(np.asarray(a).astype(np.float64)).astype(np.float32)
        if ftz:
            r = _flushed(r)
        nan = r != r
        return ret(np.where(nan, fx.NAN32, r) if nan.any() else r)
    return fn


def _flushed(x):
    """`fp_exact.flush32(x)`, or x itself where it holds no subnormal."""
    tiny = np.abs(x) < fx.MIN_NORMAL32
    return np.where(tiny, x * np.float32(0), x) if tiny.any() else x


def _flush64(x):
    bits = np.asarray(x, np.float64).view(np.uint64)
    return np.where((bits & _EXP64) == 0, x * 0.0, x)


def _hi_word_approx(func):
    """rcp/rsqrt.approx.ftz.f64: use a[63:32] only (1.11.20 input), flush subnormals, round
    the result to 20 fraction bits (nearest even), zero the low word; NaN -> 0x7FFFFFFF00000000."""
    def fn(a):
        x = _flush64((np.asarray(a, np.float64).view(np.uint64) & _HI_WORD).view(np.float64))
        r = np.asarray(func(x), np.float64)
        rb = r.view(np.uint64)
        lsb = (rb >> np.uint64(32)) & np.uint64(1)
        rb = np.where(np.isfinite(r), (rb + np.uint64(0x7FFFFFFF) + lsb) & _HI_WORD, rb)
        r = _flush64(rb.view(np.float64))
        return ret(np.where(r != r, fx.NAN64_RCP, r))
    return fn


def _half_unary(func, t: str, ftz: bool):
    base = t[:-2] if t.endswith("x2") else t
    fmt = F16 if base == "f16" else BF16

    def core(bits):
        bits = np.asarray(bits, np.uint16)
        if ftz:
            bits = np.where((bits & np.uint16(0x7F80)) == 0, bits & np.uint16(0x8000), bits)
        x = half_float.decode32(bits, base).astype(np.float64)
        r = fx.f64_to_half_bits(fx.round_f64(func(x), None, fmt, "rn"), fmt)
        if ftz:
            r = np.where((r & np.uint16(0x7F80)) == 0, r & np.uint16(0x8000), r)
        return r
    return half_float.lift(core, t)


_LOW29, _HALF29 = np.uint64((1 << 29) - 1), np.uint64((1 << 28) - 1)


def _div_approx(ftz: bool):
    """div.approx.f32: d = a * (1/b), the reciprocal rounded to 24 bits (nearest even, no
    exponent limit, so subnormal divisors work as on H100) and replaced by a sign-preserving
    zero for |b| > 2**126, as PTX describes; the 48-bit product is rounded once to f32."""
    def fn(a, b):
        if ftz:
            a, b = fx.flush32(a), fx.flush32(b)
        b64 = np.asarray(b).astype(np.float64)
        rb = (1.0 / b64).view(np.uint64)
        r = ((rb + _HALF29 + ((rb >> np.uint64(29)) & np.uint64(1))) & ~_LOW29).view(np.float64)
        r = np.where(np.abs(b64) > 2.0 ** 126, r * 0.0, r)
        d = (np.asarray(a).astype(np.float64) * r).astype(np.float32)
        return ret(fx.canon32(fx.flush32(d) if ftz else d))
    return fn


def _div_full(ftz: bool):
    def fn(a, b):
        if ftz:
            a, b = fx.flush32(a), fx.flush32(b)
        d = np.asarray(a) / np.asarray(b)
        return ret(fx.canon32(fx.flush32(d) if ftz else d))
    return fn


def bind_mufu(instr: Instruction) -> Bound:
    """Bind rcp/sqrt/rsqrt/ex2/lg2/sin/cos/tanh `.approx`, div `.approx`/`.full` (and the
    legacy modifier-less f32 forms, which PTX defines as `.approx.ftz`)."""
    op, mods, types = instr.opcode, instr.modifiers, instr.types

    def bad(reason):
        return UnsupportedInstruction(instr.mnemonic, reason=reason)

    if len(types) != 1:
        raise bad("expected one type")
    t = types[0]
    extra = [m for m in mods if m not in ("approx", "ftz", "full")]
    if extra:
        raise bad(f"modifier .{extra[0]} not supported for the approximate form")
    legacy = "approx" not in mods and "full" not in mods
    ftz = "ftz" in mods or (legacy and t == "f32")
    if op == "div":
        if t != "f32":
            raise bad("div.approx/div.full exist for .f32 only")
        fn = _div_full(ftz) if "full" in mods else _div_approx(ftz)
        return Bound((t,), (t, t), fn, "sfu")
    if "full" in mods or op not in _F64_FUNCS:
        raise bad("no such approximate form")
    if op == "tanh" and "ftz" in mods:
        raise bad("tanh.approx has no .ftz form")
    func = _F64_FUNCS[op]
    if t == "f32":
        return Bound((t,), (t,), _f32_unary(func, ftz), "sfu")
    if t == "f64" and op in ("rcp", "rsqrt") and "approx" in mods:
        if ftz:
            return Bound((t,), (t,), _hi_word_approx(func), "sfu")
        if op == "rsqrt":
            return Bound((t,), (t,), lambda a: ret(np.asarray(func(a))), "sfu")
    if t in _HALF_OK.get(op, ()) and "approx" in mods:
        if ftz != t.startswith("bf16") and op == "ex2":
            raise bad("ex2.approx takes .ftz exactly for .bf16/.bf16x2")
        return Bound((t,), (t,), _half_unary(func, t, ftz), "sfu")
    raise bad(f"{op} has no approximate form for .{t}")
