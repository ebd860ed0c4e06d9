"""Reference arithmetic of tensor-core matrix multiply-accumulate, parameterised by what the
H100/H200 probe decides (`validate/semantics/tensor_probe.py`, see docs/tensor_numerics.md).

What it models: one output element d = c + sum_k a_k b_k as a chain of block fused
multiply-adds (`BlockFma`): the K products are exact; the products of a block of K (in the order
`order`, e.g. interleaved halves) and the running addend c are aligned to an anchor exponent
(the largest leading-bit exponent, or - what the Hopper data fit - the largest sum of the inputs'
exponents, a subnormal's taken as emin, and C's own exponent, also at least emin); each is cut to
`window_bits` bits below and including the anchor's bit, by truncating its magnitude
(`truncate="magnitude"`) or toward minus infinity (`"floor"`); the cut terms are summed exactly,
optionally cut to `sum_bits` significant bits (QGMMA's f32 sums), and rounded once to the
accumulator format (`rounding` "rz" or "rne"; past the largest finite value: infinity, also under
rz); the result is c for the next block. A zero result is +0 (`signed_zero` False). With
`c_last_rn` (ptxas's FP8 `mma.sync` on sm_90: two f16 HMMAs on the inputs `promote`d to f16)
the blocks start from c = 0 and c is added at the end by an IEEE round-to-nearest add. NaN,
infinities and inf - inf are decided block by block as IEEE arithmetic would (any NaN, inf * 0
or inf - inf gives `nan_bits` / `nan_bits_f16`; a block that overflowed to inf meets the next
block's -inf as inf - inf). Integer forms (s8/u8 into s32) wrap modulo 2^32, or clamp with
`satfinite`.

This module is the reference: a Python loop per output element, written to be read. The
simulator evaluates the same model with `isa.semantics.mma_batch` (compiled, over whole batches
of warps), which tests/isa/test_mma_batch.py holds equal to `mma` / `dot` bit for bit.

`HOPPER` / `hopper_model` hold the parameters fitted to the H200 probe data (every crafted test
and every recorded element of the 52 float forms bit-exact, `validate/semantics/tensor_fit.py`);
`LITERATURE_H100` keeps the studies' parameters (Khattak and Mikaitis 2025) for comparison.

Not modelled: the f64 DMMA (an IEEE fma chain is assumed, `ieee_fma_chain`), sub-byte types,
sparse mma, block-scaled (mxf8) forms of sm_100.

Sources: Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ
Comput. Sci. 7:e330 (2021); Khattak, Mikaitis, "Accurate models of NVIDIA tensor cores",
arXiv:2512.07004 (2025); DeepSeek-AI, "DeepSeek-V3 technical report" (2024), section 3.3.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from isa.semantics.tensor_formats import FORMATS, FloatFormat, decode

ACC = {"f32": FORMATS["f32"], "f16": FORMATS["f16"]}


@dataclass(frozen=True)
class BlockFma:
    block: int                      # products fused per block
    window_bits: int                # bits kept from the anchor's bit downwards
    rounding: str = "rz"            # final rounding of each block: "rz" or "rne"
    anchor: str = "leading"         # "leading" (largest leading-bit exponent), "exp_sum" (largest
    #                                 sum of the inputs' exponents, a subnormal's taken as emin)
    truncate: str = "magnitude"     # cut of aligned terms: "magnitude" (toward 0) or "floor"
    order: tuple[int, ...] | None = None   # k visited in this order (blocks are consecutive in it)
    c_last_rn: bool = False         # blocks start at 0, c added last with an IEEE RN add
    nan_bits: int = 0x7FFFFFFF      # the NaN an f32 result carries
    nan_bits_f16: int = 0x7FFF      # the NaN an f16 result carries
    signed_zero: bool = False       # False: a zero result is +0 whatever the signs of the terms
    sum_bits: int | None = None     # each block's sum first cut (by `rounding`) to this many
    #                                 significant bits (QGMMA: 14, an "e8m13" accumulator)
    promote: str | None = None      # inputs converted exactly to this format first (ptxas's F2FP
    #                                 unpack of fp8 into f16 for mma.sync on sm_90)
    overflow_inf: bool = True       # a block sum past the largest finite value gives inf (also under rz)


#: parameters from the literature (H100), keyed by (input type, accumulator type)
LITERATURE_H100 = {
    ("f16", "f32"): BlockFma(16, 26), ("bf16", "f32"): BlockFma(16, 26),
    ("f16", "f16"): BlockFma(16, 26, rounding="rne"), ("tf32", "f32"): BlockFma(8, 26),
    ("e4m3", "f32"): BlockFma(32, 14), ("e5m2", "f32"): BlockFma(32, 14),
    ("e4m3", "f16"): BlockFma(32, 14, rounding="rne"), ("e5m2", "f16"): BlockFma(32, 14, rounding="rne"),
}


def _fp8_mma_order(k: int) -> tuple[int, ...]:
    """ptxas's fp8 mma.sync on sm_90: bytes 0-1 of each register pair go to the first HMMA."""
    return tuple(x for x in range(k) if x % 4 < 2) + tuple(x for x in range(k) if x % 4 >= 2)


