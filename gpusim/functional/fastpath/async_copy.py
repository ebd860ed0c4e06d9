"""`cp.async` on the fast core: the reference op (`gpusim.functional.async_ops.CpAsyncOp`) with
its address checks, byte gathering and counters done by one compiled pass (`_plan`).

`_plan` resolves and checks, lane by lane in increasing order, the shared destination of each
active lane (as `lsu_kernels.place_shared` does: inside the block's shared size, aligned to the
copy size) and the global source of each lane that reads (src-size > 0; as `place_heap`: inside
one allocation, aligned), gathers the source bytes (zeros for a lane that reads nothing), and
counts what the reference op counts: warps with an active lane (instructions and requests), the
global 32-byte sectors (distinct per warp, as `place_heap` counts them; for a copy that bypasses
the L1, `copy_counts.copy_pieces`' pieces), the shared fill wavefronts (`copy_counts.fill_count`),
both through `copy_counts._per_warp`, the compiled form of those rules. The copies are issued
to the batch's `AsyncCopies` as the reference does. The reference op runs instead (and reports
any fault exactly as always) when the pass finds a lane that faults, when a lane has a partial
src-size (0 < src-size < cp-size), with a sanitizer attached, for heaps with aliases, and for
bank geometries the fast unit does not take. Measured (Triton matmul 256^3, 16 blocks, 2-core
loaded machine): 2.5 -> 0.3 ms CPU per cp.async step with separate compiled passes and numpy
between them (the reference's `np.unique` counts being most of it), about 0.1 ms fused.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from gpusim.functional.async_ops import BYPASS_FIELDS, FIELDS, CpAsyncOp, _unit
from gpusim.functional.copy_counts import MAX_WARPS, WARP_MEMO, ZERO_FILL_SOURCE, _per_warp
from gpusim.functional.fastpath.lsu_kernels import FAIL, OK, _add_key, _alloc_index
from gpusim.functional.fastpath.memops import _slots

U64 = np.uint64
NO_BOOL = np.zeros(1, np.bool_)
NO_I64 = np.zeros(1, np.int64)


@njit(cache=True, nogil=True)
def _plan(dst, src, m, use_m, g, use_g, lim, use_lim, lo, n, size, limit, stride, lanes_per_cta, sbuflen,
          starts, ends, heap_base, heap, hbytes, wshift, bypass, lanes, soff, goff, data, res, memo):
    """One cp.async step over span lanes lo .. lo + n - 1 (module docstring): dst / src the span's
    shared and global addresses, m / g its active mask and guard (used when use_m / use_g), lim
    its src-sizes (when use_lim); `heap` (hbytes bytes) and `data` seen as words of 2^wshift bytes
    (a copy's size and its source's alignment are multiples of them). Outputs: lanes[:a], soff[:a],
    data[:a] the a active lanes,
    their shared offsets (block slot * stride + address) and bytes; goff[i] the global offset of
    span lane i (-1: it reads nothing); res = (a, warps, reading lanes, global sectors, fill
    wavefronts). FAIL (outputs partial) for a lane that faults, a partial src-size anywhere in
    the span, or more warps than the counting rules take: the caller runs the reference op."""
    nb = U64(size)
    amask = U64(size - 1)
    if use_lim:
        for i in range(n):
            if lim[i] > 0 and lim[i] < size:
                return FAIL
    keys = np.empty(33, np.uint64)               # (and the largest: `_add_key`)
    nkeys = 0
    sectors = 0
    na = nr = nwarps = 0
    cur_warp = cur_rwarp = -1
    last = -1
    hlen = U64(hbytes)
    words = size >> wshift
    w = np.empty(n, np.int64)
    fsrc = np.empty(n, np.int64)
    local = np.empty(n, np.int64)
    rw = np.empty(n, np.int64)
    rg = np.empty(n, np.int64)
    rs = np.empty(n, np.int64)
    for i in range(n):
        goff[i] = -1
        if (use_m and not m[i]) or (use_g and not g[i]):
            continue
        lane = lo + i
        a = dst[i]
        if a + nb > limit or (a & amask) != U64(0):
            return FAIL
        off = U64(lane // lanes_per_cta) * stride + a
        if off > U64(sbuflen) or off + nb > U64(sbuflen) or off + nb < off:
            return FAIL
        wl = lane >> 5
        if wl != cur_warp:
            nwarps += 1
            cur_warp = wl
        lanes[na] = lane
        soff[na] = np.int64(off)
        local[na] = np.int64(a)
        w[na] = wl
        if use_lim and lim[i] <= 0:                  # src-size 0: zeros, "read" from its own destination
            fsrc[na] = np.int64(a) | ZERO_FILL_SOURCE
            for q in range(words):
                data[na, q] = 0
        else:
            sa = src[i]
            k = _alloc_index(starts, sa, last)
            if k < 0 or sa + nb > ends[k] or (sa & amask) != U64(0):
                return FAIL
            last = k
            go = sa - heap_base
            if go > hlen or go + nb > hlen or go + nb < go:
                return FAIL
            goff[i] = np.int64(go)
            fsrc[na] = np.int64(go)
            gw = go >> U64(wshift)
            for q in range(words):
                data[na, q] = heap[gw + U64(q)]
            if wl != cur_rwarp:
                sectors += nkeys
                nkeys = 0
                cur_rwarp = wl
            nkeys = _add_key(keys, nkeys, go >> U64(5))
            rw[nr], rg[nr], rs[nr] = wl, np.int64(go), np.int64(a)
            nr += 1
        na += 1
    sectors += nkeys
    fill = 0
    if na:
        nw = w[na - 1] - w[0] + 1
        if nw > MAX_WARPS:
            return FAIL
        counts, ok = _per_warp(w[:na] - w[0], fsrc[:na], local[:na], nw, True, memo)
        if not ok:
            return FAIL
        fill = counts.sum()
        if bypass and nr:
            counts, ok = _per_warp(rw[:nr] - rw[0], rg[:nr], rs[:nr], rw[nr - 1] - rw[0] + 1, False, memo)
            if not ok:
                return FAIL
            sectors = counts.sum()
    res[0] = na
    res[1] = nwarps
    res[2] = nr
    res[3] = sectors
    res[4] = fill
    return OK


def _word(size: int, heap: np.ndarray, base: int) -> np.dtype:
    """The widest unsigned word (up to 8 bytes) a copy of `size` bytes (a power of two, its source
    aligned to it) reads whole from the global heap `heap` that starts at address `base`."""
    for w in (8, 4, 2):
        if size % w == 0 and base % w == 0 and heap.size % w == 0 and heap.flags.c_contiguous:
            return np.dtype(f"u{w}")
    return np.dtype(np.uint8)


class FastCpAsyncOp(CpAsyncOp):
    __slots__ = ()

    @classmethod
    def from_op(cls, op: CpAsyncOp) -> "FastCpAsyncOp":
        fast = cls.__new__(cls)
        for name in _slots(type(op)):
            if hasattr(op, name):
                setattr(fast, name, getattr(op, name))
        return fast

    def run(self, x):
        lsu = x.lsu
        heap = lsu.mem.global_heap
        if x.san is not None or getattr(lsu, "_bank_shift", -1) < 0 or heap.aliases:
            return CpAsyncOp.run(self, x)
        st = x.state
        lo, n = st.lo, st.hi - st.lo
        size = self.size
        g = self.guard_mask(x) if self.guard is not None else None
        if g is not None and type(g) is not np.ndarray:
            if not g:
                return
            g = None
        work = np.empty((6, n), np.int64)               # src-sizes, addresses, and _plan's outputs: one allocation
        lim = NO_I64
        if self.srcs:
            lim = work[0]
            lim[:] = self.srcs[0](st, x)
        m = st.m
        dst, src = work[1].view(U64), work[2].view(U64)
        dst[:] = self.addresses(x)
        src[:] = self.src_base(st, x) + self.src_offset
        lanes, soff, goff = work[3], work[4], work[5]
        data = np.empty((n, size), np.uint8)
        res = np.zeros(5, np.int64)
        hd = heap.data
        unit = _unit(x)
        hit = unit.heap_words.get(size)                 # the heap seen as words for this size, while it is this array
        if hit is None or hit[0] is not hd:
            w = _word(size, hd, int(heap.base))
            hit = unit.heap_words[size] = (hd, w, hd.view(w), w.itemsize.bit_length() - 1)
        _, w, words, shift = hit
        if _plan(dst, src, NO_BOOL if m is None else m, m is not None, NO_BOOL if g is None else g, g is not None,
                 lim, bool(self.srcs), lo, n, size, U64(lsu.shared_bytes), U64(lsu.shared_stride), x.wpc * 32,
                 lsu.shared.size, heap._starts, heap._ends, U64(heap.base), words, hd.size, shift, self.bypass, lanes,
                 soff, goff, data.view(w), res, WARP_MEMO) != OK:
            return CpAsyncOp.run(self, x)
        na, nwarps, nreads, sectors, fill = res.tolist()
        if not na:
            return
        lanes, soff = lanes[:na], soff[:na]
        unit.issue(lanes, soff, data[:na], None)          # (no sanitizer here: it takes the reference op)
        if x.record is not None:
            if nreads:
                rd = goff >= 0
                x.trace_access(self, "global", lo + np.flatnonzero(rd), goff[rd].astype(U64), size, False)
            x.trace_access(self, "shared", lanes, soff.astype(U64), size, True)
        x.counters.add_extras(self.index, BYPASS_FIELDS if self.bypass else FIELDS, (nwarps, nwarps, sectors, fill))
