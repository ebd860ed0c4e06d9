"""Warp-wide matrix instructions of CUDA C++'s `nvcuda::wmma` API: `wmma.load`, `wmma.store`,
`wmma.mma` (what NVRTC emits for `load_matrix_sync`, `store_matrix_sync`, `mma_sync`).

What it models (the meaning; `gpusim.functional.wmma_ops` carries them out over warps):
- `wmma.load.{a,b,c}.sync.aligned.{row,col}.shape[.global|.shared[::cta]].type r, [p] [, stride]`
  and `wmma.store.d...` for the shapes m16n16k16, m32n8k16, m8n32k16 (f16, bf16, s8/u8 inputs)
  and m16n16k8 (tf32); accumulators f16, f32, s32. Element (row, col) of the operand's matrix
  (A: M x K, B: K x N, C/D: M x N) is at byte `p + (row * stride + col) * size` (`.row`) or
  `p + (col * stride + row) * size` (`.col`); `stride` is in elements, by default the matrix's
  own leading dimension. The CUDA C++ Programming Guide requires `p` 256-bit aligned and the
  stride a multiple of 16 bytes; gpusim refuses an address that is not 16-byte aligned or a
  stride that is not a multiple of 16 bytes (`check_stride`), naming the thread.
- The fragment layout: the PTX ISA leaves which lane holds which element unspecified (only the
  load/mma/store contract is defined). gpusim uses the layout ptxas gives on sm_90
  (`cuobjdump -sass` of an m16n16k16 f16 kernel: four 32-bit `LDG`s per lane for A, two
  `HMMA.16816` on the halves of B, four `STG.64`s for D), which is `mma.m16n8kK`'s
  (`mma_layout.frag_map`): A is a sequence of 8-row x 16-byte core blocks, per 16-row tile
  k-block by k-block, rows 0-7 then 8-15, lane l holding row l >> 2, elements 4 (l & 3) / size
  onward; B core blocks of 16 bytes of K by 8 columns, per 8-column tile; C/D 8 x 8 blocks, per
  8-column tile, rows 0-7 then 8-15 (32-bit: two registers per block, 16-bit: one). The f16
  A and B fragments have eight `.f16x2` registers in PTX where the layout needs four (or two):
  the rest hold copies (register r = register r mod the unique count), which element-wise
  fragment code keeps equal.
- `wmma.mma.sync.aligned.alayout.blayout.shape.dtype.ctype` (f16 inputs) and
  `...dtype.atype.btype.ctype` (bf16, tf32, s8/u8, `.satfinite` for s32): D = A B + C per
  element with the numerics of the instructions ptxas emits (`matmul`: one HMMA.16816 per
  16 x 8 block of D for f16/bf16, two chained HMMA.1684 for tf32, IMMA.16816 for s8/u8;
  `mma_numerics.hopper_model("mma", ...)`); the layout qualifiers only say how the fragments
  were loaded, which the fragments no longer depend on. m8n32k16 is computed as ptxas does,
  as the m32n8k16 product D^T = B^T A^T, and its fragments are those of m32n8k16 transposed.

Not modelled (refused with the instruction's name and line): a `.f16` D with a `.f32` C (or
the reverse), sub-byte (s4/u4/b1) and f64 (m8n8k4) wmma forms.

Sources: PTX ISA 9.0, 9.7.13 "Warp Level Matrix Multiply-Accumulate Instructions" (wmma.load,
wmma.store, wmma.mma; fragments "unspecified"); CUDA C++ Programming Guide, "Warp Matrix
Functions" (alignment and ldm rules).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound, OpSpec
from isa.program import Instruction
from isa.semantics import mma_batch as MB
from isa.semantics import mma_numerics as M

#: (M, N, K) of the wmma shapes, and the input types each allows
SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16), "m16n16k8": (16, 16, 8)}
INPUTS = {"m16n16k8": ("tf32",)}
_INPUTS_K16 = ("f16", "bf16", "s8", "u8")
ELEM_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "s8": 8, "u8": 8, "f32": 32, "s32": 32}
#: registers per lane PTX declares for the A and B fragments of f16 (always eight .f16x2)
F16_AB_REGS = 8
#: K of the mma.sync instruction ptxas emits per input type (HMMA.16816, HMMA.1684 for tf32,
#: IMMA.16816): a wmma.mma of larger K is a chain of them on the accumulator
HW_K = {"f16": 16, "bf16": 16, "tf32": 4, "s8": 16, "u8": 16}


def _refuse(instr: Instruction, why: str):
    raise UnsupportedInstruction(instr.mnemonic, ptx_line=instr.ptx_line, reason=why)


@dataclass(frozen=True)
class WmmaMemForm:
    """A `wmma.load` / `wmma.store`."""
    store: bool
    frag: str               # 'a', 'b', 'c' (loads) or 'd' (store)
    layout: str             # 'row' or 'col'
    shape: str
    space: str | None       # 'global', 'shared', or None (generic)
    etype: str

    @property
    def dims(self) -> tuple[int, int]:
        """(rows, cols) of the operand's matrix."""
        m, n, k = SHAPES[self.shape]
        return {"a": (m, k), "b": (k, n)}.get(self.frag, (m, n))

    @property
    def esize(self) -> int:
        return ELEM_BITS[self.etype] // 8

    def nregs(self) -> int:
        """32-bit registers per lane in the PTX vector."""
        return ptx_regs(self.shape, self.frag, self.etype)