_HMMA = BlockFma(16, 26, anchor="exp_sum")                       # f16 / bf16 (HMMA, HGMMA)
_HMMA_TF32 = BlockFma(8, 26, anchor="exp_sum")                   # tf32 (HMMA.TF32, HGMMA.TF32)
_QGMMA = BlockFma(32, 14, anchor="exp_sum", sum_bits=14)   # fp8 wgmma

#: fitted to the H200 probe (data/measurements/tensor_mma_h200.npz, tensor_wgmma_h200.npz; the H100's
#: arrays are identical), keyed by (instruction, input class, accumulator); docs/tensor_numerics.md
HOPPER = {
    ("mma", "f16", "f32"): _HMMA, ("mma", "f16", "f16"): replace(_HMMA, rounding="rne"),
    ("mma", "bf16", "f32"): _HMMA, ("mma", "tf32", "f32"): _HMMA_TF32,
    ("mma", "fp8", "f32"): replace(_HMMA, c_last_rn=True, promote="f16"),
    ("mma", "fp8", "f16"): replace(_HMMA, rounding="rne", c_last_rn=True, promote="f16"),
    ("wgmma", "f16", "f32"): _HMMA, ("wgmma", "f16", "f16"): replace(_HMMA, rounding="rne"),
    ("wgmma", "bf16", "f32"): _HMMA, ("wgmma", "tf32", "f32"): _HMMA_TF32,
    ("wgmma", "fp8", "f32"): _QGMMA, ("wgmma", "fp8", "f16"): replace(_QGMMA, rounding="rne", sum_bits=None),
}


def hopper_model(instruction: str, atype: str, ctype: str, k: int) -> BlockFma:
    """The fitted model of one sm_90 instruction ("mma" for mma.sync, "wgmma"): A's type (B's is
    of the same class), the accumulator type and the instruction's K."""
    cls = "fp8" if atype in ("e4m3", "e5m2") else atype
    try:
        model = HOPPER[(instruction, cls, ctype)]
    except KeyError:
        raise ValueError(f"no tensor-core model for {instruction} {atype} -> {ctype}") from None
    if model.c_last_rn:
        model = replace(model, order=_fp8_mma_order(k))
    return model


def _exact(v: float) -> tuple[int, int]:
    """A finite float64 as (signed integer m, exponent e) with v = m * 2^e."""
    if v == 0:
        return 0, 0
    m, e = math.frexp(v)
    return int(m * (1 << 53)), e - 53


def _leading_exp(m: int, e: int) -> int:
    return abs(m).bit_length() - 1 + e


