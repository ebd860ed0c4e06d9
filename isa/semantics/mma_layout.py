"""Where the elements of a tensor-core operand live: `mma.sync` register fragments per lane,
`wgmma` accumulator and register-A fragments per warpgroup thread, and `wgmma`'s shared-memory
matrix descriptors with their canonical layouts and swizzles.

What it models:
- `frag_map(shape, operand, bits)`: for `mma.sync.aligned.m16n8kK` (and `m8n8k4.f64`), an
  int array (32 lanes, registers, elements per register, 2) of the (row, col) each element
  holds; element e of a 32-bit register occupies bits [e*bits, (e+1)*bits) (lower index in the
  lower bits, as `.f16x2` packs). A is M x K ("row"), B is K x N ("col"), C/D is M x N.
  With g = lane >> 2 and t = lane & 3 and e = 32 / bits elements per register:
  A: row = g + 8 (r & 1), col = t e + h + (K/2) (r >> 1) (for the two-register k-halves r>>1 is 0);
  B: row = t e + h + (K/2) r, col = g; C/D (32-bit): row = g + 8 (r >> 1), col = 2 t + (r & 1),
  16-bit C/D pack the 32-bit element order in pairs.
- `wgmma_acc_map(n, bits)`: (128 threads, registers, elements, 2) for `wgmma.m64nNk*`'s D/C:
  warp w of the warpgroup holds rows 16 w .. 16 w + 15 in the C/D pattern above, repeated for
  each 8 columns (element i: row 16 w + g + 8 ((i >> 1) & 1), col 8 (i >> 2) + 2 t + (i & 1)).
- `wgmma_a_regs_map(k, bits)`: A from registers: warp w holds rows 16 w.. as `mma.m16n8kK`'s A.
- `smem_offsets(rows, k, bits, major, swizzle, lbo, sbo)`: byte offset in shared memory of
  every element of a `wgmma` operand held in a canonical layout (the operand as rows = M or N
  by K; `major` "k" for K-major, "mn" for MN-major), and `make_desc` the 64-bit descriptor
  (start address >> 4 in bits 0-13, LBO >> 4 in 16-29, SBO >> 4 in 32-45, swizzle in 62-63:
  0 none, 1 128B, 2 64B, 3 32B). Swizzles XOR bits [4, 4 + log2(width/16)) of the byte address
  with bits [7, ...): the 16-byte chunk index within a row of `width` bytes with the row index
  within the 8-row atom. Which descriptor field strides which direction for the un-swizzled and
  MN-major layouts is what `validate/semantics/tensor_probe.py` checks on the GPU among the
  `DESC_CONVENTIONS` candidates; the recorded winner is in the probe's JSON.

Not modelled: sparse `mma.sp`, `m8n8k4` f16 (Volta quad-pair layout), sub-byte types (s4, b1).
`ldmatrix`/`stmatrix` lane-to-row maps live in `isa/semantics/tensor.py` (`ldsm_map`).

Sources: PTX ISA 9.0, 9.7.14.5 "Matrix fragments for mma.m16n8k*" (figures per type),
9.7.15.5 "Register fragments and shared memory matrix layouts" for wgmma (core matrices of
8 rows x 16 bytes, matrix-descriptor format, swizzling modes).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

# -------------------------------------------------------------------- mma.sync fragments
#: (M, N, K) of the mma.sync shapes this module knows
SHAPES = {"m16n8k16": (16, 8, 16), "m16n8k8": (16, 8, 8), "m16n8k32": (16, 8, 32),
          "m16n8k4": (16, 8, 4), "m8n8k4": (8, 8, 4)}


def frag_map(shape: str, operand: str, bits: int) -> np.ndarray:
    """(32, regs, elems_per_reg, 2) int array of (row, col) held by each lane's elements.

    `bits` is the element width (8, 16, 32; 64 for the f64 shape, where one element spans two
    32-bit registers and the array has elems_per_reg 1 with the register pair listed once).
    """
    m, n, k = SHAPES[shape]
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    if shape == "m8n8k4":                       # f64: A (g, t), B (t, g), C/D (g, 2t + i)
        if operand == "a":
            rc = np.stack([g, t], -1)[:, None, None, :]
        elif operand == "b":
            rc = np.stack([t, g], -1)[:, None, None, :]
        else:
            rc = np.stack([np.stack([g, 2 * t + i], -1) for i in range(2)], 1)[:, :, None, :]
        return rc.astype(np.int64)
    e = 32 // bits
    if operand == "a":
        nreg = m * k // (32 * e)
        out = np.zeros((32, nreg, e, 2), np.int64)
        for r in range(nreg):
            for h in range(e):
                out[:, r, h, 0] = g + 8 * (r & 1)
                out[:, r, h, 1] = t * e + h + (k // 2) * (r >> 1)
        return out
    if operand == "b":
        nreg = k * n // (32 * e)
        out = np.zeros((32, nreg, e, 2), np.int64)
        for r in range(nreg):
            for h in range(e):
                out[:, r, h, 0] = t * e + h + (k // 2) * r
                out[:, r, h, 1] = g
        return out
    # c / d: 32-bit element i at row g + 8 (i >> 1), col 2t + (i & 1); 16-bit packs pairs
    nel = m * n // 32
    out = np.zeros((32, nel * bits // 32, e, 2), np.int64)
    for i in range(nel):
        out[:, i // e, i % e, 0] = g + 8 * (i >> 1)
        out[:, i // e, i % e, 1] = 2 * t + (i & 1)
    return out


def wgmma_acc_map(n: int, bits: int) -> np.ndarray:
    """(128, regs, elems_per_reg, 2) (row, col) of `wgmma.m64nN` accumulator elements."""
    tid = np.arange(128)
    w, g, t = tid >> 5, (tid & 31) >> 2, tid & 3
    e = 32 // bits
    nel = n // 2                                 # elements per thread: 64 N / 128
    out = np.zeros((128, nel // e, e, 2), np.int64)
    for i in range(nel):
        out[:, i // e, i % e, 0] = 16 * w + g + 8 * ((i >> 1) & 1)
        out[:, i // e, i % e, 1] = 8 * (i >> 2) + 2 * t + (i & 1)
    return out


def wgmma_a_regs_map(k: int, bits: int) -> np.ndarray:
    """(128, 4, elems_per_reg, 2) (row, col) of `wgmma`'s A held in registers (m64 x k)."""
    shape = {16: "m16n8k16", 8: "m16n8k8", 32: "m16n8k32"}[k]
    one = frag_map(shape, "a", bits)             # (32, 4, e, 2) rows 0..15
    out = np.concatenate([one + np.array([16 * w, 0]) for w in range(4)], 0)
    return out


