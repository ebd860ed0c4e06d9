"""Warpgroup-wide tensor-core instructions of sm_90a: `wgmma.mma_async` and its fence/commit/wait.

What it models (the meaning; `gpusim.functional.wgmma_ops` carries them out over warps):
- `wgmma.mma_async.sync.aligned.m64nNkK[.satfinite].dtype.atype.btype` with f16/bf16 (K 16),
  tf32 (K 8), e4m3/e5m2 (K 32, A and B may differ) into f32 or f16 (bf16, tf32: f32 only), and
  s8/u8 into s32 (`.satfinite` clamps); N a multiple of 8 up to 256 (of 16 for s8/u8 past 8).
  A (64 x K) comes from shared memory through a matrix descriptor or from registers (the `_rs`
  form: four 32-bit registers per thread, `mma_layout.wgmma_a_regs_map`); B (K x N) always
  through a descriptor. Operands after B: `scale-d` (a predicate: false means D = A B, C is
  ignored), `imm-scale-a`/`imm-scale-b` (1 or -1: -1 negates every element of that input, an
  exact sign flip), `imm-trans-a`/`imm-trans-b` (1: the operand is MN-major; f16/bf16 only).
- The descriptor (`desc_fields`): start address >> 4 in bits 0-13, leading byte offset (LBO)
  >> 4 in 16-29, stride byte offset (SBO) >> 4 in 32-45, swizzle in 62-63 (0 none, 1 128B,
  2 64B, 3 32B). `operand_addresses` places element (row, k) of the rows x K operand (rows is M
  for A, N for B, stored as B^T): core matrices of 8 rows x 16 bytes (none) or 8-row atoms of
  rows of 32/64/128 bytes (swizzled); K-major: SBO strides 8-row groups, LBO strides 16-byte K
  chunks (none; unused when swizzled, the instruction's 32 bytes of K fit one swizzled row);
  MN-major: un-swizzled, LBO strides 8-k groups and SBO 16-byte MN chunks; swizzled, LBO strides
  MN column groups of the swizzle width and SBO 8-k groups. These are the H200 probe's verdicts
  (validate/semantics/tensor_probe.py, layout stage). The swizzle XORs byte-address bits
  [4, 4 + log2(width / 16)) with bits [7, ...) of the absolute shared address, so a start
  advanced inside a swizzle atom (CUTLASS's K loop) reads what the hardware reads.
- Numerics: the block-FMA model fitted to the H200 probe, `mma_numerics.hopper_model("wgmma",
  ...)` (HGMMA / QGMMA), evaluated over every warp at once by `mma_batch.mma` (the scalar
  `mma_numerics.mma` is its reference); integers exact (`mma_numerics.mma_int`).
- Each warp w of the warpgroup owns rows 16 w .. 16 w + 15 of D, which depend only on its own
  rows of A and on all of B (checked on the H200), so `warp_mma` computes each warp's share
  (of any number of warps at once).

Not modelled (refused with the instruction's name and line): `.sp` sparse forms, b1 (`.and.popc`),
e4m3/e5m2 with MN-major operands, the descriptor's base-offset field (bits 49-51, must be 0),
sm_100 `tcgen05`. `wgmma.fence`, `commit_group` and `wait_group` have no effect here: gpusim
writes the accumulators when `mma_async` issues (DEVIATIONS.md).

Sources: PTX ISA 9.0, 9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
Instructions" (9.7.15.5.1 matrix descriptor, 9.7.15.5 layouts and swizzling modes).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound, OpSpec
from isa.program import Instruction, Vector
from isa.semantics import mma_layout as L
from isa.semantics import mma_batch as MB
from isa.semantics import mma_numerics as M

ELEM_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8}
ACC_BITS = {"f32": 32, "f16": 16, "s32": 32}
K_OF = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32}
SIGN = {"f16": 1 << 15, "bf16": 1 << 15, "tf32": 1 << 31, "e4m3": 1 << 7, "e5m2": 1 << 7}
SWIZZLE_OF_CODE = {0: "none", 1: "128B", 2: "64B", 3: "32B"}
_FP8 = ("e4m3", "e5m2")
_INT = ("s8", "u8")


@dataclass(frozen=True)
class WgmmaForm:
    n: int
    k: int
    atype: str
    btype: str
    dtype: str
    a_regs: bool            # A from registers (the `_rs` form)
    satfinite: bool = False

    @property
    def nacc(self) -> int:
        """32-bit accumulator registers per thread."""
        return self.n * ACC_BITS[self.dtype] // 64

    @property
    def nimm(self) -> int:
        """Immediate operands after scale-d: scale-a, scale-b, [trans-a,] trans-b."""
        if self.dtype == "s32":
            return 0
        if self.atype in ("f16", "bf16"):
            return 3 if self.a_regs else 4
        return 2


def _refuse(instr: Instruction, why: str):
    raise UnsupportedInstruction(instr.mnemonic, ptx_line=instr.ptx_line, reason=why)


def parse_sync(instr: Instruction) -> str:
    """"fence", "commit_group" or "wait_group" for the warpgroup's ordering instructions."""
    s = instr.suffixes
    if s in (("fence", "sync", "aligned"), ("commit_group", "sync", "aligned"),
             ("wait_group", "sync", "aligned")):
        return s[0]
    _refuse(instr, "expected wgmma.fence/commit_group/wait_group.sync.aligned")


