"""The SM's pool of its resident warps' visits, laid out as the compiled issue loop reads
them (`issue_loop.py`): `VP`, one row per visit (its segment, or < 0 a loop-sampling marker;
where its shared-memory wavefronts start in `SHP`), and `SHP`, per shared-memory access of a
visit in segment order, its wavefronts (-1: no active lane accessed shared memory).

A warp's visits are loaded when it is seated (`load`: rows v0..vn-1 of `VP`, kept in its
row of the SM's `WI`); when the pool is full the resident warps' visits are moved to the
front of pools large enough for twice what they and the new ones take (`_compact`), which
replaces `VP` / `SHP` (the SM packs its arrays again).
"""
from __future__ import annotations

from operator import itemgetter

import numpy as np

from gpusim.timing import issue_loop as L
from gpusim.timing.issue_stream import LOOP, SKIP

_FIRST = itemgetter(0)
if (LOOP, SKIP) != (-1, -2):
    raise ImportError("gpusim.timing.visit_pool: _seg_nshared's trailing zeros stand for the markers LOOP, SKIP = -1, -2")


class VisitPool:
    """`seg_shared`: per segment of the kernel's issue table, its shared-memory accesses
    (`static.IssueTable.seg_shared`)."""

    def __init__(self, seg_shared):
        self._seg_shared = seg_shared
        # shared accesses per segment, then zeros for the marker segments LOOP and SKIP (-1, -2)
        self._seg_nshared = np.array([len(x) for x in seg_shared] + [0, 0], np.int64)
        self.VP = np.zeros((256, 2), dtype=np.int64)   # rows 0..vtop-1 used
        self.SHP = np.zeros(256, dtype=np.int64)       # 0..shtop-1 used
        self.vtop = self.shtop = 0

    def load(self, w, warps, WI) -> tuple[int, int]:
        """w's visits into the pool: rows v0..vn-1 (`warps`: the SM's rows -> resident Warp, whose
        visits a compaction keeps; `WI`: the SM's warp ints, their visit columns)."""
        seg_shared = self._seg_shared
        visits = w.stream.visits
        segs = np.fromiter(map(_FIRST, visits), np.int64, len(visits))
        per = self._seg_nshared[segs]                   # markers (< 0) take the trailing zeros
        offs = np.cumsum(per) - per
        wfs = [-1 if p is None else (p if isinstance(p, int) else 1)
               for p in (mem.get(idx) if mem else None
                         for seg, _, mem in visits if seg >= 0 for _, idx in seg_shared[seg])]
        nv, nsh = len(segs), len(wfs)
        if self.vtop + nv > len(self.VP) or self.shtop + nsh > len(self.SHP):
            self._compact(nv, nsh, warps, WI)
        v0, s0 = self.vtop, self.shtop
        if nv:
            self.VP[v0:v0 + nv, 0] = segs
            self.VP[v0:v0 + nv, 1] = offs
            self.VP[v0:v0 + nv, 1] += s0
        if nsh:
            self.SHP[s0:s0 + nsh] = wfs
        self.vtop, self.shtop = v0 + nv, s0 + nsh
        w.pool = (s0, nsh)
        return v0, v0 + nv

    def _compact(self, nv: int, nsh: int, warps, wi) -> None:
        """Room for nv more visits and nsh wavefronts: the resident warps' visits moved to the
        front of pools large enough for twice what they and the new ones take."""
        live = [w for w in warps if w is not None]
        need_v = nv + sum(wi.item(w.k, L.W_VN) - wi.item(w.k, L.W_V0) for w in live)
        need_s = nsh + sum(w.pool[1] for w in live)
        vp, shp = np.zeros((max(2 * need_v, 256), 2), dtype=np.int64), np.zeros(max(2 * need_s, 256), dtype=np.int64)
        tv = ts = 0
        for w in live:
            a, b = wi.item(w.k, L.W_V0), wi.item(w.k, L.W_VN)
            s0, n = w.pool
            vp[tv:tv + b - a] = self.VP[a:b]
            vp[tv:tv + b - a, 1] += ts - s0
            shp[ts:ts + n] = self.SHP[s0:s0 + n]
            for col in (L.W_V0, L.W_VN, L.W_V):
                wi[w.k, col] += tv - a
            wi[w.k, L.W_SH] += ts - s0
            w.pool = (ts, n)
            tv, ts = tv + b - a, ts + n
        self.VP, self.SHP, self.vtop, self.shtop = vp, shp, tv, ts
