"""Logic and bit manipulation: and, or, xor, not, cnot, lop3, shl, shr, shf, popc, clz, bfind,
brev, fns. (Bit fields and byte permutes, bfe, bfi, prmt: `bitfields.py`; dp4a, dp2a: `dot.py`.)

Every form ptxas 13 accepts for these opcodes on sm_90, bit-exact. Shift amounts are u32 and
saturate as PTX says (shl and shr.u give 0 at or past the width, shr.s fills with the sign);
numpy's shift ufuncs define exactly that for same-kind operands, which this module relies on.
`bfind` returns 0xffffffff when no non-sign bit exists.

Not modelled: `lop3` with a predicate output (`lop3.or.b32 d|p, ...`), `bmsk`, `szext`.

Sources: PTX ISA 9.0, "Logic and Shift Instructions" and "Integer Arithmetic Instructions"
(bfind, brev, clz, popc, fns); checked against inline-asm runs of
each instruction on an NVIDIA H200 (sm_90), November 2026.
"""
from __future__ import annotations

import numpy as np

from isa.opcodes import Bound, OpSpec
from isa.program import Imm, Instruction
from isa.semantics.integer import arity, check_mods, only_type, unsupported
from isa.types import dtype

LOGIC_TYPES = frozenset({"pred", "b16", "b32", "b64"})
B_TYPES = frozenset({"b16", "b32", "b64"})
_U32 = np.dtype(np.uint32)
_NONE = np.uint32(0xFFFF_FFFF)


def int_bound(t: str, n_src: int, fn, dst: str | None = None, srcs: tuple[str, ...] | None = None) -> Bound:
    return Bound((dst or t,), srcs or (t,) * n_src, fn, "int")


def plain_type(instr: Instruction, n_ops: int, types) -> str:
    arity(instr, n_ops)
    check_mods(instr, set())
    return only_type(instr, types)


# ----------------------------------------------------------------------------- logic
def bind_and(instr):
    return int_bound(plain_type(instr, 3, LOGIC_TYPES), 2, np.bitwise_and)


def bind_or(instr):
    return int_bound(plain_type(instr, 3, LOGIC_TYPES), 2, np.bitwise_or)


def bind_xor(instr):
    return int_bound(plain_type(instr, 3, LOGIC_TYPES), 2, np.bitwise_xor)


def bind_not(instr):
    return int_bound(plain_type(instr, 2, LOGIC_TYPES), 1, np.invert)          # logical not on .pred


def bind_cnot(instr):
    t = plain_type(instr, 2, B_TYPES)
    dt = dtype(t)
    return int_bound(t, 1, lambda a: (a == 0).astype(dt))