NARROW = {8: np.uint8, 16: np.uint16, 32: np.uint32}


@lru_cache(maxsize=256)
def _flat(key: bytes, fshape: tuple, shape: tuple) -> tuple[np.ndarray, np.ndarray | None]:
    """(row-major matrix index of each (thread, reg, elem) of a fragment map, and its inverse:
    the fragment position of each matrix element, or None unless every element is held once)."""
    fmap = np.frombuffer(key, np.int64).reshape(fshape)
    flat = (fmap[..., 0] * shape[1] + fmap[..., 1]).reshape(-1)
    src = np.full(shape[0] * shape[1], -1, np.int64)
    src[flat] = np.arange(len(flat))
    flat.flags.writeable = src.flags.writeable = False
    return flat, (src if len(flat) == len(src) and (src >= 0).all() else None)


def fragment_positions(fmap: np.ndarray, shape: tuple) -> np.ndarray:
    """Position of each matrix element (row-major) among a fragment's elements in register
    order (the registers viewed as the elements' unsigned type, `NARROW`), for a map that holds
    every element once (read-only)."""
    src = _index(fmap, shape)[1]
    if src is None:
        raise ValueError("the fragment map does not hold every element once")
    return src


def _index(fmap: np.ndarray, shape: tuple) -> tuple[np.ndarray, np.ndarray | None]:
    return _flat(np.ascontiguousarray(fmap, np.int64).tobytes(), fmap.shape, tuple(shape))


def pack(mat_bits: np.ndarray, fmap: np.ndarray, bits: int) -> np.ndarray:
    """Matrix of element bit patterns (..., rows, cols) -> registers (..., threads, regs) uint32.

    For 64-bit elements the result has two uint32 registers per element (low word first)."""
    m = np.asarray(mat_bits)
    if bits in NARROW and np.little_endian:      # elements in register order, bytes viewed as words
        flat, _ = _index(fmap, m.shape[-2:])
        el = np.ascontiguousarray(m.reshape(m.shape[:-2] + (-1,))[..., flat], NARROW[bits])
        return el.view(np.uint32).reshape(m.shape[:-2] + fmap.shape[:2])
    m = m.astype(np.uint64)
    el = m[..., fmap[..., 0], fmap[..., 1]]       # (..., threads, regs, e)
    if bits == 64:
        lo, hi = el[..., 0] & 0xFFFFFFFF, el[..., 0] >> 32
        return np.stack([lo, hi], -1).reshape(*el.shape[:-2], -1).astype(np.uint32)
    sh = (np.arange(el.shape[-1], dtype=np.uint64) * bits)
    return np.bitwise_or.reduce(el << sh, axis=-1).astype(np.uint32)


def unpack(regs: np.ndarray, fmap: np.ndarray, bits: int, shape: tuple[int, int]) -> np.ndarray:
    """Registers (..., threads, regs) -> matrix (..., rows, cols) of uint64 bit patterns."""
    lead = np.shape(regs)[:-2]
    if bits in NARROW and np.little_endian:
        _, src = _index(fmap, shape)
        if src is not None:                       # every element held once: one gather
            el = np.ascontiguousarray(regs, np.uint32).view(NARROW[bits]).reshape(lead + (-1,))
            return el[..., src].reshape(lead + tuple(shape)).astype(np.uint64)
    r = np.asarray(regs).astype(np.uint64)
    if bits == 64:
        r2 = r.reshape(*r.shape[:-1], -1, 2)
        el = (r2[..., 0] | (r2[..., 1] << 32))[..., None]
    else:
        mask = np.uint64((1 << bits) - 1)
        sh = np.arange(fmap.shape[2], dtype=np.uint64) * bits
        el = (r[..., None] >> sh) & mask
    out = np.zeros(lead + tuple(shape), np.uint64)
    out[..., fmap[..., 0], fmap[..., 1]] = el
    return out


