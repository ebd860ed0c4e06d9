"""How a cp.async's bytes fall on global sectors and shared-memory wavefronts, per warp: the
fill wavefronts the L1 takes to write them (`fill_wavefronts`), the global sector reads of a copy
that bypasses the L1 (`copy_pieces`). The rules are written with numpy over the whole copy
(`_fill_wavefronts`, `_copy_pieces`: their definition); what callers get is the same count from
one compiled pass over each warp's lanes (`_per_warp`, warps in increasing order: every copy of
a step), or otherwise remembered by the lanes' pattern (`_memoized`).
Counting rules only; the copy itself is `async_ops.CpAsyncOp`, its timing `timing/memory/l1.py`."""
from __future__ import annotations

import hashlib

import numpy as np
from numba import njit

U64 = np.uint64


FILL_WINDOW_SHIFT = 7                   # the 128-byte shared-memory span one fill wavefront writes
ZERO_FILL_SOURCE = 1 << 39              # the "source" of a zero-filling lane: its destination, in no real line


def _fill_wavefronts(warps: np.ndarray, src: np.ndarray, dst: np.ndarray, nwarps: int) -> np.ndarray:
    """Wavefronts per warp (0..nwarps-1) with which the L1 writes one cp.async's bytes into
    shared memory, lane k copying from global byte `src[k]` to its block's shared byte `dst[k]`
    (each lane's bytes inside one 32-byte sector on both sides, as cp.async's alignment makes
    them): a piece is what one global 32-byte sector puts into one shared 32-byte sector, and
    a wavefront writes the pieces of one global 128-byte line into one 128-byte shared window,
    those that begin a sector apart from those that begin in its second half (a sector whose
    second 16 bytes land in another shared sector than its first is written in two passes).
    Aligned copies take the bank rule's count (a 128-byte row: one wavefront); a destination
    16 bytes off a 32-byte boundary (mma_gemm's padded rows) takes 15 and 10.5 for 64- and 128-byte rows,
    as Nsight measures on the H100 (sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts,
    data/measurements/h100_tensor.json: 12.75 per LDGSTS of cuda_mma_*, 4.00 of Triton's swizzled tiles)."""
    if len(src) == 0:
        return np.zeros(nwarps, np.int64)
    w, g, s = warps.astype(U64), src.astype(U64), dst.astype(U64)
    piece = (w << U64(48)) | ((g >> U64(5)) & U64((1 << 35) - 1)) << U64(13) | ((s >> U64(5)) & U64((1 << 13) - 1))
    whole = np.unique(piece[(g & U64(16)) == 0])        # pieces with a lane in a sector's first half
    second = ~np.isin(piece, whole, assume_unique=False)
    key = ((w << U64(48)) | ((g >> U64(FILL_WINDOW_SHIFT)) & U64((1 << 33) - 1)) << U64(12)
           | ((s >> U64(FILL_WINDOW_SHIFT)) & U64((1 << 11) - 1)) << U64(1) | second.astype(U64))
    return np.bincount((np.unique(key) >> U64(48)).astype(np.int64), minlength=nwarps)


def _copy_pieces(warps: np.ndarray, src: np.ndarray, dst: np.ndarray, nwarps: int) -> np.ndarray:
    """Global sector reads per warp (0..nwarps-1) of one cp.async that bypasses the L1 (LDGSTS.BYPASS):
    one per piece, a global 32-byte sector and the shared 32-byte sector its bytes go to
    (`fill_wavefronts`' pieces), lane k reading global byte `src[k]` into shared byte `dst[k]`. A
    sector whose 16-byte halves land in two shared sectors (a destination 16 bytes off a 32-byte
    boundary) is read twice: on the H100, sm__sass_l1tex_t_sectors_..._ldgsts_cache_bypass counts
    24 sectors a warp's 512 bytes where every other row is so placed (pitches of 48, 80, 112, 144,
    176 bytes) and 16 where none is, and l1tex__m_xbar2l1tex_read_bytes is 1.5 times the bytes
    copied (data/measurements/fill_rule_h100.json, crossbar_probe_h100_run3.json, h100_tensor.json)."""
    if len(src) == 0:
        return np.zeros(nwarps, np.int64)
    w, g, s = warps.astype(U64), src.astype(U64), dst.astype(U64)
    piece = (w << U64(48)) | ((g >> U64(5)) & U64((1 << 35) - 1)) << U64(13) | ((s >> U64(5)) & U64((1 << 13) - 1))
    return np.bincount((np.unique(piece) >> U64(48)).astype(np.int64), minlength=nwarps)


LINE_MASK = ~np.int64(127)
MEMO_ENTRIES = 4096                     # per-warp counts kept by the lanes' pattern (a few MB at most)
_memo: dict[tuple, np.ndarray] = {}


