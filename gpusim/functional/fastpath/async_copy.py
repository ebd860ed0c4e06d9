"""`cp.async` on the fast core: the reference op (`gpusim.functional.async_ops.CpAsyncOp`) with
its address checks and counters done by the compiled passes of the fast load/store unit.

One `lsu_kernels.place_shared` pass resolves and checks the shared destinations of the step's
active lanes and counts requests (its bank wavefronts are not a copy's: `copy_counts.fill_count`), one `place_heap` pass the global sources
of the lanes that read (src-size > 0) and their 32-byte sectors; the bytes are gathered with
numpy and issued to the batch's `AsyncCopies` as the reference does. The reference op runs
instead (and reports any fault exactly as always) when a pass finds a lane that faults, when a
lane has a partial src-size (0 < src-size < cp-size), with a sanitizer attached, for heaps with
aliases, and for bank geometries the compiled count does not take. Measured (Triton matmul
256^3, 16 blocks, 2-core loaded machine): 2.5 -> 0.3 ms CPU per cp.async step, the reference's
`np.unique` counts being most of it.
"""
from __future__ import annotations

import numpy as np

from gpusim.functional.async_ops import CpAsyncOp, _unit, gather_bytes
from gpusim.functional.copy_counts import copy_pieces, fill_count
from gpusim.functional.fastpath import lsu_kernels as K
from gpusim.functional.fastpath.memops import _slots

U64 = np.uint64
NO_BOOL = np.zeros(1, np.bool_)
NO_I64 = np.zeros(1, np.int64)                  # place_shared's per-warp wavefronts: not kept (the trace skips a copy's shared side)


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
        lim = None
        if self.srcs:
            lim = np.broadcast_to(np.asarray(self.srcs[0](st, x), np.int64), (n,))
            if ((lim > 0) & (lim < size)).any():
                return CpAsyncOp.run(self, x)
        m = st.m
        use_m, use_g = m is not None, g is not None
        mm = NO_BOOL if m is None else m
        dst = np.empty(st.hi, U64)
        dst[lo:] = self.addresses(x)
        src = np.empty(st.hi, U64)
        src[lo:] = self.src_base(st, x) + self.src_offset
        soffs = np.empty(n, np.int64)
        sres = np.zeros(3, np.int64)
        if K.place_shared(dst, U64(0), False, U64(0), mm, use_m, NO_BOOL if g is None else g, use_g, lo, n, size,
                          size, U64(lsu.shared_bytes), U64(lsu.shared_stride), x.wpc * 32, lsu.shared.size,
                          lsu.banks, lsu._bank_shift, soffs, sres, NO_I64, False, 32, False, 0) != K.OK:
            # (the defaults passed: numba's compiled dispatch takes no call that omits them, each such
            # call re-resolving its types in Python, 0.5-1 ms)
            return CpAsyncOp.run(self, x)
        nactive = int(sres[0])
        if not nactive:
            return
        reads = None if lim is None else lim > 0
        gg = g if reads is None else (reads if g is None else g & reads)
        goffs = np.empty(n, np.int64)
        gres = np.zeros(3, np.int64)
        if K.place_heap(src, U64(0), False, U64(0), mm, use_m, NO_BOOL if gg is None else gg, gg is not None, lo, n,
                        size, size, heap._starts, heap._ends, U64(0), U64(heap.base), heap.data.size, goffs,
                        gres) != K.OK:
            return CpAsyncOp.run(self, x)
        act = soffs >= 0
        rd = goffs >= 0
        data = np.zeros((nactive, size), np.uint8)
        if gres[0]:
            data[rd[act]] = gather_bytes(heap.data, goffs[rd], size)
        lanes = lo + np.flatnonzero(act)
        _unit(x).issue(lanes, soffs[act], data, None)      # (no sanitizer here: it takes the reference op)
        if x.record is not None:
            if gres[0]:
                x.trace_access(self, "global", lo + np.flatnonzero(rd), goffs[rd].astype(U64), size, False)
            x.trace_access(self, "shared", lanes, soffs[act].astype(U64), size, True)
        c = x.counters
        nwarps = int(sres[1])
        c.add_extra(self.index, "ldgsts_inst", nwarps)
        c.add_extra(self.index, "global_ldgsts_bypass_requests" if self.bypass else "global_ldgsts_requests", nwarps)
        local = soffs[act].astype(U64) - x.cta_slot(lanes).astype(U64) * U64(lsu.shared_stride)
        sectors = int(gres[2])
        if self.bypass and gres[0]:         # a sector read once per shared sector it fills (copy_counts.copy_pieces)
            rlanes = lo + np.flatnonzero(rd)
            rw = (rlanes >> 5) - (rlanes[0] >> 5)
            sectors = int(copy_pieces(rw, goffs[rd], local[rd[act]], int(rw[-1]) + 1).sum())
        c.add_extra(self.index, "global_ldgsts_bypass_sectors" if self.bypass else "global_ldgsts_sectors", sectors)
        c.add_extra(self.index, "shared_ldgsts_wavefronts",
                    fill_count(lanes, local, lo + np.flatnonzero(rd), goffs[rd]))
