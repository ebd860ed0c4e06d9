"""What a warp issues: its executed PTX path (from the functional core) turned into the
SASS segments the SM model times, with every memory access moved onto the SASS
instruction that performs it.

Input: one warp's PTX visits `(ptx_block, active_lanes, mem)` (`trace.WarpStream`),
`mem` keyed by PTX instruction index. Output: SASS visits `(segment, active_lanes,
mem)`, `mem` keyed by SASS instruction index (`static.IssueProgram`):
- a PTX block with a region issues its segment; one without (ptxas merged it into a
  neighbour) issues nothing;
- a run of n consecutive visits of a one-block loop ptxas unrolled issues the SASS
  blocks of `SassMap.walk(block, n)`; the j-th copy of a memory instruction in a pass
  takes the addresses of the pass's j-th iteration;
- a memory access goes to `SassMap.payload_target`, issued in the region of
  `payload_home`: onto that home's latest visit if the home comes first
  (`payload_back`), else onto its next one. Two PTX accesses landing on one SASS
  instruction (ptxas merged them) are merged (sectors united, byte masks OR-ed,
  wavefronts: the larger).
`dropped` counts accesses with no SASS visit to land on (reported by the engine as
`gpusim__sass_unplaced_accesses.sum`; zero on every program of `programs/`).
"""
from __future__ import annotations

import numpy as np


class IssueStreams:
    def __init__(self, smap, program):
        self.smap = smap
        self.region = program.region_segment
        self.block_segment = program.block_segment
        self.unrolled = smap.unrolled
        self.target = smap.payload_target
        self.home = smap.payload_home
        self.back = smap.payload_back
        self.copies = smap.copies
        self._walks: dict[tuple[int, int], list] = {}
        self.dropped = 0

    def convert(self, visits: list) -> list:
        out: list = []
        latest: dict[int, dict] = {}                 # PTX home block -> mem of its latest SASS visit
        pending: dict[int, dict] = {}                # PTX home block -> accesses waiting for its next visit
        region, target, home, back = self.region, self.target, self.home, self.back
        i, n = 0, len(visits)
        while i < n:
            b, lanes, mem = visits[i]
            if b in self.unrolled:
                j = i + 1
                while j < n and visits[j][0] == b:
                    j += 1
                self._loop(b, visits[i:j], out)
                i = j
                continue
            i += 1
            seg = region.get(b)
            if seg is not None:
                m: dict = pending.pop(b, None) or {}
                out.append((seg, lanes, m))
                latest[b] = m
            for p, payload in mem.items():
                s = target.get(p)
                if s is None:
                    self.dropped += 1
                    continue
                h = home[p]
                if h == b or (back[p] and h in latest):
                    dest = latest[h]
                else:
                    dest = pending.setdefault(h, {})
                prev = dest.get(s)
                dest[s] = payload if prev is None else merge(prev, payload)
        for left in pending.values():
            self.dropped += len(left)
        return out

    def _loop(self, b: int, run: list, out: list) -> None:
        n = len(run)
        key = (b, n)
        path = self._walks.get(key)
        if path is None:
            path = self._walks[key] = self.smap.walk(b, n)
        used = 0
        for k, first in path:
            mem: dict = {}
            for p, copies in self.copies.get(k, {}).items():
                for j, s in enumerate(copies):
                    it = first + j
                    if it < n:
                        payload = run[it][2].get(p)
                        if payload is not None:
                            mem[s] = payload
                            used += 1
            out.append((self.block_segment[k], run[min(first, n - 1)][1], mem))
        self.dropped += sum(len(v[2]) for v in run) - used


def merge(a, b):
    """Two accesses of one warp that one SASS instruction performs."""
    if isinstance(a, int):
        return max(a, b)
    if isinstance(a, tuple):
        s = np.concatenate([a[0], b[0]])
        v = np.concatenate([a[1], b[1]])
        order = np.argsort(s, kind="stable")
        s, v = s[order], v[order]
        starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
        red = np.bitwise_or if v.dtype == np.uint32 else np.add
        return s[starts], red.reduceat(v, starts)
    return np.union1d(a, b)
