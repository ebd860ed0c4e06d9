"""cvt: conversions between s8..s64, u8..u64, f16, bf16, f32, f64 (and to f16x2, bf16x2, tf32).

What it models (PTX ISA 9.7.9.21 "cvt"):
- int -> int: widening extends by the *source* type (sign for .sN, zero for .uN), narrowing
  truncates; `.sat` clamps to the destination range instead.
- float -> int: `.rni/.rzi/.rmi/.rpi` round to an integer, the result clamps to the
  destination range (`.sat` is redundant). NaN gives 0, except that a .f64 source or a
  64-bit destination gives 1 << (bits-1) (MININT for signed types).
- int -> float and float narrowing: `.rn/.rz/.rm/.rp` (and `.rna` for tf32), correctly rounded
  from the exact value (64-bit integers are split into two exact doubles). Overflow gives inf
  under .rn and the away direction, MAX_NORM otherwise.
- float -> same float with `.rni/.rzi/.rmi/.rpi`: round to an integral value in that format.
- float widening is exact.
- `.ftz` flushes f32 subnormal inputs and results; `.sat` (float destination) clamps to
  [+0, 1] with NaN -> +0; `.relu` (f16/bf16/tf32 destination) maps negatives to +0 and NaN to
  the canonical NaN; `.satfinite` maps results beyond MAX_NORM (and inf) to ±MAX_NORM.
- `cvt.frnd.f16x2.f32 d, a, b` / `.bf16x2`: d[31:16] = cvt(a), d[15:0] = cvt(b).
- NaN results are canonical (0x7FFFFFFF, 0x7FFF) for f32/f16/bf16/tf32 destinations, except
  that f64 -> f32/f16/bf16 keep the top payload bits and set the quiet bit, and bf16 -> f32 is
  a plain shift (even of a signalling NaN); f64 destinations keep the payload, quieted. These
  match H100/H200 (single-instruction measurements).
Lenient defaults for forms PTX marks mandatory: a missing float rounding is `.rn`, a missing
integer rounding for float -> int is `.rzi` (the PTX example `cvt.s32.f64 j, r`).

fp8 pairs (.e4m3x2, .e5m2x2) are in `fp8.py`. Not modelled: fp6/fp4/ue8m0 formats, `.rs` stochastic rounding.

Sources: PTX ISA 9.7.9.21; IEEE 754-2019 5.4.1 and 7.4.
"""
from __future__ import annotations

import numpy as np

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound, OpSpec
from isa.program import Instruction
from isa.semantics import fp_exact as fx
from isa.semantics.fp_exact import FORMATS, ret, round_f64, sgn, two_sum
from isa.types import SIGNED, UNSIGNED, dtype
from isa.semantics.fp8 import bind_cvt_fp8

_INTS = SIGNED | UNSIGNED
_FLOATS = ("f16", "bf16", "f32", "f64")
_IRND = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}
_FRND = ("rn", "rz", "rm", "rp", "rna")
_PACKED = ("f16x2", "bf16x2")


def _bits(t: str) -> int:
    return dtype(t).itemsize * 8