def parse_wgmma(instr: Instruction) -> WgmmaForm:
    """The form of a `wgmma.mma_async...` instruction, or UnsupportedInstruction."""
    s = list(instr.suffixes)
    if "sp" in s:
        _refuse(instr, "sparse wgmma.mma_async.sp is not implemented")
    if s[:3] != ["mma_async", "sync", "aligned"] or len(s) < 4:
        _refuse(instr, "expected wgmma.mma_async.sync.aligned.<shape>...")
    shape, rest = s[3], s[4:]
    sat = "satfinite" in rest
    rest = [r for r in rest if r != "satfinite"]
    if len(rest) != 3:
        _refuse(instr, "expected .dtype.atype.btype")
    d, a, b = rest
    if a not in ELEM_BITS or b not in ELEM_BITS:
        _refuse(instr, f"input types .{a}.{b} are not implemented")
    if (a in _FP8) != (b in _FP8) or (a in _INT) != (b in _INT) or (a not in _FP8 + _INT and a != b):
        _refuse(instr, f"input types .{a}.{b} do not pair")
    want = ("s32",) if a in _INT else ("f32",) if a in ("bf16", "tf32") else ("f16", "f32")
    if d not in want:
        _refuse(instr, f"accumulator .{d} with inputs .{a}")
    if sat and d != "s32":
        _refuse(instr, ".satfinite is for s32 accumulators")
    k = K_OF[a]
    n = int(shape[4:shape.index("k")]) if shape.startswith("m64n") and "k" in shape else 0
    if shape != f"m64n{n}k{k}" or not 8 <= n <= 256 or n % 8 or (a in _INT and n > 8 and n % 16):
        _refuse(instr, f"shape .{shape} with inputs .{a}")
    a_regs = len(instr.operands) > 1 and isinstance(instr.operands[1], Vector)
    return WgmmaForm(n, k, a, b, d, a_regs, sat)


def _bind_wgmma(instr: Instruction) -> Bound:
    if instr.suffixes[:1] != ("mma_async",):
        parse_sync(instr)
        nsrc = 1 if instr.suffixes[0] == "wait_group" else 0
        return Bound((), ("u32",) * nsrc, None, "tensor")
    f = parse_wgmma(instr)
    a = ("b32",) * 4 if f.a_regs else ("u64",)
    return Bound(("b32",) * f.nacc, ("b32",) * f.nacc + a + ("u64", "pred") + ("s32",) * f.nimm, None, "tensor")


# -------------------------------------------------------------------- descriptors
def desc_fields(desc: int) -> tuple[int, int, int, str, int]:
    """(start bytes, LBO bytes, SBO bytes, swizzle, base offset) of a matrix descriptor."""
    d = int(desc)
    return ((d & 0x3FFF) << 4, ((d >> 16) & 0x3FFF) << 4, ((d >> 32) & 0x3FFF) << 4,
            SWIZZLE_OF_CODE[(d >> 62) & 3], (d >> 49) & 7)


