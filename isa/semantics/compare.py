"""Comparison and selection: setp, set, selp, slct.

`setp` covers every comparison ptxas 13 accepts: integer eq/ne/lt/le/gt/ge (+ lo/ls/hi/hs on
unsigned types; bit types allow eq/ne only), and float eq/ne/lt/le/gt/ge (ordered: false when
either input is NaN), equ/neu/ltu/leu/gtu/geu (unordered: true when either is NaN), num and nan
for f16, bf16, f32, f64, f16x2 and bf16x2, with `.ftz` (f32, f16) and the `.and/.or/.xor` form
`setp.CmpOp.BoolOp.type p[|q], a, b, c` where p = t BoolOp c and q = !t BoolOp c.
For f16x2/bf16x2 `p|q` are the low- and high-half results (each combined with c); a single
destination gets the low-half result (H200 reading). A `%p|%q` (PredPair) destination
yields two values, p then q; `%p|_` yields only p (as the executor's decoder counts it).

A negated predicate source (`!%p` as setp's c, or as a source of and/or/xor/selp) is not a
value this module sees: the executor must load it already inverted.

Sources: PTX ISA 9.0 "Comparison and Selection Instructions" and "Half Precision Comparison
Instructions"; checked against inline-asm runs on an NVIDIA H200 (sm_90), November 2026.
"""
from __future__ import annotations

import numpy as np

from isa.opcodes import Bound, OpSpec
from isa.program import Instruction, PredPair
from isa.semantics.integer import arity, unsupported
from isa.types import BITS, SIGNED, dtype

INT_CMPS = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
FLOAT_CMPS = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
BOOL_OPS = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}
INT_CMP_TYPES = frozenset({"b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64"})
FLOAT_CMP_TYPES = frozenset({"f16", "bf16", "f32", "f64", "f16x2", "bf16x2"})
_UNIT = {"f16": "fp16", "bf16": "fp16", "f16x2": "fp16", "bf16x2": "fp16", "f32": "fp32", "f64": "fp64"}
_TINY = {"f32": np.float32(2.0 ** -126), "f16": np.float16(2.0 ** -14)}
_INT_UFUNC = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
              "gt": np.greater, "ge": np.greater_equal,
              "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}


def unit_for(t: str) -> str:
    return _UNIT.get(t, "int")


# ----------------------------------------------------------------------------- comparisons
def int_compare(instr: Instruction, op: str, t: str):
    if t in BITS and op not in ("eq", "ne"):
        raise unsupported(instr, "bit-size types compare with eq and ne only")
    if t in SIGNED and op in ("lo", "ls", "hi", "hs"):
        raise unsupported(instr, f".{op} is an unsigned comparison; type is .{t}")
    if op not in _INT_UFUNC:
        raise unsupported(instr, f"comparison .{op} is not an integer comparison")
    return _INT_UFUNC[op]


def _float_cmp(op: str):
    nan = np.isnan
    return {
        "eq": np.equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
        "ne": lambda a, b: (a < b) | (a > b),
        "equ": lambda a, b: ~((a < b) | (a > b)),
        "neu": np.not_equal,
        "ltu": lambda a, b: ~(a >= b), "leu": lambda a, b: ~(a > b),
        "gtu": lambda a, b: ~(a <= b), "geu": lambda a, b: ~(a < b),
        "num": lambda a, b: ~(nan(a) | nan(b)),
        "nan": lambda a, b: nan(a) | nan(b),
    }[op]


def _bf16(bits):
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def _decode(t: str, ftz: bool):
    """Function from the held value of scalar float type t to a numpy float to compare."""
    if t == "bf16":
        return _bf16
    if not ftz:
        return None
    tiny, zero = _TINY[t], dtype(t).type(0)
    return lambda x: np.where(np.abs(x) < tiny, zero, x)


def float_compare(instr: Instruction, op: str, t: str, ftz: bool):
    """f(a, b) -> bool, or -> (low, high) bool pair for the x2 types."""
    if op not in FLOAT_CMPS:
        raise unsupported(instr, f"comparison .{op} is not a float comparison")
    if ftz and t not in ("f32", "f16", "f16x2"):
        raise unsupported(instr, ".ftz applies to .f32 and .f16 comparisons only")
    cmp = _float_cmp(op)
    if t in ("f16x2", "bf16x2"):
        half = "f16" if t == "f16x2" else "bf16"
        dec = _decode(half, ftz)
        conv = dec if half == "bf16" else (
            (lambda h: dec(h.view(np.float16))) if dec else (lambda h: h.view(np.float16)))

        def pair(a, b):
            lo = cmp(conv((a & np.uint32(0xFFFF)).astype(np.uint16)), conv((b & np.uint32(0xFFFF)).astype(np.uint16)))
            hi = cmp(conv((a >> np.uint32(16)).astype(np.uint16)), conv((b >> np.uint32(16)).astype(np.uint16)))
            return lo, hi
        return pair
    dec = _decode(t, ftz)
    if dec is None:
        return cmp
    return lambda a, b: cmp(dec(a), dec(b))