def _lut_fn(lut: int):
    """d = LUT applied bitwise, with a = 0xF0, b = 0xCC, c = 0xAA as the minterm convention."""
    lut &= 0xFF
    known = {0x00: lambda a, b, c: a & 0, 0xFF: lambda a, b, c: ~(a & 0), 0x96: lambda a, b, c: a ^ b ^ c,
             0x80: lambda a, b, c: a & b & c, 0xFE: lambda a, b, c: a | b | c,
             0xE8: lambda a, b, c: (a & b) | (c & (a | b)), 0xCA: lambda a, b, c: (a & b) | (~a & c)}
    if lut in known:
        return known[lut]
    terms = [i for i in range(8) if lut >> i & 1]

    def fn(a, b, c):
        out = None
        for i in terms:
            t = (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
            out = t if out is None else out | t
        return out
    return fn


def bind_lop3(instr):
    arity(instr, 5)
    check_mods(instr, set())
    only_type(instr, {"b32"})
    lut = instr.operands[4]
    if not isinstance(lut, Imm) or not isinstance(lut.value, int):
        raise unsupported(instr, "immLut must be an integer immediate")
    f = _lut_fn(lut.value)
    return int_bound("b32", 4, lambda a, b, c, _lut: f(a, b, c))


# ----------------------------------------------------------------------------- shifts
def _shift(ufunc, dt: np.dtype):
    """a (dt) shifted by n (u32); numpy saturates over-wide shifts as PTX does."""
    if np.promote_types(dt, _U32) == dt:
        return ufunc

    def fn(a, n):
        return ufunc(a, n).astype(dt)     # 16-bit or signed 32: shift in a wider type, truncate
    return fn


def bind_shl(instr):
    t = plain_type(instr, 3, B_TYPES)
    return int_bound(t, 2, _shift(np.left_shift, dtype(t)), srcs=(t, "u32"))


def bind_shr(instr):
    t = plain_type(instr, 3, B_TYPES | {"s16", "s32", "s64", "u16", "u32", "u64"})
    return int_bound(t, 2, _shift(np.right_shift, dtype(t)), srcs=(t, "u32"))


def bind_shf(instr):
    arity(instr, 4)
    mods = check_mods(instr, {"l", "r", "wrap", "clamp"})
    only_type(instr, {"b32"})
    if len(mods) != 2 or not ({"l", "r"} & set(mods)) or not ({"wrap", "clamp"} & set(mods)):
        raise unsupported(instr, "needs .l or .r and .wrap or .clamp")
    left, clamp = "l" in mods, "clamp" in mods

    def fn(a, b, c):
        n = np.minimum(c, np.uint32(32)) if clamp else c & np.uint32(31)
        v = (b.astype(np.uint64) << np.uint64(32)) | a.astype(np.uint64)
        return ((v << n) >> np.uint64(32)).astype(np.uint32) if left else (v >> n).astype(np.uint32)
    return int_bound("b32", 3, fn)


# ----------------------------------------------------------------------------- counting
def _bitlen32(x):
    """Number of significant bits of uint32 x (0 for 0); float64 holds uint32 exactly."""
    return np.frexp(x.astype(np.float64))[1].astype(np.uint32)


def _bitlen(x, t: str):
    if dtype(t).itemsize == 4:
        return _bitlen32(x)
    e = np.frexp(x.astype(np.float64))[1]
    # rounding to float64 can carry into the next power of two; then x < 2**(e-1)
    s = np.maximum(e - 1, 0).astype(np.uint64)
    return (e - ((x >> s) == 0) + (x == 0)).astype(np.uint32)


def bind_popc(instr):
    t = plain_type(instr, 2, {"b32", "b64"})
    return int_bound(t, 1, lambda a: np.bitwise_count(a).astype(np.uint32), dst="u32")


def bind_clz(instr):
    t = plain_type(instr, 2, {"b32", "b64"})
    w = np.uint32(dtype(t).itemsize * 8)
    return int_bound(t, 1, lambda a: w - _bitlen(a, t), dst="u32")


def bind_bfind(instr):
    arity(instr, 2)
    mods = check_mods(instr, {"shiftamt"})
    t = only_type(instr, {"u32", "s32", "u64", "s64"})
    u = "u32" if dtype(t).itemsize == 4 else "u64"
    msb = np.uint32(dtype(t).itemsize * 8 - 1)
    signed = t[0] == "s"

    def fn(a):
        x = np.where(a < 0, ~a, a).view(dtype(u)) if signed else a
        pos = _bitlen(x, u) - np.uint32(1)        # 0 -> 0xffffffff
        if mods:
            return np.where(pos == _NONE, _NONE, msb - pos)
        return pos
    return int_bound(t, 1, fn, dst="u32")


def _brev(t: str):
    dt = dtype(t)
    full = (1 << dt.itemsize * 8) - 1
    masks = [(dt.type(m & full), dt.type(s)) for m, s in ((0x5555_5555_5555_5555, 1),
                                                         (0x3333_3333_3333_3333, 2), (0x0F0F_0F0F_0F0F_0F0F, 4))]

    def fn(a):
        for m, s in masks:
            a = ((a >> s) & m) | ((a & m) << s)
        return a.byteswap()
    return fn


def bind_brev(instr):
    t = plain_type(instr, 2, {"b32", "b64"})
    return int_bound(t, 1, _brev(t))


# ----------------------------------------------------------------------------- fns
def _lowest_set_pos(x):
    """Bit position of the lowest set bit of uint32 x; 0xffffffff where x == 0."""
    return _bitlen32(x & (~x + np.uint32(1))) - np.uint32(1)


def bind_fns(instr):
    """PTX leaves base > 31 undefined; H200 gives 0xffffffff for it (any offset), and 0 for
    offset = INT_MIN (PTX's pseudocode would give 0xffffffff). Both are modelled as read."""
    arity(instr, 4)
    check_mods(instr, set())
    only_type(instr, {"b32"})
    rev = _brev("b32")

    def fn(mask, base, offset):
        bad_base = base > np.uint32(31)
        base = base & np.uint32(31)
        up = offset > 0
        n = np.minimum(np.abs(offset.astype(np.int64)), 33).astype(np.uint32)
        lowmask = (np.uint32(1) << base) - np.uint32(1)
        # offset > 0: bits >= base, counted upward. offset < 0: bits <= base, counted downward,
        # which after a bit reversal is the same upward search starting at 31 - base.
        x = np.where(up, mask & ~lowmask, rev(mask & (lowmask | (np.uint32(1) << base))))
        steps = int(np.max(np.minimum(n, np.bitwise_count(x)), initial=0))
        for _ in range(steps):                    # drop n - 1 lowest set bits (over bit positions)
            drop = n > 1
            x = np.where(drop, x & (x - np.uint32(1)), x)
            n = np.where(drop, n - np.uint32(1), n)
        pos = _lowest_set_pos(x)
        pos = np.where(up | (pos == _NONE), pos, np.uint32(31) - pos)
        at_base = np.where((mask >> base) & np.uint32(1), base, _NONE)
        r = np.where(bad_base, _NONE, np.where(offset == 0, at_base, pos))
        return np.where(offset == np.int32(-2 ** 31), np.uint32(0), r).astype(np.uint32)
    return int_bound("b32", 3, fn, srcs=("b32", "u32", "s32"))


ENTRIES: list[OpSpec] = [
    OpSpec("and", "alu", bind_and, "d = a & b (.pred: logical and)"),
    OpSpec("or", "alu", bind_or, "d = a | b (.pred: logical or)"),
    OpSpec("xor", "alu", bind_xor, "d = a ^ b (.pred: logical xor)"),
    OpSpec("not", "alu", bind_not, "d = ~a (.pred: logical not)"),
    OpSpec("cnot", "alu", bind_cnot, "d = (a == 0) ? 1 : 0"),
    OpSpec("lop3", "alu", bind_lop3, "d = immLut(a, b, c), bitwise"),
    OpSpec("shl", "alu", bind_shl, "d = a << n, 0 when n >= width"),
    OpSpec("shr", "alu", bind_shr, "d = a >> n, logical (.u/.b) or arithmetic (.s), saturating"),
    OpSpec("shf", "alu", bind_shf, "funnel shift of {b, a} by c, .wrap or .clamp"),
    OpSpec("popc", "alu", bind_popc, "d = number of set bits"),
    OpSpec("clz", "alu", bind_clz, "d = number of leading zero bits"),
    OpSpec("bfind", "alu", bind_bfind, "d = position of the most significant non-sign bit"),
    OpSpec("brev", "alu", bind_brev, "d = a with bits reversed"),
    OpSpec("fns", "alu", bind_fns, "d = position of the n-th set bit from base"),
]