# -------------------------------------------------------------------- wgmma shared memory
SWIZZLE_CODE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
SWIZZLE_WIDTH = {"none": 16, "128B": 128, "64B": 64, "32B": 32}

#: candidate meanings of (LBO, SBO) that the GPU probe decides between: for each (major,
#: swizzle kind) which field strides the K direction and which the M/N direction between
#: core matrices (un-swizzled) or 8-row atoms / 128-byte column groups (swizzled)
DESC_CONVENTIONS = ("lbo_k", "lbo_mn")


def swizzle_addr(addr: np.ndarray, swizzle: str) -> np.ndarray:
    """Apply a wgmma/TMA shared-memory swizzle to byte addresses (1024-byte aligned atoms)."""
    w = SWIZZLE_WIDTH[swizzle]
    if swizzle == "none":
        return addr
    nbits = {128: 3, 64: 2, 32: 1}[w]
    mask = (1 << nbits) - 1
    return addr ^ (((addr >> 7) & mask) << 4)


def smem_offsets(rows: int, k: int, bits: int, major: str, swizzle: str,
                 convention: str = "lbo_k") -> tuple[np.ndarray, int, int]:
    """Byte offsets (rows, k) of a canonical-layout wgmma operand, and its (LBO, SBO) in bytes.

    rows is M (for A) or N (for B); the operand is addressed as X[row][k] (B is given as B^T).
    The layout is compact: core matrices/atoms packed in order, the smallest strides first.
    """
    esz = bits // 8
    r = np.arange(rows)[:, None]
    kk = np.arange(k)[None, :]
    w = SWIZZLE_WIDTH[swizzle]
    if major == "k":
        if swizzle == "none":
            # core matrix: 8 rows x 16 B (16/esz k-elements), 128 B contiguous
            kblocks = k * esz // 16
            k_stride, mn_stride = 128, 128 * kblocks
            off = (r % 8) * 16 + (kk * esz) % 16 + ((kk * esz) // 16) * k_stride + (r // 8) * mn_stride
        else:
            # rows of `w` bytes holding the whole K of one instruction (32 bytes), 8-row
            # atoms of 8 w bytes packed along M/N
            atom = 8 * w
            k_stride, mn_stride = atom * max(1, rows // 8), atom
            off = (r % 8) * w + (kk * esz) % w + ((kk * esz) // w) * k_stride + (r // 8) * mn_stride
    else:   # MN-major: rows contiguous within 16-byte (none) or w-byte groups
        if swizzle == "none":
            mblocks = rows * esz // 16
            mn_stride, k_stride = 128, 128 * max(1, mblocks)
            off = ((kk % 8) * 16 + (r * esz) % 16 + ((r * esz) // 16) * mn_stride
                   + (kk // 8) * k_stride)
        else:
            mcols = max(1, rows * esz // w)
            atom = 8 * w
            mn_stride, k_stride = atom, atom * mcols
            off = ((kk % 8) * w + (r * esz) % w + ((r * esz) // w) * mn_stride
                   + (kk // 8) * k_stride)
    off = swizzle_addr(off.astype(np.int64), swizzle)
    if convention == "lbo_k":
        lbo, sbo = k_stride, mn_stride
    else:
        lbo, sbo = mn_stride, k_stride
    if major == "k" and swizzle != "none":
        lbo = 16 if convention == "lbo_k" else lbo   # ignored by K-major swizzled layouts
    return off, int(lbo), int(sbo)


def operand_bytes(rows: int, k: int, bits: int) -> int:
    """Bytes the compact canonical layout of a rows x k operand spans (before alignment)."""
    return rows * k * bits // 8


def make_desc(start_bytes: int, lbo_bytes: int, sbo_bytes: int, swizzle: str) -> int:
    """The 64-bit wgmma shared-memory matrix descriptor (start relative to the smem window)."""
    d = (start_bytes >> 4) & 0x3FFF
    d |= ((lbo_bytes >> 4) & 0x3FFF) << 16
    d |= ((sbo_bytes >> 4) & 0x3FFF) << 32
    d |= SWIZZLE_CODE[swizzle] << 62
    return d


def write_operand(image: np.ndarray, base: int, mat_bits: np.ndarray, offsets: np.ndarray,
                  bits: int) -> None:
    """Store a (rows, k) matrix of element bit patterns into a uint8 smem image at `base`."""
    esz = bits // 8
    vals = np.asarray(mat_bits).astype(np.uint64)
    for b in range(esz):
        image[base + offsets + b] = ((vals >> np.uint64(8 * b)) & np.uint64(0xFF)).astype(np.uint8)