def _parse(instr: Instruction, n_types: int):
    """(cmp op, bool op or None, ftz) from the modifiers; checks the type count."""
    mods = list(instr.modifiers)
    ftz = "ftz" in mods
    if ftz:
        mods.remove("ftz")
    boolop = next((m for m in mods if m in BOOL_OPS), None)
    if boolop:
        mods.remove(boolop)
    if len(mods) != 1 or mods[0] not in INT_CMPS + FLOAT_CMPS:
        raise unsupported(instr, "needs one comparison operator")
    if len(instr.types) != n_types:
        raise unsupported(instr, f"needs {n_types} type suffix(es)")
    return mods[0], boolop, ftz


def _compare(instr: Instruction, t: str, op: str, ftz: bool):
    if t in INT_CMP_TYPES:
        if ftz:
            raise unsupported(instr, ".ftz applies to float comparisons only")
        return int_compare(instr, op, t)
    if t in FLOAT_CMP_TYPES:
        return float_compare(instr, op, t, ftz)
    raise unsupported(instr, f"cannot compare .{t}")


# ----------------------------------------------------------------------------- setp / set
def bind_setp(instr: Instruction) -> Bound:
    op, boolop, ftz = _parse(instr, 1)
    t = instr.types[0]
    arity(instr, 4 if boolop else 3)
    cmp = _compare(instr, t, op, ftz)
    d = instr.operands[0]
    pair = isinstance(d, PredPair) and d.second is not None     # `p|_` is a single destination
    x2 = t in ("f16x2", "bf16x2")
    if pair and t in ("f16", "bf16"):
        raise unsupported(instr, "scalar half-precision setp has a single destination")
    dsts = ("pred", "pred") if pair else ("pred",)
    srcs = (t, t, "pred") if boolop else (t, t)
    bop = BOOL_OPS.get(boolop)
    if x2:
        if pair and bop:
            def fn(a, b, c):
                lo, hi = cmp(a, b)
                return bop(lo, c), bop(hi, c)
        elif pair:
            fn = cmp
        elif bop:
            def fn(a, b, c):
                return bop(cmp(a, b)[0], c)
        else:
            def fn(a, b):
                return cmp(a, b)[0]
    elif pair and bop:
        def fn(a, b, c):
            r = cmp(a, b)
            return bop(r, c), bop(~r, c)
    elif pair:
        def fn(a, b):
            r = cmp(a, b)
            return r, ~r
    elif bop:
        def fn(a, b, c):
            return bop(cmp(a, b), c)
    else:
        fn = cmp
    return Bound(dsts, srcs, fn, unit_for(t))


_SET_TRUE = {"u32": np.uint32(0xFFFF_FFFF), "s32": np.int32(-1), "f32": np.float32(1.0),
             "f16": np.float16(1.0), "bf16": np.uint16(0x3F80)}


def bind_set(instr: Instruction) -> Bound:
    op, boolop, ftz = _parse(instr, 2)
    dt, st = instr.types
    arity(instr, 4 if boolop else 3)
    if dt not in _SET_TRUE or st in ("f16x2", "bf16x2"):
        raise unsupported(instr, "set supports .u32/.s32/.f32/.f16/.bf16 results of scalar comparisons")
    cmp = _compare(instr, st, op, ftz)
    one, zero = _SET_TRUE[dt], dtype(dt).type(0)
    bop = BOOL_OPS.get(boolop)
    if bop:
        def fn(a, b, c):
            return np.where(bop(cmp(a, b), c), one, zero)
        return Bound((dt,), (st, st, "pred"), fn, unit_for(st))
    return Bound((dt,), (st, st), lambda a, b: np.where(cmp(a, b), one, zero), unit_for(st))


# ----------------------------------------------------------------------------- selp / slct
SELP_TYPES = frozenset({"b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "f32", "f64"})


def bind_selp(instr: Instruction) -> Bound:
    arity(instr, 4)
    if instr.modifiers or len(instr.types) != 1 or instr.types[0] not in SELP_TYPES:
        raise unsupported(instr, f"type must be one of {', '.join(sorted(SELP_TYPES))}")
    t = instr.types[0]
    return Bound((t,), (t, t, "pred"), lambda a, b, c: np.where(c, a, b), unit_for(t))


def bind_slct(instr: Instruction) -> Bound:
    arity(instr, 4)
    mods = instr.modifiers
    if len(instr.types) != 2 or instr.types[0] not in SELP_TYPES or instr.types[1] not in ("s32", "f32"):
        raise unsupported(instr, "needs slct.dtype.s32 or slct.dtype.f32")
    t, ct = instr.types
    if [m for m in mods if m != "ftz"] or (mods and ct != "f32"):
        raise unsupported(instr, ".ftz applies to slct.dtype.f32 only")
    if mods:               # a subnormal c flushes to +-0, which is >= 0
        tiny = _TINY["f32"]

        def fn(a, b, c):
            return np.where((c >= 0) | (np.abs(c) < tiny), a, b)
    else:
        def fn(a, b, c):
            return np.where(c >= 0, a, b)
    return Bound((t,), (t, t, ct), fn, unit_for(ct))


ENTRIES: list[OpSpec] = [
    OpSpec("setp", "alu", bind_setp, "p = a CmpOp b [BoolOp c]; q = !(a CmpOp b) [BoolOp c]"),
    OpSpec("set", "alu", bind_set, "d = (a CmpOp b [BoolOp c]) ? all ones or 1.0 : 0"),
    OpSpec("selp", "alu", bind_selp, "d = c ? a : b"),
    OpSpec("slct", "alu", bind_slct, "d = (c >= 0) ? a : b"),
]
