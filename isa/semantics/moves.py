"""Data movement between registers and address conversion: mov, cvta, isspacep.

`mov.type d, a` copies a register, an immediate, a special register (the executor supplies
`%tid.x` and friends as u32, `%clock64` as u64, ...), or a symbol address (supplied by the
executor as u64, in the symbol's own state space). The vector forms pack and unpack, low
element first: `mov.b64 %rd, {%r1, %r2}` gives rd = r2:r1, `mov.b32 {%rs1, %rs2}, %r` gives
rs1 = r[15:0]; a `Vector` with n elements of a W-bit mov has elements of type b(W/n) (a sink
`_` element still counts as a value).

`cvta.space.u64 p, a` adds the window base of `space` (isa.memory_map) to a state-space address;
`cvta.to.space.u64` subtracts it; `.global` is the identity both ways. `isspacep.space p, a`
tests whether a generic address lies in that window; `.global` is true outside the shared,
local and const windows (the param window lies inside global, as PTX says). `.shared::cluster`
addresses live in the shared window too (`isa.memory_map.CLUSTER_RANK_SHIFT`), so its
`cvta`/`isspacep` are those of `.shared`.

Not modelled: 32-bit addressing (`cvta.*.u32`; ptxas rejects it for sm_90), `mov.b128`.

Sources: PTX ISA 9.0, "Data Movement and Conversion Instructions: mov, cvta, isspacep" and
"Generic Addressing".
"""
from __future__ import annotations

import numpy as np

from isa.memory_map import WINDOW_BYTES, WINDOWS
from isa.opcodes import Bound, OpSpec
from isa.program import Instruction, Vector
from isa.semantics.integer import arity, unsupported
from isa.types import dtype

MOV_TYPES = frozenset({"pred", "b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "f32", "f64"})


def _copy(a):
    return a.copy()


def _pack(n: int, width: int):
    """Join n elements of `width` bits each, element 0 in the low bits."""
    out = np.dtype(f"u{n * width // 8}")
    ew = np.dtype(f"u{width // 8}")

    def fn(*elems):
        acc = elems[0].view(ew).astype(out)
        for i in range(1, n):
            acc = acc | (elems[i].view(ew).astype(out) << out.type(i * width))
        return acc
    return fn


def _unpack(n: int, width: int, t: str):
    src = np.dtype(f"u{dtype(t).itemsize}")
    ew = np.dtype(f"u{width // 8}")
    mask = src.type((1 << width) - 1)

    def fn(a):
        a = a.view(src)
        return tuple(((a >> src.type(i * width)) & mask).astype(ew) for i in range(n))
    return fn


def bind_mov(instr: Instruction) -> Bound:
    arity(instr, 2)
    if instr.modifiers or len(instr.types) != 1 or instr.types[0] not in MOV_TYPES:
        raise unsupported(instr, f"type must be one of {', '.join(sorted(MOV_TYPES))}")
    t = instr.types[0]
    d, a = instr.operands
    if not isinstance(d, Vector) and not isinstance(a, Vector):
        return Bound((t,), (t,), _copy, "misc")
    if t[0] != "b":
        raise unsupported(instr, "vector pack/unpack needs a .b16/.b32/.b64 type")
    vec = d if isinstance(d, Vector) else a
    n = len(vec.elems)
    w = dtype(t).itemsize * 8
    if n not in (2, 4) or w // n < 8:
        raise unsupported(instr, f"cannot split .{t} into {n} elements")
    et = f"b{w // n}"
    if isinstance(d, Vector) and isinstance(a, Vector):
        raise unsupported(instr, "both operands are vectors")
    if isinstance(a, Vector):
        return Bound((t,), (et,) * n, _pack(n, w // n), "misc")
    return Bound((et,) * n, (t,), _unpack(n, w // n, t), "misc")


def _space(instr: Instruction, allowed) -> tuple[str, bool]:
    """The state space named by the modifiers (sub-qualifiers like ::cta dropped) and `.to`."""
    to = False
    space = None
    for m in instr.modifiers:
        if m == "to":
            to = True
            continue
        base = m.split("::", 1)[0]
        if base in allowed and space is None:
            space = base
            continue
        raise unsupported(instr, f"modifier .{m} not supported")
    if space is None:
        raise unsupported(instr, f"needs a state space: {', '.join(sorted(allowed))}")
    if m_cluster := [m for m in instr.modifiers if m.endswith("::cluster") and m != "shared::cluster"]:
        raise unsupported(instr, f".{m_cluster[0]} addresses (clusters) are not modelled")
    return space, to


def bind_cvta(instr: Instruction) -> Bound:
    arity(instr, 2)
    space, to = _space(instr, WINDOWS)
    if instr.types != ("u64",):
        raise unsupported(instr, "only 64-bit addresses (.u64) are modelled")
    base = np.uint64(WINDOWS[space])
    if base == 0:
        return Bound(("u64",), ("u64",), _copy, "int")
    if to:
        return Bound(("u64",), ("u64",), lambda a: a - base, "int")
    return Bound(("u64",), ("u64",), lambda a: a + base, "int")


def bind_isspacep(instr: Instruction) -> Bound:
    arity(instr, 2)
    space, to = _space(instr, WINDOWS)
    if to:
        raise unsupported(instr, "modifier .to not supported")
    t = instr.types[0] if instr.types else "u64"
    if instr.types not in ((), ("u64",)):
        raise unsupported(instr, "only 64-bit addresses are modelled")
    span = np.uint64(WINDOW_BYTES)
    if space == "global":
        others = [np.uint64(WINDOWS[s]) for s in ("shared", "local", "const")]

        def fn(a):
            inside = np.zeros(np.shape(a), dtype=bool)
            for lo in others:
                inside = inside | ((a - lo) < span)      # unsigned wrap: a < lo fails too
            return ~inside
        return Bound(("pred",), (t,), fn, "int")
    lo = np.uint64(WINDOWS[space])
    return Bound(("pred",), (t,), lambda a: (a - lo) < span, "int")


ENTRIES: list[OpSpec] = [
    OpSpec("mov", "alu", bind_mov, "d = a (register, immediate, special register, symbol address; pack/unpack)"),
    OpSpec("cvta", "alu", bind_cvta, "generic <-> state-space address: add or subtract the window base"),
    OpSpec("isspacep", "alu", bind_isspacep, "p = generic address a lies in the state space's window"),
]
