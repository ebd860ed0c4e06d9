"""Floating-point arithmetic on .f32 and .f64 lanes, bit-exact in every rounding mode.

What it models (PTX ISA 9.7.3 "Floating-Point Instructions"), binding each form to a tight
closure over lanes:
- `add`, `sub`, `mul`, `fma`/`mad`, `div.rnd`, `rcp.rnd`, `sqrt.rnd` with .rn/.rz/.rm/.rp,
  correctly rounded by the cores in `rounded` (f64 fma: Boldo-Melquiond emulation with an
  exact Fraction fallback). A missing rounding modifier on add/sub/mul means .rn; note that
  ptxas may contract such unmodified mul+add pairs into one fma on the GPU (PTX permits it),
  which executing them one by one does not reproduce.
- `.ftz` (f32): subnormal inputs and results become sign-preserving zero; mul and fma flush
  when the exact result is below 2**-126 even if it rounds up to 2**-126 (as H100/H200 do),
  the others after rounding. `.sat` (f32): clamp to [+0.0, 1.0], NaN and -0.0 -> +0.0.
- `min`/`max` (NaN operand yields the other; `.NaN`; `.xorsign.abs`; -0.0 < +0.0; 3 inputs),
  `neg`/`abs` (sign-bit operations), `copysign` (d = |b| with the sign of a), `testp`.
- NaN results (PTX: f32 "unspecified NaN", f64 payloads supported) follow what H100/H200 do
  (measured with single inline-PTX instructions by one-off CuPy probes whose outputs were not
  committed; removed in issue 27: `git show 00f418b:validate/semantics/probes/hwprobe2.py`,
  hwprobe.py, hwprobe3.py): every f32 NaN result is the canonical
  0x7FFFFFFF (also for neg/abs/min/max); an f64 result carries a NaN operand's payload,
  quieted (for several NaN operands: b, then a for add/sub/mul/min/max; b, c, a for fma;
  a, then b for div), neg/abs.f64 return a NaN input quieted with its sign unchanged, and
  invalid operations (inf-inf, 0*inf, 0/0, sqrt(-x)) give 0xFFF8000000000000.
- Exact-zero sums are -0.0 under .rm and +0.0 otherwise (IEEE 754-2019 6.3).

Half precision (f16, bf16, x2) lives in `half_float`; approximate (MUFU) forms of div, rcp,
sqrt, rsqrt, ex2, lg2, sin, cos, tanh in `transcendental`.

Not modelled: `.f32x2` (sm_100), `mad.f32` sm_1x truncation (mapped to `mad.rn.f32`).
Legacy defaults follow the PTX notes: div/rcp/sqrt `.f64` without rounding is `.rn`;
`div/rcp/sqrt.f32` without modifiers is `.approx.ftz`; `mad`/`fma` without rounding is `.rn`.

Sources: PTX ISA 9.7.3.1-9.7.3.17; IEEE 754-2019; papers cited in fp_exact.
"""
from __future__ import annotations

import numpy as np

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound, OpSpec
from isa.program import Instruction
from isa.semantics import fp_exact as fx
from isa.semantics import half_float, transcendental
from isa.semantics.fp_exact import F32, F64, ret, two_sum
from isa.semantics.rounded import CORES

_RND = ("rn", "rz", "rm", "rp")
_HALVES = ("f16", "bf16", "f16x2", "bf16x2")


def _unsupported(instr: Instruction, reason: str) -> UnsupportedInstruction:
    return UnsupportedInstruction(instr.mnemonic, reason=reason)


def _check(instr: Instruction, allowed) -> None:
    extra = [m for m in instr.modifiers if m not in allowed]
    if extra:
        raise _unsupported(instr, f"modifier .{extra[0]} not supported here")


def _rounding(instr: Instruction, default: str | None = "rn") -> str | None:
    r = [m for m in instr.modifiers if m in _RND]
    if len(r) > 1:
        raise _unsupported(instr, "more than one rounding modifier")
    return r[0] if r else default


def _nsrc(instr: Instruction, default: int) -> int:
    return len(instr.operands) - 1 if instr.operands else default



def _flush_tiny_exact(core, fused: bool):
    """mul/fma .ftz.f32: H100/H200 flush when the *exact* result is below 2**-126, even if it
    rounds up to 2**-126 (measured: mul.rn.ftz.f32(1 - 2**-24, 2**-126) = +0)."""
    def fn(*xs):
        r = core(*xs)
        p = xs[0].astype(np.float64) * xs[1]
        s, e = two_sum(p, xs[2].astype(np.float64)) if fused else (p, 0.0)
        tiny = (np.abs(s) < 2.0 ** -126) | ((np.abs(s) == 2.0 ** -126) & (e * s < 0))
        return np.where(tiny, r * np.float32(0), r)
    return fn