def operand_addresses(desc: int, rows: int, k: int, bits: int, major: str) -> np.ndarray:
    """Shared-window byte address (rows, k) of each element's first byte (module docstring)."""
    start, lbo, sbo, sw, _ = desc_fields(desc)
    esz = bits // 8
    w = L.SWIZZLE_WIDTH[sw]
    r = np.arange(rows, dtype=np.int64)[:, None]
    kk = np.arange(k, dtype=np.int64)[None, :]
    if major == "k":
        kb = kk * esz
        if sw == "none":
            off = (r % 8) * 16 + kb % 16 + (kb // 16) * lbo + (r // 8) * sbo
        else:
            off = (r % 8) * w + kb % w + (r // 8) * sbo
    else:
        rb = r * esz
        if sw == "none":
            off = (kk % 8) * 16 + rb % 16 + (rb // 16) * sbo + (kk // 8) * lbo
        else:
            off = (kk % 8) * w + rb % w + (rb // w) * lbo + (kk // 8) * sbo
    return L.swizzle_addr(start + off, sw)


def read_operand(smem: np.ndarray, addr: np.ndarray, bits: int, aligned: bool = False) -> np.ndarray:
    """Element bit patterns at byte addresses `addr` of a uint8 shared-memory window: of the
    elements' unsigned type where every address is a multiple of the element size (one gather,
    what descriptors give: `operand_addresses` are multiples of 16 plus multiples of the element
    size, which a caller adding block offsets that are multiples of 4 says with `aligned`), else
    uint64."""
    esz = bits // 8
    if esz in (1, 2, 4) and smem.flags.c_contiguous and smem.size % esz == 0 and \
            (aligned or not (addr & (esz - 1)).any()):
        return smem.view(UINT[esz])[addr >> (esz >> 1)]
    out = np.zeros(addr.shape, np.uint64)
    for b in range(bits // 8):
        out |= smem[addr + b].astype(np.uint64) << np.uint64(8 * b)
    return out


UINT = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32)}   # element bits' dtypes


def _negate(x: np.ndarray, t: str, scale: int) -> np.ndarray:
    return x ^ np.uint64(SIGN[t]) if scale == -1 else x


@lru_cache(maxsize=None)
def _acc_map(n: int, cb: int) -> np.ndarray:
    """Warp-relative accumulator map (32, regs, elems, 2): every warp of the group has the same
    one, its rows counted from 16 w (read-only: shared by every call)."""
    m = L.wgmma_acc_map(n, cb)[:32]
    m.flags.writeable = False
    return m


@lru_cache(maxsize=None)
def _acc_positions(n: int, cb: int) -> np.ndarray:
    """`mma_layout.fragment_positions` of `_acc_map(n, cb)` over a warp's 16 x n rows (read-only),
    kept per shape rather than found again from the map's bytes on every call."""
    return L.fragment_positions(_acc_map(n, cb), (16, n))


@lru_cache(maxsize=None)
def _a_map(k: int, bits: int) -> np.ndarray:
    """Warp-relative map of A from registers (the same for every warp of the group)."""
    m = L.wgmma_a_regs_map(k, bits)[:32]
    m.flags.writeable = False
    return m


@lru_cache(maxsize=None)
def _acc_split(n: int, cb: int) -> tuple[np.ndarray, np.ndarray]:
    """`_acc_positions(n, cb)` for register-major accumulators (`mma_batch.mma`'s `c_split`):
    element (i, j) is in register reg[i n + j] of its warp, at column col[i n + j] of that
    register's lanes viewed as the accumulator's unsigned type (lane * per-register elements +
    which one); read-only, per shape."""
    pos = _acc_positions(n, cb)
    epr = 32 // cb                                       # elements per 32-bit register
    per_lane = n * cb // 64 * epr                        # elements per lane (nacc registers)
    lane, within = np.divmod(pos, per_lane)
    reg, half = np.divmod(within, epr)
    reg, col = reg.astype(np.int64), (lane * epr + half).astype(np.int64)
    reg.flags.writeable = col.flags.writeable = False
    return reg, col


def warp_mma(form: WgmmaForm, A16: np.ndarray, B: np.ndarray, c_regs: np.ndarray, scale_d,
             scale_a: int = 1, scale_b: int = 1, reference: bool = False, b_transposed: bool = False,
             b_index=None, reg_major: bool = False) -> np.ndarray:
    """D registers (..., 32, nacc) uint32 of any number of warps (the leading axes) at once:
    A16 (..., 16, K) each warp's rows of A, B (..., K, N) (with `b_transposed`, B^T (..., N, K))
    bit patterns, c_regs (..., 32, nacc)
    its accumulator registers, scale_d (...) bool; with `b_index` (int, the leading shape), B
    holds the distinct operands (NB, K, N) and warp t uses B[b_index[t]]. With `reg_major`,
    c_regs is (nacc, W, 32) (a row of lanes per register, as the executor holds them) and D is
    returned so, for W warps (one leading axis). Numerics:
    `mma_batch.mma`, or with `reference` the scalar `mma_numerics.mma` element by element."""
    if b_index is not None and (reference or form.dtype == "s32"):
        B, b_index = B[np.asarray(b_index)], None
    cb = ACC_BITS[form.dtype]
    amap = _acc_map(form.n, cb)
    if form.dtype != "s32" and not reference:            # C read and D written in register order
        model = M.hopper_model("wgmma", form.atype, form.dtype, form.k)
        kw = dict(b_transposed=b_transposed, zero_c=~np.asarray(scale_d, bool), negate_a=scale_a == -1,
                  negate_b=scale_b == -1, b_index=b_index)
        if reg_major:
            regs = np.ascontiguousarray(c_regs, np.uint32)
            el = regs.view(L.NARROW[cb])
            D = MB.mma(A16, B, el, form.atype, form.btype, form.dtype, model, c_split=_acc_split(form.n, cb), **kw)
            return D.view(np.uint32)
        src = _acc_positions(form.n, cb)
        regs = np.ascontiguousarray(c_regs, np.uint32)
        el = regs.view(L.NARROW[cb]).reshape(regs.shape[:-2] + (-1,))
        D = MB.mma(A16, B, el, form.atype, form.btype, form.dtype, model, c_pos=src, **kw)
        return D.view(np.uint32).reshape(D.shape[:-1] + regs.shape[-2:])
    if reg_major:
        return np.ascontiguousarray(np.moveaxis(warp_mma(form, A16, B, np.moveaxis(c_regs, 0, -1), scale_d, scale_a,
                                                         scale_b, reference, b_transposed, b_index), -1, 0))
    if b_transposed:
        B = np.swapaxes(B, -1, -2)
    C = L.unpack(c_regs, amap, cb, (16, form.n))
    C = np.where(np.asarray(scale_d, bool)[..., None, None], C, np.uint64(0))
    if form.dtype == "s32":
        D = M.mma_int(A16, B, C, form.atype, form.btype, form.satfinite)
    else:
        model = M.hopper_model("wgmma", form.atype, form.dtype, form.k)
        A16, B = _negate(A16, form.atype, scale_a), _negate(B, form.btype, scale_b)
        if reference:
            lead = np.broadcast_shapes(A16.shape[:-2], B.shape[:-2], C.shape[:-2])
            k, n = B.shape[-2:]
            D = np.stack([M.mma(x, y, z, form.atype, form.btype, form.dtype, model) for x, y, z in
                          zip(np.broadcast_to(A16, lead + (16, k)).reshape(-1, 16, k),
                              np.broadcast_to(B, lead + (k, n)).reshape(-1, k, n),
                              C.reshape(-1, 16, n))]).reshape(C.shape)
        else:
            D = MB.mma(A16, B, C, form.atype, form.btype, form.dtype, model)
    return L.pack(D, amap, cb)


def warp_mma_acc(form: WgmmaForm, A16: np.ndarray, Bt: np.ndarray, b_index: np.ndarray, acc: np.ndarray,
                 warps: np.ndarray, scale_d: np.ndarray, scale_a: int = 1, scale_b: int = 1) -> None:
    """`warp_mma` (B transposed, register-major) of the warps `warps` of a batch, D written over
    C in place: `acc` (nacc, L) uint32 holds the accumulator registers of every lane of the
    batch, a row per register (L lanes, warp w's at 32 w .. 32 w + 31), and only the rows' lanes
    of `warps` are read and written. Floating-point accumulators only (s32: `warp_mma`)."""
    cpos, tpos, plan, narrow = acc_places(form, acc.shape[1], warps)
    MB.mma_acc(A16, Bt, b_index, acc.reshape(-1).view(narrow), cpos, tpos, ~np.asarray(scale_d, bool), plan,
               negate_a=scale_a == -1, negate_b=scale_b == -1)


def acc_places(form: WgmmaForm, lanes: int, warps: np.ndarray) -> tuple:
    """What `warp_mma_acc` passes `mma_batch.mma_acc` besides the operands, for accumulator rows of
    `lanes` lanes and the batch's warps `warps`: (each element's place from its warp's first,
    each warp's first, the kernel plan, the accumulator's element type); a caller running the same
    warps again may keep it."""
    cb = ACC_BITS[form.dtype]
    epr = 32 // cb                                       # accumulator elements per 32-bit register
    return (_acc_offsets(form.n, cb, lanes), np.asarray(warps, np.int64) * (32 * epr), _kernel_plan(form),
            L.NARROW[cb])


@lru_cache(maxsize=None)
def _kernel_plan(form: WgmmaForm) -> tuple:
    """`mma_batch.kernel_plan` for this form's types and fitted model (found once per form)."""
    return MB.kernel_plan(form.atype, form.btype, form.dtype, M.hopper_model("wgmma", form.atype, form.dtype, form.k),
                          form.k)


@lru_cache(maxsize=64)
def _acc_offsets(n: int, cb: int, lanes: int) -> np.ndarray:
    """Element (i, j) of a warp's accumulator in `warp_mma_acc`'s flat array, counted from the
    warp's first element: register reg[i n + j]'s row of `lanes` lanes (32 / cb elements each),
    then col[i n + j] (`_acc_split`); read-only, per shape."""
    reg, col = _acc_split(n, cb)
    x = reg * (lanes * (32 // cb)) + col
    x.flags.writeable = False
    return x


def a_from_rows(form: WgmmaForm, rows: np.ndarray, warps: np.ndarray) -> np.ndarray:
    """The rows (len(warps), 16, K) of A, as element bit patterns of the format's width, of each
    warp in `warps` from its four A registers: `rows` (4, lanes) uint32 holds them a row per
    register over consecutive warps' lanes, warp w's at 32 w .. 32 w + 31 (`a_from_registers`)."""
    return a_from_registers(form, list(np.ascontiguousarray(rows, np.uint32)), warps)


def a_from_registers(form: WgmmaForm, regs: list, warps: np.ndarray) -> np.ndarray:
    """`a_from_rows` from the four A registers as they are held (`regs`: four contiguous uint32
    arrays over the same consecutive warps' lanes): one compiled gather (`_a_gather`) through the
    place of each element (`_a_sources`), with no copy of the registers into rows first."""
    reg, lane, shift, mask, out = a_gather_plan(form, len(warps))
    _a_gather(regs[0], regs[1], regs[2], regs[3], np.asarray(warps, np.int64), reg, lane, shift, mask,
              out.reshape(len(warps), -1))
    return out


def a_gather_plan(form: WgmmaForm, nwarps: int) -> tuple:
    """What `_a_gather` takes for `form` besides the registers and the warps: each element's
    register, lane and bit offset (`_a_sources`), the element mask, and A's array (nwarps, 16, k)
    of the narrow type to gather into (also `gpusim.functional.wgmma_operands.mma_registers`')."""
    bits = ELEM_BITS[form.atype]
    reg, lane, shift = _a_sources(form.k, bits)
    return (reg, lane, shift, np.uint32((1 << bits) - 1 if bits < 32 else 0xFFFFFFFF),
            np.empty((nwarps, 16, form.k), L.NARROW[bits]))


@lru_cache(maxsize=None)
def _a_sources(k: int, bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each element (row, col) of a warp's A (16 x k, row-major) is held when A comes from
    registers (`_a_map`): its register (0..3), lane and bit offset in the register; read-only."""
    fmap = _a_map(k, bits)                               # (32 lanes, 4 registers, elements a register, 2)
    _, src = L._index(fmap, (16, k))
    if src is None:                                      # pragma: no cover - the layout holds each element once
        raise ValueError(f"wgmma A from registers (k{k}, {bits}-bit) does not hold each element once")
    per = fmap.shape[2]
    lane, rest = np.divmod(src, 4 * per)
    reg, elem = np.divmod(rest, per)
    out = (reg.astype(np.int64), lane.astype(np.int64), (elem * bits).astype(np.uint32))
    for a in out:
        a.flags.writeable = False
    return out


@njit(cache=True, nogil=True)
def _a_gather(r0, r1, r2, r3, warps, reg, lane, shift, mask, out):
    """out[t, p] = element p of warp warps[t]'s A: bits shift[p].. of register reg[p] (r0..r3) of
    its lane lane[p]."""
    for t in range(len(warps)):
        l0 = warps[t] * 32
        for p in range(len(reg)):
            q, i = reg[p], l0 + lane[p]
            v = r0[i] if q == 0 else r1[i] if q == 1 else r2[i] if q == 2 else r3[i]
            out[t, p] = (v >> shift[p]) & mask


ENTRIES = [
    OpSpec("wgmma", "tensor", _bind_wgmma,
           "warpgroup matrix multiply-accumulate from shared-memory descriptors, and its fence/commit/wait"),
]