def round_to_format(s: int, e: int, fmt: FloatFormat, mode: str, neg_zero: bool = False,
                    overflow_inf: bool = False) -> int:
    """Bits of the value s * 2^e rounded to `fmt` ("rz" or "rne"); overflow: rne -> infinity,
    rz -> the largest finite value (IEEE), or infinity with `overflow_inf` (the tensor cores)."""
    w = 1 + fmt.exp_bits + fmt.man_bits
    sign = 1 if s < 0 or (s == 0 and neg_zero) else 0
    a = abs(s)
    if a == 0:
        return sign << (w - 1)
    lead = a.bit_length() - 1 + e
    q = max(lead, fmt.emin) - fmt.man_bits           # exponent of the last kept bit
    if q > e:
        sh = q - e
        kept = a >> sh
        rem = a - (kept << sh)
        if mode == "rne":
            half = 1 << (sh - 1)
            if rem > half or (rem == half and kept & 1):
                kept += 1
        elif mode != "rz":
            raise ValueError(f"rounding mode {mode!r}")
    else:
        kept = a << (e - q)
    # kept * 2^q; renormalise a carry out of the significand
    if kept >> (fmt.man_bits + 1):
        kept >>= 1
        q += 1
    top = (1 << fmt.exp_bits) - 1
    if kept >> fmt.man_bits == 0:                    # subnormal (or zero after rounding)
        body = kept
    else:
        ef = q + fmt.man_bits + fmt.bias
        if ef >= top:                                # overflow
            body = (top << fmt.man_bits) if mode == "rne" or overflow_inf else ((top - 1) << fmt.man_bits) | ((1 << fmt.man_bits) - 1)
        else:
            body = (ef << fmt.man_bits) | (kept & ((1 << fmt.man_bits) - 1))
    return (sign << (w - 1)) | body


def _special(avals, bvals, cval) -> float | None:
    """NaN / inf result decided IEEE-like before the blocks, or None for a finite computation."""
    prods = []
    for a, b in zip(avals, bvals):
        if math.isnan(a) or math.isnan(b) or ((math.isinf(a) and b == 0) or (math.isinf(b) and a == 0)):
            return math.nan
        if math.isinf(a) or math.isinf(b):
            prods.append(math.copysign(math.inf, a) * math.copysign(1.0, b))
    terms = prods + ([cval] if math.isinf(cval) or math.isnan(cval) else [])
    if any(math.isnan(t) for t in terms):
        return math.nan
    if any(t == math.inf for t in terms) and any(t == -math.inf for t in terms):
        return math.nan
    return terms[0] if terms else None


def _block(terms: list[tuple[int, int, int | None]], model: BlockFma) -> tuple[int, int]:
    """terms (m, e, anchor exponent or None) -> the exactly summed cut terms as (s, e)."""
    anchors = [t[2] for t in terms if t[2] is not None]
    live = [t for t in terms if t[0] != 0]
    if not live or not anchors:
        return 0, 0
    lsb = max(anchors) - model.window_bits + 1
    s = 0
    for m, e, _ in live:
        if e >= lsb:
            s += m << (e - lsb)
        elif model.truncate == "floor":
            s += m >> (lsb - e)
        else:
            s += (abs(m) >> (lsb - e)) * (1 if m > 0 else -1)
    return s, lsb


def _cut(s: int, e: int, bits: int, mode: str) -> tuple[int, int]:
    """s * 2^e with its magnitude cut to `bits` significant bits ("rz" or "rne")."""
    sh = abs(s).bit_length() - bits
    if sh <= 0:
        return s, e
    a = abs(s)
    kept, rem = a >> sh, a & ((1 << sh) - 1)
    if mode == "rne" and (rem > 1 << (sh - 1) or (rem == 1 << (sh - 1) and kept & 1)):
        kept += 1
    return (kept if s > 0 else -kept), e + sh


def _in_exp(m: int, e: int, fmt: FloatFormat) -> int:
    """The exponent a nonzero input (or C) contributes to an `exp_sum` anchor (a subnormal: emin)."""
    return max(_leading_exp(m, e), fmt.emin)


def _float_bits(x: float, ctype: str) -> int:
    """An infinity (or any float64 exactly representable) as accumulator bits."""
    f = np.float32 if ctype == "f32" else np.float16
    return int(np.asarray(np.float64(x)).astype(f).view(np.uint32 if ctype == "f32" else np.uint16))


def _products(av, bv, fa: FloatFormat, fb: FloatFormat, model: BlockFma) -> list:
    """Exact products as (m, e, anchor exponent or None) in the model's k order."""
    prods = []
    for k in model.order or range(len(av)):
        if not (math.isfinite(av[k]) and math.isfinite(bv[k])):
            prods.append((0, 0, None))          # its block is decided by `_special`
            continue
        ma, ea = _exact(av[k])
        mb, eb = _exact(bv[k])
        m, e = ma * mb, ea + eb
        if model.anchor == "exp_sum":
            anchor = _in_exp(ma, ea, fa) + _in_exp(mb, eb, fb) if m else None
        else:
            anchor = _leading_exp(m, e) if m else None
        prods.append((m, e, anchor))
    return prods