def _rebased(warps: np.ndarray, src: np.ndarray, dst: np.ndarray):
    """(warps, src, dst) with each warp's sources and destinations moved down by multiples of 128
    bytes (to their lowest line and window): `_fill_wavefronts` and `_copy_pieces` count each
    warp's pieces, lines and windows on its own, and a shift by whole lines and windows keeps
    which bytes share them, so their counts are the same. A GEMM's copies then look alike from
    block to block and k-step to k-step. Warps not in increasing order share one shift."""
    w, g, s = warps.astype(np.int64), src.astype(np.int64), dst.astype(np.int64)
    if len(w) > 1 and bool((w[1:] >= w[:-1]).all()):
        starts = np.flatnonzero(np.r_[True, w[1:] != w[:-1]])
        counts = np.diff(np.r_[starts, len(w)])
        return (w, g - np.repeat(np.minimum.reduceat(g, starts) & LINE_MASK, counts),
                s - np.repeat(np.minimum.reduceat(s, starts) & LINE_MASK, counts))
    return w, g - (g.min() & LINE_MASK), s - (s.min() & LINE_MASK)


def _memoized(rule, warps: np.ndarray, src: np.ndarray, dst: np.ndarray, nwarps: int) -> np.ndarray:
    """`rule`'s per-warp counts, remembered by the rebased pattern of the lanes (`_rebased`):
    the np.unique over every lane of a batch was a quarter of a large cp.async GEMM's prediction."""
    if len(src) == 0:
        return np.zeros(nwarps, np.int64)
    w, g, s = _rebased(warps, src, dst)
    h = hashlib.blake2b(digest_size=16)
    for a in (w, g, s):
        h.update(np.ascontiguousarray(a).view(np.uint8))
    key = (rule.__name__, nwarps, len(w), h.digest())
    got = _memo.get(key)
    if got is None:
        if len(_memo) >= MEMO_ENTRIES:
            _memo.clear()
        got = _memo[key] = rule(w, g, s, nwarps)
    return got.copy()


MAX_WARPS = 1 << 16                     # the rules' keys hold the warp in 16 bits (bits 48..63)


@njit(cache=True, nogil=True, inline="always")
def _sort_with(v, idx, m):
    """v[:m] sorted in place, idx[:m] permuted alike: an insertion sort, linear on a warp's lanes
    in address order (the usual copy), quadratic at worst on its 32."""
    for k in range(1, m):
        x, y = v[k], idx[k]
        q = k - 1
        while q >= 0 and v[q] > x:
            v[q + 1], idx[q + 1] = v[q], idx[q]
            q -= 1
        v[q + 1], idx[q + 1] = x, y


# Per-warp counts remembered by the warp's rebased lanes (`_per_warp`): a direct-mapped table,
# per slot [tag (2 lanes + fill, -1 empty), count, 32 rebased sources, 32 rebased destinations].
WARP_MEMO_SLOTS = 1024
WARP_MEMO = np.full((WARP_MEMO_SLOTS, 2 + 2 * 32), -1, np.int64)


