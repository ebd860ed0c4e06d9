"""Atomic read-modify-write: what `atom` and `red` compute, not how memory is reached.

`bind` returns `Bound(dst_types, src_types, fn=combine, unit='ldst')`:
- `dst_types` is `(type,)` for `atom` (d receives the old value) and `()` for `red`;
- `src_types` is `('u64', type)`, or `('u64', type, type)` for `cas`: the address `[a]`
  first (as `isa.semantics.memory` reports it for ld/st), then the data operands b[, c].
  The executor resolves the address, gathers the old values, and calls
      `new = combine(old, b)`      or, for cas,      `new = combine(old, cmp, new_value)`
  i.e. `combine(old, *data)` with the data sources after the address, elementwise (arrays of
  the type's dtype, or numpy scalars). Lanes that hit the same address must be applied one
  after another (in an order the executor documents), each seeing the value the previous one
  stored; combine itself is pure.

Operations (PTX "atom" semantics): and/or/xor (.b32/.b64), exch (.b32/.b64), cas
(.b16/.b32/.b64), add (.u32/.s32/.u64 wrapping, .f32, .f64, .noftz .f16/.bf16/.f16x2/.bf16x2,
rounded to nearest even; a NaN result is the canonical NaN 0x7fffffff / 0x7fff, f64 keeps
the input's payload, all as read on H200), inc/dec (.u32: inc = old >= b ? 0 : old + 1;
dec = old == 0 or old > b ? b : old - 1), min/max (.u32/.s32/.u64/.s64).

`atom.add.f32` on .global flushes subnormal inputs and results to sign-preserving zero; on
.shared it keeps them (PTX ISA; both read on an NVIDIA H200). A generic `atom.add.f32` is
treated as global (the combine cannot see where the address points).

Not modelled: `.b128`, vector forms (`.v2/.v4/.v8`), `.L2::cache_hint`, `.shared::cluster`.

Sources: PTX ISA 9.0, "Parallel Synchronization and Communication Instructions: atom, red";
checked against inline-asm atomics on an NVIDIA H200 (sm_90), November 2026.
"""
from __future__ import annotations

import numpy as np

from isa.opcodes import Bound, OpSpec
from isa.program import Instruction
from isa.semantics.integer import unsupported

SEMS = frozenset({"relaxed", "acquire", "release", "acq_rel"})
SCOPES = frozenset({"cta", "cluster", "gpu", "sys"})
SPACES = frozenset({"global", "shared", "shared::cta"})
OPS = frozenset({"and", "or", "xor", "cas", "exch", "add", "inc", "dec", "min", "max"})
_TYPES = {
    "and": {"b32", "b64"}, "or": {"b32", "b64"}, "xor": {"b32", "b64"},
    "exch": {"b32", "b64"}, "cas": {"b16", "b32", "b64"},
    "add": {"u32", "s32", "u64", "f32", "f64", "f16", "bf16", "f16x2", "bf16x2"},
    "inc": {"u32"}, "dec": {"u32"},
    "min": {"u32", "s32", "u64", "s64"}, "max": {"u32", "s32", "u64", "s64"},
}
_HALF = frozenset({"f16", "bf16", "f16x2", "bf16x2"})
_F32_TINY = np.float32(2.0 ** -126)


def _ftz32(x):
    return np.where(np.abs(x) < _F32_TINY, np.copysign(np.float32(0), x), x)


def bf16_round(f32):
    """float32 -> bf16 bits (uint16), round to nearest even; NaN stays a quiet NaN."""
    u = f32.view(np.uint32)
    r = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    nan = (u & np.uint32(0x7FFF_FFFF)) > np.uint32(0x7F80_0000)
    return np.where(nan, (u >> np.uint32(16)) | np.uint32(0x0040), r).astype(np.uint16)


_F32_NAN = np.uint32(0x7FFF_FFFF).view(np.float32)
_F16_NAN = np.uint16(0x7FFF).view(np.float16)
_BF16_NAN = np.uint16(0x7FFF)