def ptx_regs(shape: str, frag: str, etype: str) -> int:
    if frag in ("a", "b") and etype == "f16":
        return F16_AB_REGS
    return frag_map(shape, frag, etype).shape[1]


@lru_cache(maxsize=None)
def frag_map(shape: str, frag: str, etype: str) -> np.ndarray:
    """(32 lanes, unique registers, elements per register, 2) int array of the (row, col) each
    element of a lane's fragment holds (module docstring: the layout ptxas uses on sm_90)."""
    if shape == "m8n32k16":                         # ptxas computes D^T = B^T A^T as m32n8k16
        other = {"a": "b", "b": "a"}.get(frag, frag)
        out = np.ascontiguousarray(frag_map("m32n8k16", other, etype)[..., ::-1])
        out.setflags(write=False)
        return out
    m, n, k = SHAPES[shape]
    bits = ELEM_BITS[etype]
    e = 32 // bits
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    regs = []
    if frag == "a":
        kcores = k * bits // 128                    # 16-byte core columns along K
        for mt in range(m // 16):
            for kc in range(kcores):
                for mh in range(2):
                    regs.append([(16 * mt + 8 * mh + g, 4 * e * kc + e * t + h) for h in range(e)])
    elif frag == "b":
        kcores = k * bits // 128
        for nt in range(n // 8):
            for kc in range(kcores):
                regs.append([(4 * e * kc + e * t + h, 8 * nt + g) for h in range(e)])
    else:                                           # c / d: 8 x 8 blocks, two elements per lane
        for nt in range(n // 8):
            for mh in range(m // 8):
                pair = [(8 * mh + g, 8 * nt + 2 * t + i) for i in range(2)]
                if bits == 32:
                    regs += [[pair[0]], [pair[1]]]
                else:
                    regs.append(pair)
    out = np.array([[np.broadcast_arrays(rc[0], rc[1]) for rc in reg] for reg in regs], np.int64)   # (regs, e, 2, 32)
    out = np.ascontiguousarray(np.moveaxis(out, -1, 0))            # (32, regs, e, 2)
    out.setflags(write=False)
    return out


def byte_offsets(form: WmmaMemForm, stride: int) -> np.ndarray:
    """(32, unique regs, elements) byte offset from `p` of each element of each lane."""
    fm = frag_map(form.shape, form.frag, form.etype)
    r, c = fm[..., 0], fm[..., 1]
    idx = r * stride + c if form.layout == "row" else c * stride + r
    return idx * form.esize


def default_stride(form: WmmaMemForm) -> int:
    rows, cols = form.dims
    return cols if form.layout == "row" else rows


def check_stride(form: WmmaMemForm, stride: int) -> str | None:
    """Why `stride` (elements) is not usable, or None."""
    rows, cols = form.dims
    lead = cols if form.layout == "row" else rows
    if stride < lead:
        return f"stride {stride} is less than the {form.layout}-major matrix's {lead} elements per {form.layout}"
    if (stride * form.esize) % 16:
        return f"stride {stride} elements is {stride * form.esize} bytes, not a multiple of 16"
    return None


@dataclass(frozen=True)
class AccessPlan:
    """One memory access of every lane of a fragment move: `elems` (register, element) pairs.
    `transposed` False: the lane's own elements, contiguous in memory (`nbytes` from the first);
    True (a 16-bit register whose two elements lie in different rows of memory): ptxas loads or
    stores the register's 8 x 8 block in memory order, lane l taking 4 bytes at row l >> 2,
    column 2 (l & 3) of the block, and moves the values between lanes with movmatrix
    (`MOVM.16.MT88`); the access starts at `block_origin`'s byte offset plus `lane_offset`."""
    elems: tuple[tuple[int, int], ...]
    nbytes: int
    transposed: bool = False


@lru_cache(maxsize=None)
def access_plans(shape: str, frag: str, etype: str, layout: str) -> tuple[AccessPlan, ...]:
    """The memory accesses one fragment move makes, as ptxas makes them on sm_90 (each a warp-wide
    LDG/STG/LDS/STS): runs of a lane's elements contiguous in memory, at most 16 bytes and aligned
    to their size, in register order; a 16-bit register whose elements are not contiguous (an A
    fragment from a column-major matrix, B from a row-major one) is one transposed 4-byte access
    (`AccessPlan`). Checked against ptxas's SASS for each shape and layout
    (tests/functional/test_wmma.py)."""
    fm = frag_map(shape, frag, etype)[0]            # lane 0 decides: the pattern is the same for every lane
    esize = ELEM_BITS[etype] // 8
    plans: list[AccessPlan] = []
    cur: list[tuple[int, int]] = []
    prev = None

    def flush():
        if cur:
            plans.append(AccessPlan(tuple(cur), len(cur) * esize))

    for r in range(fm.shape[0]):
        lines = [(int(fm[r, h, 0]), int(fm[r, h, 1])) if layout == "row" else (int(fm[r, h, 1]), int(fm[r, h, 0]))
                 for h in range(fm.shape[1])]
        if esize == 2 and lines[0][0] != lines[1][0]:   # a 16-bit pair across two memory rows
            flush()
            cur, prev = [], None
            plans.append(AccessPlan(((r, 0), (r, 1)), 4, True))
            continue
        for h, (line, pos) in enumerate(lines):
            if cur and prev == (line, pos - 1) and 2 * len(cur) * esize <= 16 \
                    and (pos - len(cur)) * esize % (2 * len(cur) * esize) == 0:
                cur.append((r, h))
            else:
                flush()
                cur = [(r, h)]
            prev = (line, pos)
    flush()
    return tuple(plans)


def ldsm_blocks(form: "WmmaMemForm") -> tuple[tuple[int, bool], ...] | None:
    """How ptxas loads the fragment from `.shared` with ldmatrix (LDSM) on sm_90: per unique
    register, (register, transposed): each register is one 8 x 8 block of 16-bit (or 8 x 16 of
    8-bit) elements, 8 rows of 16 bytes in memory, read by ldmatrix (`.trans` for a 16-bit
    register whose two elements lie in different memory rows); registers go 4 to an instruction
    (`.x4`, the rest `.x2`/`.x1`). None where ptxas uses plain LDS instead (stores, tf32, an 8-bit
    fragment whose elements are not contiguous, other state spaces)."""
    if form.store or form.space != "shared" or form.etype not in ("f16", "bf16", "s8", "u8"):
        return None
    plans = access_plans(form.shape, form.frag, form.etype, form.layout)
    if not all(p.transposed or p.nbytes == 4 for p in plans):
        return None
    return tuple((p.elems[0][0], p.transposed) for p in plans)


def ldsm_row_offsets(form: "WmmaMemForm", reg: int, stride: np.ndarray) -> np.ndarray:
    """(..., 8) byte offsets from `p` of the 8 memory rows of register `reg`'s block
    (`ldsm_blocks`), for strides (...,) in elements."""
    fm = frag_map(form.shape, form.frag, form.etype)[:, reg]      # (32, e, 2)
    rows, cols = fm[..., 0], fm[..., 1]
    line0, pos0 = (rows.min(), cols.min()) if form.layout == "row" else (cols.min(), rows.min())
    s = np.asarray(stride, np.int64)[..., None]
    return ((line0 + np.arange(8)) * s + pos0) * form.esize


def transposed_offsets(form: "WmmaMemForm", reg: int, stride: np.ndarray) -> np.ndarray:
    """(lanes,) byte offsets from `p` of a transposed access of register `reg` (`AccessPlan`):
    lane l at row l >> 2, column 2 (l & 3) of the register's 8 x 8 block in memory order;
    `stride` per lane (elements)."""
    fm = frag_map(form.shape, form.frag, form.etype)[:, reg]      # (32, 2, 2)
    rows, cols = fm[..., 0], fm[..., 1]
    line0, pos0 = (rows.min(), cols.min()) if form.layout == "row" else (cols.min(), rows.min())
    lane = np.arange(len(stride)) & 31
    return ((line0 + (lane >> 2)) * stride + pos0 + 2 * (lane & 3)) * form.esize


def parse_mem(instr: Instruction) -> WmmaMemForm:
    """The form of a `wmma.load` / `wmma.store`, or UnsupportedInstruction."""
    s = list(instr.suffixes)
    store = s[:1] == ["store"]
    if len(s) < 7 or s[0] not in ("load", "store") or s[2:4] != ["sync", "aligned"]:
        _refuse(instr, "expected wmma.load.{a,b,c}/wmma.store.d .sync.aligned.layout.shape[.space].type")
    frag, layout, shape = s[1], s[4], s[5]
    rest = s[6:]
    if frag not in (("d",) if store else ("a", "b", "c")):
        _refuse(instr, f"fragment .{frag}")
    if layout not in ("row", "col"):
        _refuse(instr, f"layout .{layout}")
    if shape not in SHAPES:
        _refuse(instr, f"shape .{shape} is not implemented (m16n16k16, m32n8k16, m8n32k16, m16n16k8)")
    space = None
    if rest and rest[0] in ("global", "shared", "shared::cta"):
        space = "shared" if rest[0].startswith("shared") else "global"
        rest = rest[1:]
    if len(rest) != 1:
        _refuse(instr, "expected one element type")
    et = rest[0]
    allowed = (INPUTS.get(shape, _INPUTS_K16) if frag in ("a", "b") else
               (("f32",) if shape == "m16n16k8" else ("f16", "f32", "s32")))
    if et not in allowed:
        _refuse(instr, f"type .{et} with .{frag} of shape .{shape}")
    return WmmaMemForm(store, frag, layout, shape, space, et)


@dataclass(frozen=True)
class WmmaMmaForm:
    shape: str
    atype: str
    btype: str
    ctype: str
    dtype: str
    satfinite: bool = False

    def nregs(self) -> tuple[int, int, int, int]:
        """32-bit registers per lane of D, A, B, C in the PTX vectors."""
        return (ptx_regs(self.shape, "d", self.dtype), ptx_regs(self.shape, "a", self.atype),
                ptx_regs(self.shape, "b", self.btype), ptx_regs(self.shape, "c", self.ctype))


def parse_mma(instr: Instruction) -> WmmaMmaForm:
    s = list(instr.suffixes)
    if s[:3] != ["mma", "sync", "aligned"] or len(s) < 8:
        _refuse(instr, "expected wmma.mma.sync.aligned.alayout.blayout.shape.types")
    if s[3] not in ("row", "col") or s[4] not in ("row", "col"):
        _refuse(instr, "expected .row/.col layouts of A and B")
    shape, rest = s[5], s[6:]
    if shape not in SHAPES:
        _refuse(instr, f"shape .{shape} is not implemented")
    sat = "satfinite" in rest
    rest = [r for r in rest if r != "satfinite"]
    if len(rest) == 2:                              # f16 inputs: .dtype.ctype
        d, c = rest
        a = b = "f16"
    elif len(rest) == 4:
        d, a, b, c = rest
    else:
        _refuse(instr, "expected .dtype.ctype or .dtype.atype.btype.ctype")
    ok = INPUTS.get(shape, _INPUTS_K16)
    if a not in ok or b not in ok or (a in ("s8", "u8")) != (b in ("s8", "u8")) or (a not in ("s8", "u8") and a != b):
        _refuse(instr, f"input types .{a}.{b} with shape .{shape}")
    want = ("s32",) if a in ("s8", "u8") else ("f32",) if a in ("bf16", "tf32") else ("f16", "f32")
    if c not in want or d not in want:
        _refuse(instr, f"accumulators .{d}.{c} with inputs .{a}")
    if c != d:
        _refuse(instr, f"a .{d} D with a .{c} C is not modelled")
    if sat and c != "s32":
        _refuse(instr, ".satfinite is implemented for s32 accumulators only")
    return WmmaMmaForm(shape, a, b, c, d, sat)


def unpack(regs: np.ndarray, shape: str, frag: str, etype: str) -> np.ndarray:
    """A warp's registers (32, PTX regs) uint32 -> the operand's matrix of element bit patterns;
    several warps' (..., 32, PTX regs) -> their matrices (..., rows, columns)."""
    fm = frag_map(shape, frag, etype)
    bits = ELEM_BITS[etype]
    m, n, k = SHAPES[shape]
    dims = {"a": (m, k), "b": (k, n)}.get(frag, (m, n))
    r = np.asarray(regs, np.uint64)[..., :fm.shape[1]]
    sh = np.arange(fm.shape[2], dtype=np.uint64) * np.uint64(bits)
    el = (r[..., None] >> sh) & np.uint64((1 << bits) - 1)
    out = np.zeros(r.shape[:-2] + dims, np.uint64)
    out[..., fm[..., 0], fm[..., 1]] = el
    return out


def pack(mat: np.ndarray, shape: str, frag: str, etype: str) -> np.ndarray:
    """The operand's matrix -> a warp's registers (32, PTX regs) uint32 (copies filled in);
    several warps' matrices (..., rows, columns) -> their registers (..., 32, PTX regs)."""
    fm = frag_map(shape, frag, etype)
    bits = ELEM_BITS[etype]
    el = np.asarray(mat, np.uint64)[..., fm[..., 0], fm[..., 1]]
    sh = np.arange(fm.shape[2], dtype=np.uint64) * np.uint64(bits)
    uniq = np.bitwise_or.reduce(el << sh, axis=-1).astype(np.uint32)
    n = ptx_regs(shape, frag, etype)
    return uniq[..., np.arange(n) % uniq.shape[-1]]


def mma(form: WmmaMmaForm, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """One warp's D registers (32, nD) from its A, B, C registers (module docstring); several
    warps' at once with a leading axis ((..., 32, n) each), each warp's D the same bits."""
    A = unpack(a, form.shape, "a", form.atype)
    B = unpack(b, form.shape, "b", form.btype)
    C = unpack(c, form.shape, "c", form.ctype)
    return pack(matmul(form, A, B, C), form.shape, "d", form.dtype)


def matmul(form: WmmaMmaForm, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """D = A B + C on matrices of bit patterns as the instructions ptxas emits compute it: a
    chain over K in steps of `HW_K` (one step for f16/bf16; two HMMA.1684 for tf32), each step
    the block-FMA model compiled over the whole tile (`mma_batch.mma`, bit for bit the scalar
    `mma_numerics.mma`; tests/isa/test_mma_batch.py)."""
    if form.ctype == "s32":
        return M.mma_int(A, B, C, form.atype, form.btype, form.satfinite)
    hk = HW_K[form.atype]
    model = M.hopper_model("mma", form.atype, form.ctype, hk)
    D = np.asarray(C, np.uint64)
    for k0 in range(0, A.shape[-1], hk):
        D = MB.mma(A[..., k0:k0 + hk], B[..., k0:k0 + hk, :], D, form.atype, form.btype, form.ctype, model)
    return D


def _bind(instr: Instruction) -> Bound:
    op = instr.suffixes[0] if instr.suffixes else ""
    if op == "mma":
        f = parse_mma(instr)
        nd, na, nb, nc = f.nregs()
        return Bound(("b32",) * nd, ("b32",) * (na + nb + nc), None, "tensor")
    f = parse_mem(instr)
    n = f.nregs()
    stride = ("u32",) if len(instr.operands) > 2 else ()
    if f.store:
        return Bound((), ("u64",) + ("b32",) * n + stride, None, "ldst")
    return Bound(("b32",) * n, ("u64",) + stride, None, "ldst")


ENTRIES = [
    OpSpec("wmma", "tensor", _bind, "warp-wide matrix load/store/multiply-accumulate of CUDA C++'s wmma API"),
]