def _int_range(t: str) -> tuple[int, int]:
    n = _bits(t)
    return (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t in SIGNED else (0, (1 << n) - 1)


# ----------------------------------------------------------------------------- value decoding
def _to_f64(x, t: str, ftz: bool):
    """Exact float64 value of a source of float type t (f32 subnormals flushed if ftz)."""
    if t == "bf16":
        return fx.bf16_to_f32(x).astype(np.float64)
    if t == "f32" and ftz:
        x = fx.flush32(x)
    return np.asarray(x).astype(np.float64)


def _int_to_f64(x, t: str):
    """(s, esign): s = RN(x) as a double and the sign of x - s (64-bit ints split exactly)."""
    x = np.asarray(x)
    if _bits(t) <= 32:
        return x.astype(np.float64), None
    hi = (x >> 32).astype(np.float64) * 4294967296.0
    lo = (x & np.array(0xFFFFFFFF, x.dtype)).astype(np.float64)
    s, e = two_sum(hi, lo)
    return s, sgn(e)


# ----------------------------------------------------------------------------- float encoding
def _post(v, dt: str, ftz: bool, saturate: bool, relu: bool, satfinite: bool):
    """Modifiers applied to the rounded destination value (as exact doubles)."""
    if ftz and dt == "f32":
        v = np.where(np.abs(v) < fx.F32.min_normal, v * 0.0, v)
    if saturate:
        v = np.where(v > 0, np.minimum(v, 1.0), 0.0)
    if relu:
        v = np.where(v != v, v, np.where(np.signbit(v), 0.0, v))
    if satfinite:
        m = FORMATS[dt].max_finite
        v = np.where(np.isinf(v), np.copysign(m, v), v)
    return v


def _encode(v, dt: str, keep_nan: bool = False):
    """Exactly representable doubles -> destination dtype (canonical NaN except f64, and
    except f64 -> f32, which keeps the top payload bits, quieted, as H100 does)."""
    if dt == "f64":
        return v
    if dt == "f32":
        r = v.astype(np.float32)
        return r if keep_nan else fx.canon32(r)
    if dt == "tf32":
        return np.where(v != v, np.uint32(0x7FFFFFFF), v.astype(np.float32).view(np.uint32))
    bits = fx.f64_to_half_bits(v, FORMATS[dt])
    return bits.view(np.float16) if dt == "f16" else bits


def _round_float(x64, esign, dt: str, mode: str):
    """Round doubles (with residual sign) to float type dt in mode; RN fast paths."""
    if dt == "f64" and esign is None:
        return x64
    if mode == "rn" and esign is None and dt in ("f32", "f16"):
        return x64.astype(np.float32 if dt == "f32" else np.float16).astype(np.float64)
    return round_f64(x64, esign, FORMATS[dt], mode)


# ----------------------------------------------------------------------------- converters
def _float_to_int(st: str, dt: str, irnd: str, ftz: bool):
    lo, hi = _int_range(dt)
    big, small = float(hi + 1), float(lo)                  # both powers of two (or 0): exact
    ddt = dtype(dt)
    nanv = ddt.type(0 if (st != "f64" and _bits(dt) < 64) else lo if dt in SIGNED else hi // 2 + 1)
    wide = np.uint64 if dt == "u64" else np.int64
    rnd = _IRND[irnd]

    def fn(a):
        r = rnd(_to_f64(a, st, ftz))
        if np.all((r < big) & (r >= small)):            # common case: in range, no NaN
            return ret(r.astype(ddt))
        over, under, nan = r >= big, r < small, r != r
        safe = np.where(over | under | nan, 0.0, r).astype(wide).astype(ddt)
        out = np.where(over, ddt.type(hi), np.where(under, ddt.type(lo), np.where(nan, nanv, safe)))
        return ret(np.asarray(out, ddt))
    return fn


def _int_to_int(st: str, dt: str, saturate: bool):
    ddt = dtype(dt)
    if not saturate:
        return lambda a: ret(np.asarray(a).astype(ddt))
    lo, hi = _int_range(dt)

    def fn(a):
        a = np.asarray(a)
        if st == "u64":
            return ret(np.minimum(a, np.uint64(hi)).astype(ddt))
        return ret(np.clip(a.astype(np.int64), max(lo, -(1 << 63)), min(hi, (1 << 63) - 1)).astype(ddt))
    return fn


def _to_float(st: str, dt: str, mode: str, irnd: str | None, ftz: bool, post):
    """float or int source -> float destination value (exact double, before _encode)."""
    if st in _INTS:
        def conv(a):
            s, es = _int_to_f64(a, st)
            return _round_float(s, es, dt, mode)
    elif irnd is not None:
        rnd = _IRND[irnd]

        def conv(a):
            return rnd(_to_f64(a, st, ftz))
    else:
        def conv(a):
            return _round_float(_to_f64(a, st, ftz), None, dt, mode)
    return lambda a: post(conv(a))


def _payload_nan(st: str, dt: str):
    """NaN results that keep the source payload (measured on H100/H200): f64 -> f16/bf16 keep
    the top payload bits and set the quiet bit; bf16 -> f32 is a plain 16-bit shift. None when
    the result is the canonical NaN (or the default numpy conversion already matches)."""
    if st == "f64" and dt in ("f16", "bf16"):
        shift, mask, nan = (42, 0x3FF, 0x7E00) if dt == "f16" else (45, 0x7F, 0x7FC0)

        def bits(a):
            b = np.asarray(a, np.float64).view(np.uint64)
            h = (((b >> np.uint64(48)) & np.uint64(0x8000)) | np.uint64(nan) | ((b >> np.uint64(shift)) & np.uint64(mask)))
            h = h.astype(np.uint16)
            return h.view(np.float16) if dt == "f16" else h
        return bits, lambda a: a != a
    if st == "bf16" and dt == "f32":
        return (lambda a: (np.asarray(a).astype(np.uint32) << np.uint32(16)).view(np.float32),
                lambda a: (np.asarray(a) & np.uint16(0x7FFF)) > np.uint16(0x7F80))
    return None


def bind_cvt(instr: Instruction) -> Bound:
    """cvt{.irnd|.frnd}{.ftz}{.sat}{.relu}{.satfinite}.dtype.atype d, a (or d, a, b for x2)."""
    types, mods = instr.types, instr.modifiers
    if "e4m3x2" in mods or "e5m2x2" in mods:
        return bind_cvt_fp8(instr)

    def bad(reason):
        return UnsupportedInstruction(instr.mnemonic, reason=reason)

    if len(types) != 2:
        raise bad("cvt needs a destination and a source type")
    dt, st = types
    extra = [m for m in mods if m not in _IRND and m not in _FRND and m not in ("ftz", "sat", "relu", "satfinite")]
    if extra:
        raise bad(f"modifier .{extra[0]} not supported")
    irnds = [m for m in mods if m in _IRND]
    frnds = [m for m in mods if m in _FRND]
    if len(irnds) + len(frnds) > 1:
        raise bad("more than one rounding modifier")
    irnd = irnds[0] if irnds else None
    frnd = frnds[0] if frnds else None
    ftz, saturate = "ftz" in mods, "sat" in mods
    relu, satfinite = "relu" in mods, "satfinite" in mods
    if ftz and "f32" not in types:
        raise bad(".ftz needs an .f32 source or destination")
    if frnd == "rna" and dt != "tf32":
        raise bad(".rna is defined for .tf32 destinations only")
    if (relu or satfinite) and dt not in ("f16", "bf16", "tf32") + _PACKED:
        raise bad(".relu/.satfinite need an f16/bf16/tf32 destination")

    if st in _INTS and dt in _INTS:
        if irnd or frnd or ftz:
            raise bad("rounding and .ftz are illegal for int-to-int cvt")
        return Bound((dt,), (st,), _int_to_int(st, dt, saturate), "int")

    unit = "fp64" if "f64" in types else "fp32" if ("f32" in types or dt == "tf32") else "fp16"
    if st in _FLOATS and dt in _INTS:
        if frnd:
            raise bad("float-to-int cvt takes .rni/.rzi/.rmi/.rpi")
        return Bound((dt,), (st,), _float_to_int(st, dt, irnd or "rzi", ftz), unit)

    if st not in _INTS and st not in _FLOATS:
        raise bad(f"source type .{st} not supported")
    if dt not in _FLOATS + ("tf32",) + _PACKED:
        raise bad(f"destination type .{dt} not supported")
    if irnd and (st != dt or st in _INTS):
        raise bad("integer rounding needs the same float type on both sides")
    if dt in ("tf32",) + _PACKED and st != "f32":
        raise bad(f".{dt} destinations convert from .f32")
    base = dt[:-2] if dt in _PACKED else dt

    def post(v):
        return _encode(_post(v, base, ftz, saturate, relu, satfinite), base, st == "f64")
    conv = _to_float(st, base, frnd or "rn", irnd, ftz, post)
    payload = None if (saturate or relu) else _payload_nan(st, base)
    if payload is not None:
        nan_bits, is_nan = payload
        plain = conv

        def conv(a):
            return np.where(is_nan(a), nan_bits(a), plain(a))
    if dt in _PACKED:
        def fn(a, b):
            hi = np.asarray(conv(a)).view(np.uint16).astype(np.uint32)
            lo = np.asarray(conv(b)).view(np.uint16).astype(np.uint32)
            return ret((hi << np.uint32(16)) | lo)
        return Bound((dt,), (st, st), fn, unit)
    return Bound((dt,), (st,), lambda a: ret(np.array(conv(a))), unit)


ENTRIES: list[OpSpec] = [
    OpSpec("cvt", "alu", bind_cvt, "convert between integer and float types with PTX rounding"),
]
