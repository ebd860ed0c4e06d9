"""The operands of `wgmma.mma_async` (`wgmma_ops`): which warps execute it and with which
descriptors (`prologue`: the warpgroup and uniformity rules in one compiled pass), whether a
descriptor's operand lies in the block's shared memory (`fits`), each descriptor's element
addresses (`addresses`, stacked per set of descriptors: `stacked`), the warps that share one B
(`distinct`, `runs`), and the operands read from shared memory by one compiled gather through
indices a plan keeps (`element_indices`, `taken`; `read` where those do not apply), or gathered
and multiplied into the accumulators in one compiled call (`mma_taken`; `mma_registers` with A
from registers).

Sources: PTX ISA 9.0, 9.7.15.5.1 (matrix descriptors), as `isa.semantics.wgmma`.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit

from gpusim.functional.stack_kernels import full_warps
from isa.semantics import wgmma as W
from isa.semantics.mma_batch import _packed


def read(lsu, table: np.ndarray, idx: np.ndarray, row0: np.ndarray, base: np.ndarray, rows: int,
         bits: int) -> np.ndarray:
    """Operand bits (len(idx), rows, K) of shared memory: element (t, r, c) at byte address
    table[idx[t], row0[t] + r, c] + base[t] (descriptor addresses, `stacked`, plus each block's
    window), as `read_operand` reads them: the general path, where `taken` does not take them
    (every address was checked to lie in the block's shared memory by `_operands`)."""
    return W.read_operand(lsu.shared, _byte_addresses(table, idx, row0, base, rows), bits)


def _byte_addresses(table: np.ndarray, idx: np.ndarray, row0: np.ndarray, base: np.ndarray, rows: int) -> np.ndarray:
    """Byte address (len(idx), rows, K) of element (t, r, c): table[idx[t], row0[t] + r, c] + base[t]."""
    return table[np.asarray(idx)[:, None], np.asarray(row0)[:, None] + np.arange(rows)] + \
        np.asarray(base, np.int64)[:, None, None]


def element_indices(table: np.ndarray, idx: np.ndarray, row0: np.ndarray, base: np.ndarray, rows: int, bits: int,
                    stride: int) -> np.ndarray | None:
    """The indices into shared memory seen as elements of `bits` bits of what `read` reads
    (len(idx), rows, K), read-only: an operand the same steps read again (a K loop's stages, the
    next launch: `WgmmaOp._plan` keeps them) is then one compiled gather (`taken`); None for
    elements other than 1, 2 or 4 bytes, or block windows not 4-byte aligned (`read` then)."""
    esz = bits // 8
    if esz not in (1, 2, 4) or stride % 4:
        return None
    out = np.ascontiguousarray(_byte_addresses(table, idx, row0, base, rows) >> (esz >> 1), dtype=np.int64)
    out.flags.writeable = False
    return out


def taken(smem: np.ndarray, at: np.ndarray | None, bits: int) -> np.ndarray | None:
    """The operand `element_indices` found (`at`) read from shared memory `smem` seen as elements
    of `bits` bits, in one compiled gather; None where there are no indices or they do not fit."""
    esz = bits // 8
    if at is None or not smem.flags.c_contiguous or smem.size % esz:
        return None
    out = np.empty(at.shape, W.UINT[esz])
    return out if _take(smem.view(W.UINT[esz]), at.reshape(-1), out.reshape(-1)) else None


def mma_taken(smem: np.ndarray, b_at: np.ndarray, b_bits: int, a_at: np.ndarray | None, a_bits: int,
              A: np.ndarray | None, b_index: np.ndarray, acc: np.ndarray, cpos: np.ndarray, tpos: np.ndarray,
              zero_c: np.ndarray, plan: tuple, negate_a: bool, negate_b: bool) -> bool:
    """`taken` for B (and for A, where `A` is None: else A's bits as given) and
    `mma_batch.mma_acc` on them, in one compiled call where there were three, each a few
    microseconds from Python (`benchmarks/switched.py wgmma_one_call`); False, having written
    nothing, where `taken` would give None for one of them."""
    eb, ea = b_bits // 8, a_bits // 8
    if not smem.flags.c_contiguous or smem.size % eb or smem.size % ea:
        return False
    fl, i32, i64, p, (asign, bsign) = plan
    flips = (asign if negate_a else 0, bsign if negate_b else 0)
    if A is None:
        return _mma_both(smem.view(W.UINT[ea]), a_at, smem.view(W.UINT[eb]), b_at, b_index, acc, cpos, tpos, zero_c,
                         fl, i32, i64, p, *flips)
    return _mma_b(A, smem.view(W.UINT[eb]), b_at, b_index, acc, cpos, tpos, zero_c, fl, i32, i64, p, *flips)


def mma_registers(smem: np.ndarray, b_at: np.ndarray, b_bits: int, regs: list, form, warps: np.ndarray,
                  b_index: np.ndarray, acc: np.ndarray, cpos: np.ndarray, tpos: np.ndarray, zero_c: np.ndarray,
                  plan: tuple, negate_a: bool, negate_b: bool) -> bool:
    """`mma_taken` with A from registers: A gathered from its four registers' own arrays (`regs`,
    as `wgmma.a_from_registers` gathers it), B taken from shared memory and both multiplied into
    the accumulators, in one compiled call where A's gather was another (with its Python, about 5
    us of a call in situ); False, having written nothing, where B's indices do not fit."""
    eb = b_bits // 8
    if not smem.flags.c_contiguous or smem.size % eb:
        return False
    fl, i32, i64, p, (asign, bsign) = plan
    reg, lane, shift, mask, A = W.a_gather_plan(form, len(warps))
    return _mma_regs(regs[0], regs[1], regs[2], regs[3], warps, reg, lane, shift, mask, A, smem.view(W.UINT[eb]), b_at,
                     b_index, acc, cpos, tpos, zero_c, fl, i32, i64, p, asign if negate_a else 0,
                     bsign if negate_b else 0)


@njit(cache=True, nogil=True)
def _mma_regs(r0, r1, r2, r3, warps, reg, lane, shift, mask, A, bbuf, b_at, bidx, acc, cpos, tpos, zc, fl, i32, i64, p,
              aflip, bflip):
    """`mma_registers`: A gathered into `A` (T, 16, K), then `_mma_b`."""
    W._a_gather(r0, r1, r2, r3, warps, reg, lane, shift, mask, A.reshape(len(warps), -1))
    return _mma_b(A, bbuf, b_at, bidx, acc, cpos, tpos, zc, fl, i32, i64, p, aflip, bflip)


@njit(cache=True, nogil=True)
def _mma_both(abuf, a_at, bbuf, b_at, bidx, acc, cpos, tpos, zc, fl, i32, i64, p, aflip, bflip):
    """`mma_taken` with A and B gathered from shared memory."""
    A = np.empty(a_at.shape, abuf.dtype)
    if not _take(abuf, a_at.reshape(-1), A.reshape(-1)):
        return False
    return _mma_b(A, bbuf, b_at, bidx, acc, cpos, tpos, zc, fl, i32, i64, p, aflip, bflip)


@njit(cache=True, nogil=True)
def _mma_b(A, bbuf, b_at, bidx, acc, cpos, tpos, zc, fl, i32, i64, p, aflip, bflip):
    """`mma_taken` with B gathered from shared memory and A given."""
    B = np.empty(b_at.shape, bbuf.dtype)
    if not _take(bbuf, b_at.reshape(-1), B.reshape(-1)):
        return False
    _packed(A, B, bidx, acc, cpos, tpos, zc, acc, fl, i32, i64, p, aflip, bflip)
    return True


@njit(cache=True, nogil=True)
def _take(buf, at, out):
    """out[i] = buf[at[i]]; False (out partial) where an index is outside buf."""
    n = buf.size
    for i in range(at.size):
        k = at[i]
        if k < 0 or k >= n:
            return False
        out[i] = buf[k]
    return True


@njit(cache=True, nogil=True)
def whole_warps(masks, depth, w0, wpc, warps):
    """`prologue` where every lane's descriptors and scale-d are the same: the executing warps
    into warps; how many, or -1 where a warp runs with only some of its lanes, the block's warps
    do not make whole warpgroups or a warp of a warpgroup has exited."""
    nw = full_warps(masks, warps)
    if nw < 0 or (nw and wpc % 4):
        return -1
    for t in range(nw):
        glob = w0 + warps[t]
        first = glob - (glob % wpc) % 4
        for q in range(4):
            if depth[first + q] == 0:
                return -1
    return nw


@lru_cache(maxsize=256)
def stacked(descs: tuple, rows: int, k: int, bits: int, major: str) -> np.ndarray:
    """`addresses` of each of `descs` stacked (len(descs), rows, k), read-only: a K loop's steps
    use the same few descriptors again and again, so each set is stacked once."""
    out = np.stack([addresses(d, rows, k, bits, major)[0] for d in descs])
    out.flags.writeable = False
    return out


@njit(cache=True, nogil=True)
def prologue(masks, depth, w0, wpc, b, a, sd, warps, bw, aw, sdw):
    """The executing warps of a step (span-relative, increasing: those with every lane active;
    `masks` the span's lane masks, guard applied) with their lane 0's B and A descriptors and
    scale-d, into warps, bw, aw, sdw; returns how many, or -1 when a warp runs with only some of
    its lanes, its block's warps do not make whole warpgroups, a warp of its warpgroup has
    exited (`depth` 0), or a descriptor or scale-d differs across its lanes."""
    nw = whole_warps(masks, depth, w0, wpc, warps)
    if nw < 0:
        return -1
    for t in range(nw):
        w = warps[t]
        lane = 32 * w
        for k in range(1, 32):
            if b[lane + k] != b[lane] or a[lane + k] != a[lane] or sd[lane + k] != sd[lane]:
                return -1
        bw[t], aw[t], sdw[t] = b[lane], a[lane], sd[lane]
    return nw


def distinct(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(v, return_inverse=True)`, at once where every value is the same (a K loop's
    warps mostly share their descriptors)."""
    if (v == v[0]).all():
        return v[:1], np.zeros(len(v), np.intp)
    return np.unique(v, return_inverse=True)


def runs(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(key, return_index=True, return_inverse=True)[1:]`: for a non-decreasing key (the
    warps of a step in order, sharing one descriptor) from its runs, in one compiled pass."""
    first, inverse = np.empty(len(key), np.int64), np.empty(len(key), np.int64)
    n = _run_starts(key, first, inverse)
    if n >= 0:
        return first[:n], inverse
    return np.unique(key, return_index=True, return_inverse=True)[1:]


@njit(cache=True, nogil=True)
def _run_starts(key, first, inverse):
    """For a non-decreasing key: first[:n] where each run of equal values starts and inverse[i]
    the run of element i; returns n, or -1 where the key decreases somewhere."""
    n = 0
    for i in range(len(key)):
        if i and key[i] < key[i - 1]:
            return -1
        if i == 0 or key[i] != key[i - 1]:
            first[n] = i
            n += 1
        inverse[i] = n - 1
    return n


@lru_cache(maxsize=1024)
def fits(desc: int, rows: int, k: int, bits: int, major: str, smem_bytes: int) -> bool:
    """Whether a descriptor's operand lies in the block's shared memory (and has no base offset)."""
    return not (W.desc_fields(desc)[4] or addresses(desc, rows, k, bits, major)[1] > smem_bytes)


@lru_cache(maxsize=1024)
def addresses(desc: int, rows: int, k: int, bits: int, major: str) -> tuple[np.ndarray, int]:
    """(shared-window byte address (rows, k) of each element, one past the operand's last
    byte) of a descriptor (read-only: shared by every warp that uses it)."""
    addr = W.operand_addresses(desc, rows, k, bits, major)
    addr.flags.writeable = False
    return addr, int(addr.max()) + bits // 8