def dot(a_bits, b_bits, c_bits: int, atype: str, btype: str, ctype: str, model: BlockFma) -> int:
    """One output element: c + sum_k a_k b_k as `model` computes it, as accumulator bits."""
    fa, fb, fc = FORMATS[atype], FORMATS[btype], ACC[ctype]
    av = decode(np.asarray(a_bits), fa).tolist()
    bv = decode(np.asarray(b_bits), fb).tolist()
    cv = float(decode(np.asarray(c_bits), fc))
    if model.promote:                           # exact: the values stay, subnormals may not
        fa = fb = FORMATS[model.promote]
    prods = _products(av, bv, fa, fb, model)
    order = model.order or range(len(av))
    acc = 0.0 if model.c_last_rn else cv
    for i in range(0, len(prods), model.block):
        ks = order[i:i + model.block]
        sp = _special([av[k] for k in ks], [bv[k] for k in ks], acc)   # NaN / inf, block by block
        if sp is not None:
            acc = sp
            continue
        mc, ec = _exact(acc)
        c_anchor = (_in_exp(mc, ec, fc) if model.anchor == "exp_sum" else _leading_exp(mc, ec)) if mc else None
        terms = prods[i:i + model.block] + [(mc, ec, c_anchor)]
        s, e = _block(terms, model)
        if model.sum_bits is not None:
            s, e = _cut(s, e, model.sum_bits, model.rounding)
        neg_zero = model.signed_zero and s == 0 and all(t[0] == 0 for t in terms) and math.copysign(1.0, acc) < 0
        acc = float(decode(np.asarray(round_to_format(s, e, fc, model.rounding, neg_zero, model.overflow_inf)), fc))
        if acc == 0 and not model.signed_zero:  # also a sum that underflows to zero
            acc = 0.0
    if model.c_last_rn:                         # IEEE add (FADD / HADD2): RN, overflow to inf
        x = acc + cv                            # float64 then f32/f16: double rounding innocuous (53 >= 2p + 2)
        if math.isfinite(x):
            return round_to_format(*_exact(x), fc, "rne", x == 0 and math.copysign(1.0, x) < 0)
        acc = x
    if math.isnan(acc):
        return model.nan_bits if ctype == "f32" else model.nan_bits_f16
    return _float_bits(acc, ctype)


def mma(A, B, C, atype: str, btype: str, ctype: str, model: BlockFma) -> np.ndarray:
    """D (M x N bit patterns) for A (M x K), B (K x N), C (M x N) bit patterns."""
    A, B, C = np.asarray(A), np.asarray(B), np.asarray(C)
    D = np.zeros(C.shape, np.uint64)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            D[i, j] = dot(A[i], B[:, j], int(C[i, j]), atype, btype, ctype, model)
    return D


def mma_int(A, B, C, atype: str, btype: str, satfinite: bool = False) -> np.ndarray:
    """s8/u8 products summed into s32: wraps modulo 2^32, or clamps with .satfinite."""
    def val(x, t):
        v = np.asarray(x).astype(np.int64) & 0xFF
        return np.where(v >= 128, v - 256, v) if t == "s8" else v
    c = np.asarray(C).astype(np.int64) & 0xFFFFFFFF
    c = np.where(c >= 1 << 31, c - (1 << 32), c)
    d = val(A, atype) @ val(B, btype) + c
    if satfinite:
        d = np.clip(d, -(1 << 31), (1 << 31) - 1)
    return (d & 0xFFFFFFFF).astype(np.uint64)


def ieee_fma_chain(A, B, C) -> np.ndarray:
    """f64 (DMMA): d = fma(a_k, b_k, d) for k in order, each rounded to nearest (an assumption)."""
    a = np.asarray(A).astype(np.uint64).view(np.float64)
    b = np.asarray(B).astype(np.uint64).view(np.float64)
    d = np.asarray(C).astype(np.uint64).view(np.float64).copy()
    out = np.zeros_like(d)
    for i in range(d.shape[0]):
        for j in range(d.shape[1]):
            acc = d[i, j]
            for k in range(a.shape[1]):
                x, y = a[i, k], b[k, j]
                if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(acc)):
                    acc = x * y + acc
                else:
                    acc = float(Fraction(x) * Fraction(y) + Fraction(acc))
            out[i, j] = acc
    return out.view(np.uint64)
