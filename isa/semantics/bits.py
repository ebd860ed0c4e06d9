"""Logic and bit manipulation: and, or, xor, not, cnot, lop3, shl, shr, shf, popc, clz, bfind,
brev, bfe, bfi, prmt, fns, dp4a, dp2a.

Every form ptxas 13 accepts for these opcodes on sm_90, bit-exact. Shift amounts are u32 and
saturate as PTX says (shl and shr.u give 0 at or past the width, shr.s fills with the sign);
numpy's shift ufuncs define exactly that for same-kind operands, which this module relies on.
`bfe`/`bfi` follow the ISA pseudocode (position and length taken from the low 8 bits for
32-bit types, from all 32 bits for 64-bit types, as H200 does); `prmt`'s modes
use the ISA's byte-selection tables; `bfind` returns 0xffffffff when no non-sign bit exists.

Not modelled: `lop3` with a predicate output (`lop3.or.b32 d|p, ...`), `bmsk`, `szext`.

Sources: PTX ISA 9.0, "Logic and Shift Instructions" and "Integer Arithmetic Instructions"
(bfe, bfi, bfind, brev, clz, popc, prmt, fns, dp4a, dp2a); checked against inline-asm runs of
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


def _b(t: str, n_src: int, fn, dst: str | None = None, srcs: tuple[str, ...] | None = None) -> Bound:
    return Bound((dst or t,), srcs or (t,) * n_src, fn, "int")


def _plain(instr: Instruction, n_ops: int, types) -> str:
    arity(instr, n_ops)
    check_mods(instr, set())
    return only_type(instr, types)


# ----------------------------------------------------------------------------- logic
def bind_and(instr):
    return _b(_plain(instr, 3, LOGIC_TYPES), 2, np.bitwise_and)


def bind_or(instr):
    return _b(_plain(instr, 3, LOGIC_TYPES), 2, np.bitwise_or)


def bind_xor(instr):
    return _b(_plain(instr, 3, LOGIC_TYPES), 2, np.bitwise_xor)


def bind_not(instr):
    return _b(_plain(instr, 2, LOGIC_TYPES), 1, np.invert)          # logical not on .pred


def bind_cnot(instr):
    t = _plain(instr, 2, B_TYPES)
    dt = dtype(t)
    return _b(t, 1, lambda a: (a == 0).astype(dt))


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
    return _b("b32", 4, lambda a, b, c, _lut: f(a, b, c))


# ----------------------------------------------------------------------------- shifts
def _shift(ufunc, dt: np.dtype):
    """a (dt) shifted by n (u32); numpy saturates over-wide shifts as PTX does."""
    if np.promote_types(dt, _U32) == dt:
        return ufunc

    def fn(a, n):
        return ufunc(a, n).astype(dt)     # 16-bit or signed 32: shift in a wider type, truncate
    return fn


def bind_shl(instr):
    t = _plain(instr, 3, B_TYPES)
    return _b(t, 2, _shift(np.left_shift, dtype(t)), srcs=(t, "u32"))


def bind_shr(instr):
    t = _plain(instr, 3, B_TYPES | {"s16", "s32", "s64", "u16", "u32", "u64"})
    return _b(t, 2, _shift(np.right_shift, dtype(t)), srcs=(t, "u32"))


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
    return _b("b32", 3, fn)


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
    t = _plain(instr, 2, {"b32", "b64"})
    return _b(t, 1, lambda a: np.bitwise_count(a).astype(np.uint32), dst="u32")


def bind_clz(instr):
    t = _plain(instr, 2, {"b32", "b64"})
    w = np.uint32(dtype(t).itemsize * 8)
    return _b(t, 1, lambda a: w - _bitlen(a, t), dst="u32")


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
    return _b(t, 1, fn, dst="u32")


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
    t = _plain(instr, 2, {"b32", "b64"})
    return _b(t, 1, _brev(t))


# ----------------------------------------------------------------------------- bit fields
def _field(t: str):
    """f(b, c) -> (pos, len, k, mask_k): position, length, number of field bits inside the word,
    and a k-bit mask. 32-bit forms use b & 0xff and c & 0xff as PTX says; 64-bit forms (which
    ptxas emulates) use all 32 bits of b and c (H200 reading: bfe.u64 a, 0x10f, 4 gives 0)."""
    dt = dtype(t)
    w = dt.itemsize * 8
    one = dt.type(1)
    lim = np.uint32(0xFF) if w == 32 else np.uint32(0xFFFF_FFFF)

    def f(b, c):
        pos = (b & lim).astype(dt)
        ln = (c & lim).astype(dt)
        k = np.minimum(ln, np.where(pos < w, dt.type(w) - pos, dt.type(0)))
        return pos, ln, k, (one << k) - one          # numpy: 1 << w == 0, so mask(w) is all ones
    return f


def bind_bfe(instr):
    t = _plain(instr, 4, {"u32", "s32", "u64", "s64"})
    dt = dtype(t)
    u = np.dtype(f"u{dt.itemsize}")
    field = _field("u32" if dt.itemsize == 4 else "u64")
    msb = u.type(dt.itemsize * 8 - 1)
    if t[0] == "u":
        def fn(a, b, c):
            pos, _, k, m = field(b, c)
            return (a >> pos) & m
    else:
        def fn(a, b, c):
            ua = a.view(u)
            pos, ln, k, m = field(b, c)
            top = np.minimum(pos + ln - u.type(1), msb)
            sbit = ((ua >> top) & u.type(1)).astype(bool) & (ln != 0)
            return (((ua >> pos) & m) | np.where(sbit, ~m, u.type(0))).view(dt)
    return _b(t, 3, fn, srcs=(t, "u32", "u32"))


def bind_bfi(instr):
    t = _plain(instr, 5, {"b32", "b64"})
    field = _field("u32" if t == "b32" else "u64")

    def fn(a, b, c, d):
        pos, _, k, m = field(c, d)
        m = m << pos
        return (b & ~m) | ((a << pos) & m)
    return _b(t, 4, fn, srcs=(t, t, "u32", "u32"))


# ----------------------------------------------------------------------------- prmt
# Byte selectors for d.b0..d.b3 per value of c[1:0] (PTX ISA, prmt mode table).
_PRMT_MODES = {
    "f4e": ((0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6)),
    "b4e": ((0, 7, 6, 5), (1, 0, 7, 6), (2, 1, 0, 7), (3, 2, 1, 0)),
    "rc8": ((0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)),
    "ecl": ((0, 1, 2, 3), (1, 1, 2, 3), (2, 2, 2, 3), (3, 3, 3, 3)),
    "ecr": ((0, 0, 0, 0), (0, 1, 1, 1), (0, 1, 2, 2), (0, 1, 2, 3)),
    "rc16": ((0, 1, 0, 1), (2, 3, 2, 3), (0, 1, 0, 1), (2, 3, 2, 3)),
}


_NIBBLES = np.array([0, 4, 8, 12], dtype=np.uint32)


def _prmt_bytes(a, b, c):
    """The 8 bytes of {b, a} as a (..., 8) uint8 array (byte k = bits 8k+7..8k), little-endian."""
    v = np.empty(np.broadcast(a, b, c).shape + (2,), dtype=np.uint32)
    v[..., 0] = a
    v[..., 1] = b
    return v.view(np.uint8)


def _prmt_pack(out):
    return np.ascontiguousarray(out).view(np.uint32)[..., 0]


def bind_prmt(instr):
    arity(instr, 4)
    mods = check_mods(instr, set(_PRMT_MODES))
    only_type(instr, {"b32"})
    if len(mods) > 1:
        raise unsupported(instr, "at most one mode")
    if mods:
        table = np.array(_PRMT_MODES[mods[0]], dtype=np.intp)          # [c & 3][byte]

        def fn(a, b, c):
            by = _prmt_bytes(a, b, c)
            sel = table[np.asarray(c & np.uint32(3), dtype=np.intp)]
            return _prmt_pack(np.take_along_axis(by, np.broadcast_to(sel, by.shape[:-1] + (4,)), -1))
        return _b("b32", 3, fn)
    sel_op = instr.operands[3]
    if isinstance(sel_op, Imm) and isinstance(sel_op.value, int):     # usual: a constant selector
        ctl = [(sel_op.value >> (4 * i)) & 0xF for i in range(4)]
        idx = [x & 7 for x in ctl]
        signed = [i for i in range(4) if ctl[i] & 8]

        def fn(a, b, c):
            out = _prmt_bytes(a, b, c)[..., idx]
            if signed:
                out[..., signed] = np.where(out[..., signed] >= 128, np.uint8(0xFF), np.uint8(0))
            return _prmt_pack(out)
        return _b("b32", 3, fn)

    def fn(a, b, c):
        by = _prmt_bytes(a, b, c)
        ctl = (np.asarray(c)[..., None] >> _NIBBLES) & np.uint32(0xF)
        out = np.take_along_axis(by, np.broadcast_to((ctl & np.uint32(7)).astype(np.intp), by.shape[:-1] + (4,)), -1)
        rep = np.where(out >= 128, np.uint8(0xFF), np.uint8(0))
        return _prmt_pack(np.where(ctl >= 8, rep, out))
    return _b("b32", 3, fn)


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
    return _b("b32", 3, fn, srcs=("b32", "u32", "s32"))


# ----------------------------------------------------------------------------- dot products
def _bytes(x, signed: bool, idx):
    v = (x >> np.uint32(8 * idx)) & np.uint32(0xFF)
    v = v.astype(np.int64)
    return np.where(v >= 128, v - 256, v) if signed else v


def _halves(x, signed: bool, idx):
    v = ((x >> np.uint32(16 * idx)) & np.uint32(0xFFFF)).astype(np.int64)
    return np.where(v >= 32768, v - 65536, v) if signed else v


def _dot_types(instr, ts):
    if len(ts) != 2 or any(t not in ("u32", "s32") for t in ts):
        raise unsupported(instr, "needs .atype.btype from .u32/.s32")
    return ts, ("u32" if ts == ("u32", "u32") else "s32")


def bind_dp4a(instr):
    arity(instr, 4)
    check_mods(instr, set())
    (ta, tb), tc = _dot_types(instr, instr.types)
    sa, sb, out = ta == "s32", tb == "s32", dtype(tc)

    def fn(a, b, c):
        a, b = a.view(np.uint32), b.view(np.uint32)
        acc = c.astype(np.int64)
        for i in range(4):
            acc = acc + _bytes(a, sa, i) * _bytes(b, sb, i)
        return acc.astype(out)
    return _b(tc, 3, fn, srcs=(ta, tb, tc))


def bind_dp2a(instr):
    arity(instr, 4)
    mods = check_mods(instr, {"lo", "hi"})
    if len(mods) != 1:
        raise unsupported(instr, "needs .lo or .hi")
    (ta, tb), tc = _dot_types(instr, instr.types)
    sa, sb, out, base = ta == "s32", tb == "s32", dtype(tc), (0 if mods[0] == "lo" else 2)

    def fn(a, b, c):
        a, b = a.view(np.uint32), b.view(np.uint32)
        acc = c.astype(np.int64)
        for i in range(2):
            acc = acc + _halves(a, sa, i) * _bytes(b, sb, base + i)
        return acc.astype(out)
    return _b(tc, 3, fn, srcs=(ta, tb, tc))


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
    OpSpec("bfe", "alu", bind_bfe, "d = bit field a[pos +: len], zero- or sign-extended"),
    OpSpec("bfi", "alu", bind_bfi, "d = b with a[0 +: len] inserted at pos"),
    OpSpec("prmt", "alu", bind_prmt, "d = four bytes picked from {b, a}"),
    OpSpec("fns", "alu", bind_fns, "d = position of the n-th set bit from base"),
    OpSpec("dp4a", "alu", bind_dp4a, "d = c + four-way byte dot product"),
    OpSpec("dp2a", "alu", bind_dp2a, "d = c + two-way 16x8-bit dot product"),
]
