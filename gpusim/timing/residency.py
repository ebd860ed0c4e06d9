"""Warps and thread blocks resident on an SM: their state, their arrival (`add_cta`), CTA
barriers (`_arrive`, `_release`) and completion (`_warp_done`), and the SM's residency
integrals (`warp_cycles`, `active_cycles`: `sm__warps_active`).

- A block arrives with its warps' instruction streams; each warp goes to sub-partition
  `warp_in_block mod sub_partitions` in age (launch) order, and waits `dispatch_stall`
  until its first instruction may issue. Local memory is per resident warp slot: a
  block takes the lowest free block slot of the SM, and its warps' local frames are
  that slot's (`local_delta`), reused by later blocks.
- A barrier releases the block's warps `sm.barrier_latency_cycles` after the last live
  warp arrives; a warp that finishes no longer counts towards the barrier.
- A block completes with its last warp: its slot is freed and `on_cta_done` called.

A mixin of `sm.SM`: it uses the SM's `sps`, `ctas`, `spec`, `stats` and `_prepare`,
`_next_visit`.
"""
from __future__ import annotations

import math
from heapq import heappop, heappush

import numpy as np

from gpusim.frontend.sass.operands import B_BASE, N_B
from gpusim.timing.static import FIXED

INF = math.inf
REG_SLOTS = B_BASE + N_B                  # scoreboard slots (static.StaticInstr.srcs/dsts: operands.py's numbering)


class Warp:
    __slots__ = ("stream", "vi", "instrs", "ii", "mem", "cta", "slot", "age", "ready_at", "reason", "throttled",
                 "reg_ready", "reg_kind", "last_issue", "at_barrier", "cand", "iline", "sp", "cur", "local_delta")

    def __init__(self, stream, cta, slot, age, t0, sp=None):
        self.stream, self.cta, self.slot, self.age, self.sp = stream, cta, slot, age, sp
        self.vi, self.ii = -1, 0
        self.instrs, self.mem = (), None
        self.cur = None                           # instrs[ii]: the instruction it issues next
        self.ready_at, self.reason, self.throttled = t0, "dispatch_stall", False
        self.reg_ready = [-INF] * REG_SLOTS      # slot -> when its value is ready (-inf: never written)
        self.reg_kind = [FIXED] * REG_SLOTS       # slot -> how that value is produced (FIXED/SHARED/GLOBAL)
        self.last_issue = t0 - 1
        self.at_barrier = False
        self.cand = t0
        self.iline = -1                           # instruction-cache line of its latest instruction
        self.local_delta = 0                      # sectors from its frame in the stream to its SM slot's (uint64, wrapping)


class CTA:
    __slots__ = ("block", "warps", "live", "waiting", "start", "slot")

    def __init__(self, block, start, slot=0):
        self.block, self.start, self.slot = block, start, slot
        self.warps: list[Warp] = []
        self.live = 0
        self.waiting: list[Warp] = []


class Residency:
    """Mixin of `SM` (module docstring)."""

    def _account(self, t: float) -> None:
        if t > self._last_change:
            dt = t - self._last_change
            self.warp_cycles += self.resident_warps * dt
            if self.resident_warps:
                self.active_cycles += dt
            self._last_change = t

    def add_cta(self, block: int, streams, t0: float) -> None:
        t0 = max(t0, self.t)
        self._account(t0)
        cta = CTA(block, t0, heappop(self._free_slots) if self._free_slots else len(self.ctas))
        nsp = len(self.sps)
        frames = self.id * self.spec.sm.max_warps_per_sm + cta.slot * len(streams)
        for s in streams:
            sp = self.sps[s.warp_in_block % nsp]
            w = Warp(s, cta, s.warp_in_block // nsp, self.next_age, t0, sp)
            if s.local_sectors:                     # local memory is per resident warp slot, reused by later blocks
                w.local_delta = np.uint64((frames + s.warp_in_block - s.gid) * s.local_sectors % (1 << 64))
            self.next_age += 1
            cta.warps.append(w)
            sp.warps.append(w)
            if t0 < sp.next:
                sp.next = t0
            self._next_visit(w, t0)
        cta.live = len(cta.warps)
        self.ctas[block] = cta
        self.resident_warps += len(cta.warps)
        for w in list(cta.warps):
            if w.vi >= len(w.stream.visits):
                self._warp_done(w, t0)

    def has_work(self) -> bool:
        return bool(self.ctas)

    def _arrive(self, w: Warp, t: float) -> None:
        cta = w.cta
        w.at_barrier = True
        cta.waiting.append(w)
        if len(cta.waiting) >= cta.live:
            self._release(cta, t)

    def _release(self, cta: CTA, t: float) -> None:
        rel = t + self.spec.sm.barrier_latency_cycles
        for w in cta.waiting:
            w.at_barrier = False
            w.ready_at = rel
            w.reason = "barrier"
            if w.vi < len(w.stream.visits):
                self._prepare(w, w.last_issue + 1)
        cta.waiting = []

    def _warp_done(self, w: Warp, t: float) -> None:
        w.sp.warps.remove(w)
        cta = w.cta
        cta.live -= 1
        if cta.waiting and len(cta.waiting) >= cta.live:
            self._release(cta, t)
        if cta.live == 0:
            self._account(t)
            self.resident_warps -= len(cta.warps)
            del self.ctas[cta.block]
            heappush(self._free_slots, cta.slot)
            self.stats.block_done(cta.block, cta.start, t)
            self.on_cta_done(self, cta.block, t)
