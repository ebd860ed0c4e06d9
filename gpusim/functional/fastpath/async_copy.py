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
from gpusim.functional.fastpath.lsu_fused import U_LANES_PER_CTA, U_SHARED_BYTES, U_SHARED_LEN, U_SHARED_STRIDE
from gpusim.functional.fastpath.lsu_kernels import FAIL, OK, _add_key, _alloc_index
from gpusim.functional.decode import imm_value
from gpusim.functional.fastpath.memops import _slots, address_base, base_of
from isa.program import Imm, Reg

U64 = np.uint64
NO_BOOL = np.zeros(1, np.bool_)
NO_I64 = np.zeros(1, np.int64)
_P_SIZE, _P_BYPASS, _P_DOFF, _P_SOFF, _P_INDEX = range(5)      # FastCpAsyncOp.consts


@njit(cache=True, nogil=True)
def _plan(P, U, dbase, dval, duni, sbase, sval, suni, m, use_m, g, use_g, lim, use_lim, lo, n,
          starts, ends, heap_base, heap, hbytes, wshift, lanes, soff, goff, data, res, memo, count, c0, c1, c2, c3):
    """One cp.async step over span lanes lo .. lo + n - 1 (module docstring). P the op's constants
    (`_P_*`: copy size, L1 bypass, the offsets added to the destination's and source's bases), U the
    batch's shared window (`lsu_fused.unit_params`); a lane's shared destination is dbase[lane] (or
    dval where duni) plus its offset, its global source likewise from sbase / sval; m / g the
    span's active mask and guard (used when use_m / use_g), lim its src-sizes (when use_lim);
    `heap` (hbytes bytes) and `data` seen as words of 2^wshift bytes (a copy's size and its
    source's alignment are multiples of them). Outputs: lanes[:a], soff[:a], data[:a] the a active
    lanes, their shared offsets (block slot * stride + address) and bytes; goff[i] the global
    offset of span lane i (-1: it reads nothing); res = (a, warps, reading lanes, global sectors,
    fill wavefronts), and with `count` those four counts (warps twice) added at instruction
    P[_P_INDEX] of c0 .. c3 (the counters' rows, `async_ops.FIELDS` or `BYPASS_FIELDS`). FAIL
    (outputs partial) for a lane that faults, a partial src-size anywhere in the span, or more
    warps than the counting rules take: the caller runs the reference op."""
    size = np.int64(P[_P_SIZE])
    bypass = P[_P_BYPASS] != U64(0)
    doff, soff0 = P[_P_DOFF], P[_P_SOFF]
    limit, stride = U[U_SHARED_BYTES], U[U_SHARED_STRIDE]
    lanes_per_cta, sbuflen = np.int64(U[U_LANES_PER_CTA]), np.int64(U[U_SHARED_LEN])
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
        a = (dval if duni else U64(dbase[lane])) + doff
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
            sa = (sval if suni else U64(sbase[lane])) + soff0
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
    if count and na:
        k = np.int64(P[_P_INDEX])
        c0[k] += nwarps
        c1[k] += nwarps
        c2[k] += sectors
        c3[k] += fill
    return OK


def _word(size: int, heap: np.ndarray, base: int) -> np.dtype:
    """The widest unsigned word (up to 8 bytes) a copy of `size` bytes (a power of two, its source
    aligned to it) reads whole from the global heap `heap` that starts at address `base`."""
    for w in (8, 4, 2):
        if size % w == 0 and base % w == 0 and heap.size % w == 0 and heap.flags.c_contiguous:
            return np.dtype(f"u{w}")
    return np.dtype(np.uint8)


def _size_source(dec, ins):
    """Where the src-size operand comes from, for `async_run`: () none, (slot, 0) a 32-bit register,
    (-1, value) an immediate; None for anything else (that copy is left to itself)."""
    if len(ins.operands) <= 3:
        return ()
    o = ins.operands[3]
    if isinstance(o, Reg):
        s = dec.slot(o, ins)
        return (s, 0) if dec.reg_dtypes[s].itemsize == 4 and dec.reg_dtypes[s] != np.bool_ else None
    if isinstance(o, Imm):
        return -1, int(imm_value(o, "u32"))
    return None


class FastCpAsyncOp(CpAsyncOp):
    __slots__ = ("dst_base", "src_base_", "consts", "size_src")

    @classmethod
    def from_op(cls, op: CpAsyncOp, dec, ins) -> "FastCpAsyncOp | CpAsyncOp":
        """The fast form of `op` (instruction `ins`), or `op` where an address base is a register
        the compiled pass does not read."""
        d, s = address_base(dec, ins, ins.operands[0]), address_base(dec, ins, ins.operands[1])
        if d is None or s is None:
            return op
        fast = cls.__new__(cls)
        for name in _slots(type(op)):
            if hasattr(op, name):
                setattr(fast, name, getattr(op, name))
        fast.dst_base, fast.src_base_ = d, s
        fast.size_src = _size_source(dec, ins)
        fast.consts = np.array([op.size, int(op.bypass), int(op.offset), int(op.src_offset), op.index], np.uint64)
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
        work = np.empty((4, n), np.int64)               # src-sizes and _plan's outputs: one allocation
        lim = NO_I64
        if self.srcs:
            lim = work[0]
            lim[:] = self.srcs[0](st, x)
        m = st.m
        lanes, soff, goff = work[1], work[2], work[3]
        data = np.empty((n, size), np.uint8)
        res = np.zeros(5, np.int64)
        hd = heap.data
        unit = _unit(x)
        hit = unit.heap_words.get(size)                 # the heap seen as words for this size, while it is this array
        if hit is None or hit[0] is not hd:
            w = _word(size, hd, int(heap.base))
            hit = unit.heap_words[size] = (hd, w, hd.view(w), w.itemsize.bit_length() - 1)
        _, w, words, shift = hit
        fields = BYPASS_FIELDS if self.bypass else FIELDS
        c = x.counters.present_rows(fields)
        count = c is not None                           # else added below (the first issue makes the rows)
        if not count:
            c = [NO_I64] * 4
        dbase, dval, duni = base_of(st, *self.dst_base)
        sbase, sval, suni = base_of(st, *self.src_base_)
        if _plan(self.consts, lsu.unit_params(), dbase, dval, duni, sbase, sval, suni, NO_BOOL if m is None else m,
                 m is not None, NO_BOOL if g is None else g, g is not None, lim, bool(self.srcs), lo, n,
                 heap._starts, heap._ends, U64(heap.base), words, hd.size, shift, lanes, soff, goff, data.view(w),
                 res, WARP_MEMO, count, c[0], c[1], c[2], c[3]) != OK:
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
        if not count:
            x.counters.add_extras(self.index, fields, (nwarps, nwarps, sectors, fill))
