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

A mixin of `sm.SM`: it uses the SM's arrays (`issue_loop.py`), `ctas`, `spec`, `stats`
and `_prepare`, `_next_visit`. A warp's scheduling state lives in a row of the SM's
arrays; its `Warp` object holds the rest (its stream, visit, block) and reads the row.
"""
from __future__ import annotations

from heapq import heappop, heappush

import numpy as np

from gpusim.timing import issue_loop as L

_REASONS = L.STALL_REASONS


class Warp:
    """A resident warp: `k` its row in the SM's arrays, `f` / `i` views of that row (the
    properties below read them: register ready times and kinds, ready_at, reason, ...)."""
    __slots__ = ("stream", "cta", "slot", "age", "sp", "local_delta", "k", "f", "i", "flat", "pool")

    def __init__(self, stream, cta, slot, age, sp, k, f, i, flat):
        self.stream, self.cta, self.slot, self.age, self.sp = stream, cta, slot, age, sp
        self.k, self.f, self.i, self.flat = k, f, i, flat
        self.pool = (0, 0)                        # its wavefronts in the SM's SHP: first, how many
        self.local_delta = 0                      # sectors from its frame in the stream to its SM slot's (uint64, wrapping)

    @property
    def vi(self) -> int:
        """Its visit (index into stream.visits; -1 before the first, len(visits) when done)."""
        return self.i.item(L.W_V) - self.i.item(L.W_V0)

    @property
    def mem(self):
        """Its visit's payloads (SASS instruction -> payload)."""
        return self.stream.visits[self.vi][2]

    @property
    def cur(self):
        """The StaticInstr it issues next."""
        return self.flat[self.i.item(L.W_CUR)]

    @property
    def ready_at(self) -> float:
        return self.f.item(L.W_READY)

    @ready_at.setter
    def ready_at(self, v: float) -> None:
        self.f[L.W_READY] = v

    @property
    def last_issue(self) -> float:
        return self.f.item(L.W_LAST)

    @property
    def reason(self) -> str:
        """The Nsight warp state its wait until ready_at counts under."""
        return _REASONS[self.i.item(L.W_REASON)]

    @reason.setter
    def reason(self, v: str) -> None:
        self.i[L.W_REASON] = _REASONS.index(v)

    @property
    def throttled(self) -> bool:
        return bool(self.i.item(L.W_THROT))

    @property
    def at_barrier(self) -> bool:
        return bool(self.i.item(L.W_ATBAR))

    @at_barrier.setter
    def at_barrier(self, v: bool) -> None:
        self.i[L.W_ATBAR] = v


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
        nsp = self.nsp
        frames = self.id * self.spec.sm.max_warps_per_sm + cta.slot * len(streams)
        for s in streams:
            sp = s.warp_in_block % nsp
            if not self._free_rows:
                self._grow()
            k = self._free_rows.pop()
            w = Warp(s, cta, s.warp_in_block // nsp, self.next_age, sp, k, self.WF[k], self.WI[k], self._flat)
            if s.local_sectors:                     # local memory is per resident warp slot, reused by later blocks
                w.local_delta = np.uint64((frames + s.warp_in_block - s.gid) * s.local_sectors % (1 << 64))
            self.next_age += 1
            cta.warps.append(w)
            v0, vn = self._load_visits(w)    # may compact the pools: only over the warps already in rows
            self._warps[k] = w                # (row k still holds the visit range of its last warp)
            L.add_warp(k, sp, float(t0), v0, vn, self.WF, self.WI, self.SPF, self.SPI)
            self._next_visit(w, t0)
        cta.live = len(cta.warps)
        self.ctas[block] = cta
        self.resident_warps += len(cta.warps)
        for w in list(cta.warps):
            if w.vi >= len(w.stream.visits):
                self._warp_done(w, t0)

    def _grow(self) -> None:
        """Twice the warp rows (more resident warps than `max_warps_per_sm`)."""
        cap = len(self._warps)
        self.WF = np.concatenate([self.WF, np.zeros_like(self.WF)])
        self.WI = np.concatenate([self.WI, np.zeros_like(self.WI)])
        self.SPI = np.concatenate([self.SPI, np.zeros((self.nsp, cap), dtype=np.int64)], axis=1)
        self.BUF = np.zeros(2 * cap, dtype=np.int64)
        self._warps += [None] * cap
        self._free_rows = list(range(2 * cap - 1, cap - 1, -1)) + self._free_rows
        for k, w in enumerate(self._warps):
            if w is not None:
                w.f, w.i = self.WF[k], self.WI[k]
        self._pack()

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
        k = w.k
        if self.SPI.item(w.sp, L.S_LAST) == k:     # policies may still ask for it (lrr: its slot)
            self._departed[w.sp] = w
        L.remove_warp(k, w.sp, self.SPI)
        self._warps[k] = None
        self._free_rows.append(k)
        cta = w.cta
        cta.live -= 1
        if cta.waiting and len(cta.waiting) >= cta.live:
            self._release(cta, t)
        self.mbarriers.warp_done(cta, t)
        if cta.live == 0:
            self.mbarriers.block_done(cta.block)
            self._account(t)
            self.resident_warps -= len(cta.warps)
            del self.ctas[cta.block]
            heappush(self._free_slots, cta.slot)
            self.stats.block_done(cta.block, cta.start, t)
            self.on_cta_done(self, cta.block, t)