def _f32_add(a, b):
    r = a + b
    return np.where(r != r, _F32_NAN, r)


def _bf16_add(a, b):
    fa = (a.astype(np.uint32) << np.uint32(16)).view(np.float32)
    fb = (b.astype(np.uint32) << np.uint32(16)).view(np.float32)
    r = fa + fb
    return np.where(r != r, _BF16_NAN, bf16_round(r))


def _f16_add(a, b):
    r = a + b             # numpy rounds the float32 sum to f16; exact since 24 >= 2*11 + 2
    return np.where(r != r, _F16_NAN, r)


def _x2(add16, half_view):
    def fn(a, b):
        lo = add16((a & np.uint32(0xFFFF)).astype(np.uint16).view(half_view),
                   (b & np.uint32(0xFFFF)).astype(np.uint16).view(half_view))
        hi = add16((a >> np.uint32(16)).astype(np.uint16).view(half_view),
                   (b >> np.uint32(16)).astype(np.uint16).view(half_view))
        return lo.view(np.uint16).astype(np.uint32) | (hi.view(np.uint16).astype(np.uint32) << np.uint32(16))
    return fn


def _add(t: str, space: str | None):
    if t == "f32":
        if space == "shared":
            return _f32_add
        return lambda old, b: _ftz32(_f32_add(_ftz32(old), _ftz32(b)))
    if t == "f16":
        return _f16_add
    if t == "bf16":
        return _bf16_add
    if t == "f16x2":
        return _x2(_f16_add, np.float16)
    if t == "bf16x2":
        return _x2(_bf16_add, np.uint16)
    return np.add


def _combine(op: str, t: str, space: str | None):
    if op == "add":
        return _add(t, space)
    if op == "cas":
        return lambda old, cmp, new: np.where(old == cmp, new, old)
    if op == "exch":
        return lambda old, b: b.copy()
    if op == "inc":
        return lambda old, b: np.where(old >= b, np.uint32(0), old + np.uint32(1))
    if op == "dec":
        return lambda old, b: np.where((old == 0) | (old > b), b, old - np.uint32(1))
    return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
            "min": np.minimum, "max": np.maximum}[op]


def _bind(instr: Instruction, is_red: bool) -> Bound:
    op = space = None
    noftz = False
    for m in instr.modifiers:
        if m in OPS and op is None:
            op = m
        elif m in SPACES and space is None:
            space = m.split("::", 1)[0]
        elif m == "noftz":
            noftz = True
        elif m not in SEMS and m not in SCOPES:
            raise unsupported(instr, f"modifier .{m} not supported")
    if op is None:
        raise unsupported(instr, "needs an operation (.add, .cas, ...)")
    if is_red and op in ("cas", "exch"):
        raise unsupported(instr, f"red has no .{op}")
    if len(instr.types) != 1 or instr.types[0] not in _TYPES[op]:
        raise unsupported(instr, f".{op} takes one of {', '.join(sorted(_TYPES[op]))}")
    t = instr.types[0]
    if (t in _HALF) != noftz:
        raise unsupported(instr, ".noftz is required for, and only for, half-precision add")
    n_data = 2 if op == "cas" else 1
    n_ops = n_data + (1 if is_red else 2)
    if len(instr.operands) != n_ops:
        raise unsupported(instr, f"expects {n_ops} operands, got {len(instr.operands)}")
    dst = () if is_red else (t,)
    return Bound(dst, ("u64",) + (t,) * n_data, _combine(op, t, space), "ldst")


def bind_atom(instr: Instruction) -> Bound:
    return _bind(instr, is_red=False)


def bind_red(instr: Instruction) -> Bound:
    return _bind(instr, is_red=True)


ENTRIES: list[OpSpec] = [
    OpSpec("atom", "mem", bind_atom, "atomically: d = *a; *a = combine(*a, b[, c])"),
    OpSpec("red", "mem", bind_red, "atomically: *a = combine(*a, b), no result"),
]