@njit(cache=True, nogil=True)
def _per_warp(w, g, s, nwarps, fill, memo):
    """The rule's counts per warp (`fill`: `_fill_wavefronts`, else `_copy_pieces`) on each warp's
    lanes rebased as `_rebased` does, for warps `w` (int64) in increasing order, 0 <= w < nwarps:
    the rule's pieces, halves and windows, each warp's distinct ones counted after a sort (`_sort_with`). Returns
    (counts, False) where w is not so (the caller takes `_memoized`). A warp's count is a function of
    its rebased lanes, remembered in `memo` (`WARP_MEMO`'s layout; the lanes compared in full, so a
    hit is exact): a pipeline's warps copy alike from block to block and stage to stage."""
    out = np.zeros(nwarps, np.int64)
    n = len(w)
    if n == 0:
        return out, True
    if w[0] < 0 or w[n - 1] >= nwarps:
        return out, False
    for k in range(1, n):
        if w[k] < w[k - 1]:
            return out, False
    piece = np.empty(n, np.uint64)
    first = np.empty(n, np.bool_)
    key = np.empty(n, np.uint64)
    gl = np.empty(n, np.uint64)
    sl = np.empty(n, np.uint64)
    order = np.empty(n, np.int64)
    slots = memo.shape[0]
    prev_m, prev_count = -1, 0                         # the warp before: its lanes (gl, sl[:prev_m]) and count
    i = 0
    while i < n:
        j = i + 1
        while j < n and w[j] == w[i]:
            j += 1
        gmin, smin = g[i], s[i]
        for k in range(i + 1, j):
            gmin = min(gmin, g[k])
            smin = min(smin, s[k])
        gmin &= -128                                   # LINE_MASK
        smin &= -128
        m = j - i
        tag = 2 * m + (1 if fill else 0)
        diff = np.uint64(0)                            # as the warp before (a pipeline's warps mostly are)?
        for k in range(m):                             # (compared without branches: a loop that vectorises)
            gg = np.uint64(g[i + k] - gmin)
            ss = np.uint64(s[i + k] - smin)
            diff |= (gl[k] ^ gg) | (sl[k] ^ ss)
            gl[k], sl[k] = gg, ss
        same = m == prev_m and diff == 0
        if same:
            out[w[i]] = prev_count
            i = j
            continue
        h = np.uint64(0)
        for k in range(m):                             # lanes mixed independently and summed: no serial chain
            h += ((gl[k] + np.uint64(k)) * np.uint64(0x9E3779B97F4A7C15)) ^ (sl[k] * np.uint64(0xC2B2AE3D27D4EB4F))
        h = (h ^ np.uint64(tag) ^ (h >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9)
        prev_m = m
        row = memo[np.int64((h >> np.uint64(40)) % np.uint64(slots))]
        if m <= 32 and row[0] == tag:
            d = np.int64(0)
            for k in range(m):
                d |= (row[2 + k] ^ np.int64(gl[k])) | (row[34 + k] ^ np.int64(sl[k]))
            if d == 0:
                out[w[i]] = prev_count = row[1]
                i = j
                continue
        for k in range(m):
            gg, ss = gl[k], sl[k]
            order[k] = k
            piece[k] = ((gg >> np.uint64(5)) & np.uint64((1 << 35) - 1)) << np.uint64(13) \
                | ((ss >> np.uint64(5)) & np.uint64((1 << 13) - 1))
            first[k] = (gg & np.uint64(16)) == 0
        _sort_with(piece, order, m)
        distinct = 0
        a = 0
        while a < m:                                   # each distinct piece: is a lane of it in a first half?
            p = piece[a]
            anyfirst = first[order[a]]
            b = a + 1
            while b < m and piece[b] == p:
                anyfirst |= first[order[b]]
                b += 1
            distinct += 1
            if fill:
                for q in range(a, b):
                    k = order[q]
                    key[k] = ((gl[k] >> np.uint64(FILL_WINDOW_SHIFT)) & np.uint64((1 << 33) - 1)) << np.uint64(12) \
                        | ((sl[k] >> np.uint64(FILL_WINDOW_SHIFT)) & np.uint64((1 << 11) - 1)) << np.uint64(1) \
                        | np.uint64(0 if anyfirst else 1)
            a = b
        if fill:
            _sort_with(key, order, m)
            distinct = 1
            for k in range(1, m):
                distinct += key[k] != key[k - 1]
        out[w[i]] = prev_count = distinct
        if m <= 32:                                    # remembered: the tag written last
            row[0] = -1
            row[1] = distinct
            for k in range(m):
                row[2 + k] = np.int64(gl[k])
                row[34 + k] = np.int64(sl[k])
            row[0] = tag
        i = j
    return out, True


def _counted(rule, warps: np.ndarray, src: np.ndarray, dst: np.ndarray, nwarps: int) -> np.ndarray:
    """`rule`'s per-warp counts: compiled (`_per_warp`) for warps in increasing order, else
    remembered (`_memoized`); both are the rule on the rebased lanes."""
    if 0 < nwarps <= MAX_WARPS:
        got, ok = _per_warp(np.asarray(warps, np.int64), np.asarray(src, np.int64), np.asarray(dst, np.int64),
                            nwarps, rule is _fill_wavefronts, WARP_MEMO)
        if ok:
            return got
    return _memoized(rule, warps, src, dst, nwarps)


def fill_wavefronts(warps: np.ndarray, src: np.ndarray, dst: np.ndarray, nwarps: int) -> np.ndarray:
    """`_fill_wavefronts` (the rule), compiled or remembered (`_counted`)."""
    return _counted(_fill_wavefronts, warps, src, dst, nwarps)


def copy_pieces(warps: np.ndarray, src: np.ndarray, dst: np.ndarray, nwarps: int) -> np.ndarray:
    """`_copy_pieces` (the rule), compiled or remembered (`_counted`)."""
    return _counted(_copy_pieces, warps, src, dst, nwarps)


def fill_count(lanes: np.ndarray, local: np.ndarray, read_lanes: np.ndarray, goff: np.ndarray) -> int:
    """`fill_wavefronts` summed over the warps of one cp.async step: `lanes` (increasing) copy to
    their block's shared bytes `local`, `read_lanes` (some of them) from global bytes `goff`; a
    lane that reads nothing (src-size 0) fills zeros, counted as a copy from its own aligned source."""
    src = local.astype(np.int64) | ZERO_FILL_SOURCE
    if len(read_lanes):
        src[np.searchsorted(lanes, read_lanes)] = goff.astype(np.int64)
    w = (lanes >> 5) - (lanes[0] >> 5)
    return int(fill_wavefronts(w, src, local, int(w[-1]) + 1).sum())
