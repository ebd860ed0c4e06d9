"""Warp-wide tensor-core instructions: `mma.sync.aligned`, `ldmatrix` and `stmatrix`.

What it models (the meaning; `gpusim.functional.tensor_ops` carries them out over warps):
- `mma.sync.aligned.{m16n8k4,m16n8k8,m16n8k16,m16n8k32}.row.col` with f16, bf16, tf32, e4m3/e5m2
  (A and B may differ), s8/u8 inputs, f16/f32/s32 accumulators (`.satfinite` for s32): the 32 lanes' A, B, C registers are gathered into matrices by
  `isa.semantics.mma_layout.frag_map`, D is computed by the block-FMA model of
  `isa.semantics.mma_numerics` for floats (`model_for`; evaluated for every warp of the step at
  once by `isa.semantics.mma_batch`, the scalar `mma_numerics.mma` being its reference), exact
  modular or saturating sums for integers, and scattered back into the D registers;
- `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16` and `stmatrix` (same shape, sm_90):
  lanes 8j..8j+7 give the row addresses of matrix j; lane l's register j holds (or stores)
  elements (l >> 2, 2 (l & 3) + h) of matrix j, or with `.trans` (2 (l & 3) + h, l >> 2)
  (`ldsm_map`), as the PTX ISA documents and the H200 probe confirmed (`ldsm:*` in
  data/measurements/tensor_wgmma_h200.npz).

Numerics: `model_for` gives the block-FMA parameters per (input, accumulator) type, the model
fitted to the H200 probe data (`mma_numerics.hopper_model`, docs/tensor_numerics.md); FP8
`mma.sync` is ptxas's sm_90 emulation (two f16 HMMAs over interleaved k, then an RN add of C).
Every recorded H200 result is reproduced bit for bit (tests/functional/test_mma_sync.py,
benchmarks/results/tensor_bitexact.json).

Not modelled (refused with the instruction's name and line): `.row.row`/`.col.col` layouts
(the PTX ISA allows only `.row.col` for these shapes), `mma.sp`, `m8n8k4` (f64 DMMA: its
operands are f64 registers; and Volta's f16 form), sub-byte
(s4/u4/b1) types, block-scaled forms, `ldmatrix` `.m16n16`/`.b8` (sm_100) forms, `movmatrix`.

Sources: PTX ISA 9.0, 9.7.14.5 "Matrix fragments for mma.m16n8k*", 9.7.14.5.15 "ldmatrix",
9.7.14.5.16 "stmatrix".
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound, OpSpec
from isa.program import Instruction
from isa.semantics import mma_layout as L
from isa.semantics import mma_batch as MB
from isa.semantics import mma_numerics as M

ELEM_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8,
             "s32": 32, "f64": 64}
#: (shape, input types allowed) of mma.sync.aligned .row.col
MMA_SHAPES = {
    "m16n8k16": {"f16", "bf16", "s8", "u8"}, "m16n8k8": {"f16", "bf16", "tf32"},
    "m16n8k4": {"tf32"}, "m16n8k32": {"s8", "u8", "e4m3", "e5m2"}, "m8n8k4": {"f64"},
}
_FP8 = ("e4m3", "e5m2")


@dataclass(frozen=True)
class MmaForm:
    shape: str
    atype: str
    btype: str
    ctype: str              # C and D (the PTX ISA requires them equal for these shapes)
    satfinite: bool = False

    @property
    def mnk(self) -> tuple[int, int, int]:
        return L.SHAPES[self.shape]

    def nregs(self) -> tuple[int, int, int]:
        """32-bit registers per lane of A, B, C/D."""
        m, n, k = self.mnk
        ab, cb = ELEM_BITS[self.atype], ELEM_BITS[self.ctype]
        return m * k * ab // 1024, k * n * ab // 1024, m * n * cb // 1024


def _refuse(instr: Instruction, why: str):
    raise UnsupportedInstruction(instr.mnemonic, ptx_line=instr.ptx_line, reason=why)


def parse_mma(instr: Instruction) -> MmaForm:
    """The form of an `mma.sync.aligned...` instruction, or UnsupportedInstruction."""
    s = instr.suffixes
    if "sp" in s or "sp::ordered_metadata" in s:
        _refuse(instr, "sparse mma.sp is not implemented")
    if s[:2] != ("sync", "aligned"):
        _refuse(instr, "mma needs .sync.aligned")
    shape = s[2] if len(s) > 2 else ""
    if shape not in MMA_SHAPES or shape == "m8n8k4":
        _refuse(instr, f"mma shape .{shape} is not implemented (f64 m8n8k4 not yet)")
    rest = list(s[3:])
    if rest[:2] != ["row", "col"]:
        _refuse(instr, "only the .row.col layout is implemented")
    rest = rest[2:]
    sat = "satfinite" in rest
    rest = [r for r in rest if r != "satfinite"]
    if len(rest) != 4:
        _refuse(instr, "expected .dtype.atype.btype.ctype")
    d, a, b, c = rest
    if d != c:
        _refuse(instr, f"D type .{d} differs from C type .{c}")
    ok = MMA_SHAPES[shape]
    if a not in ok or b not in ok or (a in _FP8) != (b in _FP8) or (a in ("s8", "u8")) != (b in ("s8", "u8")) \
            or (a not in _FP8 + ("s8", "u8") and a != b):
        _refuse(instr, f"input types .{a}.{b} with shape .{shape}")
    want_c = {"s8": ("s32",), "u8": ("s32",), "tf32": ("f32",), "bf16": ("f32",), "f64": ("f64",)}.get(a, ("f16", "f32"))
    if c not in want_c:
        _refuse(instr, f"accumulator .{c} with inputs .{a}")
    if sat and c != "s32":
        _refuse(instr, ".satfinite is implemented for s32 accumulators only")
    return MmaForm(shape, a, b, c, sat)


def model_for(form: MmaForm) -> M.BlockFma:
    """Block-FMA parameters of a floating-point mma.sync form: the model fitted to the H100/H200
    probe data (`mma_numerics.hopper_model`, docs/tensor_numerics.md); fp8 runs as ptxas emits
    it on sm_90, two f16 HMMAs over bytes 0-1 then 2-3 of each register."""
    return M.hopper_model("mma", form.atype, form.ctype, form.mnk[2])


@lru_cache(maxsize=None)
def _frag_maps(shape: str, ab: int, cb: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """frag_map of A, B and C/D (read-only: shared by every call)."""
    maps = L.frag_map(shape, "a", ab), L.frag_map(shape, "b", ab), L.frag_map(shape, "c", cb)
    for m in maps:
        m.flags.writeable = False
    return maps


def mma_sync(form: MmaForm, a: np.ndarray, b: np.ndarray, c: np.ndarray, reference: bool = False) -> np.ndarray:
    """D registers (..., 32, nD) uint32 from A, B, C registers (..., 32, n) uint32 of any number
    of warps (the leading axes) at once: `mma_batch.mma`, or with `reference` the scalar
    `mma_numerics.mma` element by element (the definition the batch is tested against)."""
    m, n, k = form.mnk
    ab, cb = ELEM_BITS[form.atype], ELEM_BITS[form.ctype]
    amap, bmap, cmap = _frag_maps(form.shape, ab, cb)
    A = L.unpack(a, amap, ab, (m, k))
    B = L.unpack(b, bmap, ab, (k, n))
    if form.ctype in ("f32", "f16") and not reference:  # C read and D written in register order
        regs = np.ascontiguousarray(c, np.uint32)
        el = regs.view(L.NARROW[cb]).reshape(regs.shape[:-2] + (-1,))
        D = MB.mma(A, B, el, form.atype, form.btype, form.ctype, model_for(form),
                   c_pos=L.fragment_positions(cmap, (m, n)))
        return D.view(np.uint32).reshape(D.shape[:-1] + regs.shape[-2:])
    C = L.unpack(c, cmap, cb, (m, n))
    if form.ctype == "s32":
        D = M.mma_int(A, B, C, form.atype, form.btype, form.satfinite)
    elif reference:
        D = np.stack([M.mma(x, y, z, form.atype, form.btype, form.ctype, model_for(form)) for x, y, z in
                      zip(A.reshape(-1, m, k), B.reshape(-1, k, n), C.reshape(-1, m, n))]).reshape(C.shape)
    else:
        D = MB.mma(A, B, C, form.atype, form.btype, form.ctype, model_for(form))
    return L.pack(D, cmap, cb)


def _bind_mma(instr: Instruction) -> Bound:
    form = parse_mma(instr)
    na, nb, nc = form.nregs()
    return Bound(("b32",) * nc, ("b32",) * (na + nb + nc), None, "tensor")


# -------------------------------------------------------------------- ldmatrix / stmatrix
@dataclass(frozen=True)
class LdsmForm:
    nmat: int
    trans: bool
    store: bool


def parse_ldsm(instr: Instruction) -> LdsmForm:
    s = instr.suffixes
    if s[:3] != ("sync", "aligned", "m8n8"):
        _refuse(instr, "only .sync.aligned.m8n8 is implemented")
    rest = [x for x in s[3:] if x not in ("shared", "shared::cta")]
    nmat = next((int(x[1]) for x in rest if x in ("x1", "x2", "x4")), 0)
    if not nmat:
        _refuse(instr, "needs .x1, .x2 or .x4")
    trans = "trans" in rest
    if sorted(rest) != sorted([f"x{nmat}", "b16"] + (["trans"] if trans else [])):
        _refuse(instr, "only .shared .b16 forms are implemented")
    if instr.space is None and "shared::cta" not in s:
        _refuse(instr, "the address must be in .shared")
    return LdsmForm(nmat, trans, instr.opcode == "stmatrix")


def ldsm_map(nmat: int, trans: bool) -> tuple[np.ndarray, np.ndarray]:
    """(addr_lane, col) arrays (32 lanes, nmat regs, 2 halves): lane l's register j half h is
    the b16 at `addr[addr_lane] + 2 col` (module docstring)."""
    lane = np.arange(32)[:, None, None]
    j = np.arange(nmat)[None, :, None]
    h = np.arange(2)[None, None, :]
    if trans:
        src, col = 8 * j + 2 * (lane & 3) + h, (lane >> 2) + 0 * h
    else:
        src, col = 8 * j + (lane >> 2) + 0 * h, 2 * (lane & 3) + h
    shape = (32, nmat, 2)
    return np.broadcast_to(src, shape).copy(), np.broadcast_to(col, shape).copy()


def _bind_ldsm(instr: Instruction) -> Bound:
    f = parse_ldsm(instr)
    if f.store:
        return Bound((), ("u32",) + ("b32",) * f.nmat, None, "ldst")
    return Bound(("b32",) * f.nmat, ("u32",), None, "ldst")


ENTRIES = [
    OpSpec("mma", "tensor", _bind_mma, "warp-wide matrix multiply-accumulate on the tensor cores"),
    OpSpec("ldmatrix", "tensor", _bind_ldsm, "warp-wide load of 8x8 b16 matrices from shared memory"),
    OpSpec("stmatrix", "tensor", _bind_ldsm, "warp-wide store of 8x8 b16 matrices to shared memory"),
]