def _f32_op(core, ftz: bool = False, saturate: bool = False):
    """Wrap an f32 core with .ftz, .sat and NaN canonicalisation."""
    def fn(*xs):
        if ftz:
            xs = [fx.flush32(x) for x in xs]
        r = core(*xs)
        if ftz:
            r = fx.flush32(r)
        if saturate:
            r = fx.sat(r)
        return ret(fx.canon32(r))
    return fn


# Which operand's NaN an f64 result carries (quieted) when several are NaN, as measured on
# H100/H200: b before a for add/sub/mul/min/max, b, c, a for fma, a before b for div.
_NAN_ORDER = {"add": (1, 0), "sub": (1, 0), "mul": (1, 0), "fma": (1, 2, 0), "mad": (1, 2, 0),
              "div": (0, 1), "min": (1, 0), "max": (1, 0)}


def _f64_op(core, order=(0,)):
    def fn(*xs):
        return ret(fx.nan_operand(np.asarray(core(*xs)), [xs[i] for i in order]))
    return fn


def _bind_rounded(instr: Instruction, op: str, t: str, nsrc: int) -> Bound:
    """add/sub/mul/fma/mad/div.rnd/sqrt.rnd/rcp.rnd on f32/f64."""
    sat_ok = op in ("add", "sub", "mul", "fma", "mad") and t == "f32"
    _check(instr, _RND + (("ftz",) if t == "f32" else ()) + (("sat",) if sat_ok else ()))
    rnd = _rounding(instr)
    base = {"sub": "add", "mad": "fma"}.get(op, op)
    core = CORES[(base, t)](rnd)
    if op == "sub":
        add = core
        core = lambda a, b: add(a, -b)      # noqa: E731  (negation is exact)
    mods = instr.modifiers
    if t == "f32" and "ftz" in mods and base in ("mul", "fma"):
        core = _flush_tiny_exact(core, base == "fma")
    fn = _f32_op(core, "ftz" in mods, "sat" in mods) if t == "f32" else _f64_op(core, _NAN_ORDER.get(op, (0,)))
    return Bound((t,), (t,) * nsrc, fn, "fp32" if t == "f32" else "fp64")


def _bind_minmax(instr: Instruction, t: str) -> Bound:
    mods = instr.modifiers
    _check(instr, ("ftz", "NaN", "xorsign", "abs") if t == "f32" else ("NaN", "xorsign", "abs"))
    if ("xorsign" in mods) != ("abs" in mods):
        raise _unsupported(instr, ".xorsign and .abs go together")
    nsrc = _nsrc(instr, 2)
    if nsrc not in (2, 3) or (nsrc == 3 and "xorsign" in mods):
        raise _unsupported(instr, f"{nsrc} source operands")
    is_max, nan_mode, xor = instr.opcode == "max", "NaN" in mods, "xorsign" in mods
    nan = fx.NAN32 if t == "f32" else None
    ftz = "ftz" in mods

    def fn(*xs):
        if ftz:
            xs = [fx.flush32(x) for x in xs]
        if nsrc == 3 and "abs" in mods:
            xs = [np.abs(x) for x in xs]
        r = fx.min_max(xs[0], xs[1], is_max, nan_mode, xor, nan)
        if nsrc == 3:
            r = fx.min_max(r, xs[2], is_max, nan_mode, False, nan)
        if t == "f64":
            r = fx.nan_operand(r, xs[::-1])
        return ret(fx.flush32(r) if ftz else np.asarray(r))
    return Bound((t,), (t,) * nsrc, fn, "fp32" if t == "f32" else "fp64")


_SIGN = {"f32": (np.uint32, 0x80000000), "f64": (np.uint64, 0x8000000000000000)}


def _bind_sign(instr: Instruction, t: str) -> Bound:
    """neg / abs as sign-bit operations. NaN inputs (PTX: unspecified NaN) give what H100/H200
    give: the canonical NaN for f32, the input quieted with its sign unchanged for f64."""
    _check(instr, ("ftz",) if t == "f32" else ())
    ut, bit = _SIGN[t]
    s, mask = ut(bit), ut(~bit & (2 ** (8 * np.dtype(ut).itemsize) - 1))
    ftz = "ftz" in instr.modifiers
    neg = instr.opcode == "neg"

    def fn(a):
        if ftz:
            a = fx.flush32(a)
        bits = np.asarray(a).view(ut)
        r = (bits ^ s if neg else bits & mask).view(np.dtype(t.replace("f", "float")))
        return ret(fx.canon32(r) if t == "f32" else fx.nan_operand(r, [a]))
    return Bound((t,), (t,), fn, "fp32" if t == "f32" else "fp64")


def bind_float(instr: Instruction) -> Bound:
    """Bind a float-typed add/sub/mul/mad/fma/div/min/max/neg/abs (any float type)."""
    types = instr.types
    if len(types) != 1:
        raise _unsupported(instr, "expected one floating-point type")
    t, op = types[0], instr.opcode
    if t in _HALVES:
        return half_float.bind_half(instr)
    if t not in ("f32", "f64"):
        raise _unsupported(instr, f"type .{t} not supported")
    mods = instr.modifiers
    if op == "div" and ("approx" in mods or "full" in mods or (t == "f32" and _rounding(instr, None) is None)):
        return transcendental.bind_mufu(instr)
    if op in ("add", "sub", "mul", "fma", "mad", "div"):
        return _bind_rounded(instr, op, t, 3 if op in ("fma", "mad") else 2)
    if op in ("min", "max"):
        return _bind_minmax(instr, t)
    if op in ("neg", "abs"):
        return _bind_sign(instr, t)
    raise _unsupported(instr, "not a floating-point arithmetic opcode")


def bind_rcp_sqrt(instr: Instruction) -> Bound:
    """rcp / sqrt: `.approx` (and legacy modifier-less .f32) go to the MUFU model,
    `.rn/.rz/.rm/.rp` are correctly rounded."""
    types = instr.types
    if len(types) != 1 or types[0] not in ("f32", "f64"):
        raise _unsupported(instr, "type must be .f32 or .f64")
    t = types[0]
    if "approx" in instr.modifiers or (t == "f32" and _rounding(instr, None) is None):
        return transcendental.bind_mufu(instr)
    return _bind_rounded(instr, instr.opcode, t, 1)


def bind_copysign(instr: Instruction) -> Bound:
    """copysign.type d, a, b: d = b with the sign bit of a."""
    _check(instr, ())
    types = instr.types
    if types not in (("f32",), ("f64",)):
        raise _unsupported(instr, "type must be .f32 or .f64")
    t = types[0]
    ut, bit = _SIGN[t]
    s, mask = ut(bit), ut(~bit & (2 ** (8 * np.dtype(ut).itemsize) - 1))
    ft = np.dtype(t.replace("f", "float"))

    def fn(a, b):
        return ret(((np.asarray(b).view(ut) & mask) | (np.asarray(a).view(ut) & s)).view(ft))
    return Bound((t,), (t, t), fn, "fp32" if t == "f32" else "fp64")


_TESTP = {
    "finite": lambda a, mn: np.isfinite(a),
    "infinite": lambda a, mn: np.isinf(a),
    "number": lambda a, mn: ~np.isnan(a),
    "notanumber": lambda a, mn: np.isnan(a),
    "normal": lambda a, mn: np.isfinite(a) & ((np.abs(a) >= mn) | (a == 0)),   # zeros count as normal
    "subnormal": lambda a, mn: (np.abs(a) < mn) & (a != 0),
}


def bind_testp(instr: Instruction) -> Bound:
    """testp.op.type p, a (op in finite, infinite, number, notanumber, normal, subnormal)."""
    mods, types = instr.modifiers, instr.types
    if len(mods) != 1 or mods[0] not in _TESTP or types not in (("f32",), ("f64",)):
        raise _unsupported(instr, "expected testp.<property>.f32|f64")
    test, t = _TESTP[mods[0]], types[0]
    mn = np.float32(F32.min_normal) if t == "f32" else F64.min_normal
    return Bound(("pred",), (t,), lambda a: ret(np.asarray(test(a, mn))), "fp32" if t == "f32" else "fp64")


def _bind_fma(instr: Instruction) -> Bound:
    return bind_float(instr)


ENTRIES: list[OpSpec] = [
    OpSpec("fma", "alu", _bind_fma, "fused multiply-add, one rounding (f32/f64 all modes; f16/bf16 .rn)"),
    OpSpec("rcp", "alu", bind_rcp_sqrt, "reciprocal: .approx (MUFU) or correctly rounded .rnd"),
    OpSpec("sqrt", "alu", bind_rcp_sqrt, "square root: .approx (MUFU) or correctly rounded .rnd"),
    OpSpec("rsqrt", "alu", transcendental.bind_mufu, "approximate reciprocal square root (MUFU)"),
    OpSpec("ex2", "alu", transcendental.bind_mufu, "approximate 2**a (MUFU)"),
    OpSpec("lg2", "alu", transcendental.bind_mufu, "approximate log2(a) (MUFU)"),
    OpSpec("sin", "alu", transcendental.bind_mufu, "approximate sine (MUFU)"),
    OpSpec("cos", "alu", transcendental.bind_mufu, "approximate cosine (MUFU)"),
    OpSpec("tanh", "alu", transcendental.bind_mufu, "approximate hyperbolic tangent (MUFU)"),
    OpSpec("copysign", "alu", bind_copysign, "d = b with the sign of a"),
    OpSpec("testp", "alu", bind_testp, "test a float property into a predicate"),
]
