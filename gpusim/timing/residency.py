"""The residency unit of an SM: which thread blocks and warps are resident, their block
slots and ages, CTA barriers, block completion, and the SM's residency integrals
(`warp_cycles`, `active_cycles`: `sm__warps_active`).

- A block is admitted with its warps' instruction streams (`admit`): it takes the lowest
  free block slot of the SM; its warps take the SM's sub-partitions in turn, continuing from
  the previous block's (warp of age a on sub-partition a mod `sub_partitions`, ages counted
  over the SM's warps in launch order): blocks of one or two warps use every scheduler, as on
  the GPU (an H100's `%warpid` mod 4 for 1-, 2- and 4-warp blocks, 4 warps an SM: one on each
  sub-partition, the three shapes equally fast; validate/smsp_placement_probe.py,
  data/measurements/smsp_placement_h100.json). Local memory is per resident warp slot: the
  block's warps' local frames are its slot's (`local_delta`), reused by later blocks.
- A barrier (`arrive`) completes when the block's last live warp arrives; `release`
  lets its warps go `sm.barrier_latency_cycles` later. The SM's barrier unit takes one
  warp's arrival every `sm.barrier_arrival_cycles`, the arrivals of all its blocks in
  turn, so a barrier of many warps, or of many blocks at once, completes later: phases of
  one block of 4 / 16 / 32 warps take 43 / 67 / 104 cycles on an H100
  (validate/scan_phases_probe.py, data/measurements/scan_phases_h100.json). A warp that finishes (`leave`) no
  longer counts towards the barrier.
- A block completes with its last warp: `remove` frees its slot.

Its own state: the resident blocks (`ctas`), free block slots, the next warp age and the
integrals. The SM (`sm.SM`) owns one and drives it: it gives each admitted warp a row of
its issue-loop arrays (`Warp.k`; the warp's scheduling state lives in that row, which the
`Warp` properties read), prepares the warps a barrier releases, and tells the mbarrier
unit, the stats and the engine when a warp or block is done.
"""
from __future__ import annotations

from heapq import heappop, heappush

import numpy as np

from gpusim.timing import issue_loop as L

_REASONS = L.STALL_REASONS


class Warp:
    """A resident warp: `k` its row in the SM's arrays, `f` / `i` views of that row (the
    properties below read them: register ready times and kinds, ready_at, reason, ...),
    `flat` the SM's instruction table; the SM seats it (`SM._seat`) before it runs."""
    __slots__ = ("stream", "cta", "slot", "age", "sp", "local_delta", "k", "f", "i", "flat", "pool")

    def __init__(self, stream, cta, slot, age, sp):
        self.stream, self.cta, self.slot, self.age, self.sp = stream, cta, slot, age, sp
        self.k, self.f, self.i, self.flat = -1, None, None, None
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
    __slots__ = ("block", "warps", "live", "waiting", "start", "slot", "arrived_at")

    def __init__(self, block, start, slot=0):
        self.block, self.start, self.slot = block, start, slot
        self.warps: list[Warp] = []
        self.live = 0
        self.waiting: list[Warp] = []
        self.arrived_at = float("-inf")   # when the barrier unit took the last arrival of its current barrier


class Residency:
    """The blocks and warps resident on SM `sm_id` (module docstring). `sm_spec`: the
    `SMSpec` (sub-partitions, warps per SM for the local frames, barrier latency)."""

    def __init__(self, sm_id: int, sm_spec):
        self.nsp = sm_spec.sub_partitions
        self.frames_base = sm_id * sm_spec.max_warps_per_sm     # this SM's first local-memory warp frame
        self.barrier_latency = sm_spec.barrier_latency_cycles
        self.arrival_cycles = sm_spec.barrier_arrival_cycles
        self.arrivals_free = float("-inf")        # when the barrier unit takes its next arrival
        self.ctas: dict = {}                       # block -> CTA
        self._free_slots: list[int] = []           # block slots freed by finished CTAs (local frames), lowest first
        self.next_age = 0
        self.resident_warps = 0
        self.warp_cycles = 0.0                     # integral of resident warps over time
        self.active_cycles = 0.0                   # cycles with at least one resident warp
        self._last_change = 0.0

    def _account(self, t: float) -> None:
        if t > self._last_change:
            dt = t - self._last_change
            self.warp_cycles += self.resident_warps * dt
            if self.resident_warps:
                self.active_cycles += dt
            self._last_change = t

    def has_work(self) -> bool:
        return bool(self.ctas)

    def admit(self, block: int, streams, t0: float) -> CTA:
        """Block `block` resident from `t0` with one warp per stream (each with its sub-partition,
        slot in the sub-partition (the SM's warps by age: the loose round-robin policy's order),
        age and local frame; not yet seated in the SM's arrays)."""
        self._account(t0)
        cta = CTA(block, t0, heappop(self._free_slots) if self._free_slots else len(self.ctas))
        nsp = self.nsp
        frames = self.frames_base + cta.slot * len(streams)
        for s in streams:
            w = Warp(s, cta, self.next_age // nsp, self.next_age, self.next_age % nsp)
            if s.local_sectors:                     # local memory is per resident warp slot, reused by later blocks
                w.local_delta = np.uint64((frames + s.warp_in_block - s.gid) * s.local_sectors % (1 << 64))
            self.next_age += 1
            cta.warps.append(w)
        cta.live = len(cta.warps)
        self.ctas[block] = cta
        self.resident_warps += len(cta.warps)
        return cta

    def arrive(self, w: Warp, t: float) -> bool:
        """`w` waits at its block's barrier from `t`; True when that completes the barrier (every
        live warp of the block waits: `release` it)."""
        cta = w.cta
        taken = t if t > self.arrivals_free else self.arrivals_free
        self.arrivals_free = cta.arrived_at = taken + self.arrival_cycles    # the unit's times only grow
        w.at_barrier = True
        cta.waiting.append(w)
        return len(cta.waiting) >= cta.live

    def release(self, cta: CTA, t: float) -> list[Warp]:
        """The barrier of `cta`, complete at `t`, lets its waiting warps go (ready
        `barrier_latency` after the unit took its last arrival); returns those that still have
        work, to be prepared."""
        rel = max(t, cta.arrived_at) + self.barrier_latency
        cta.arrived_at = float("-inf")
        go = []
        for w in cta.waiting:
            w.at_barrier = False
            w.ready_at = rel
            w.reason = "barrier"
            if w.vi < len(w.stream.visits):
                go.append(w)
        cta.waiting = []
        return go

    def leave(self, w: Warp) -> bool:
        """`w` has finished; True when the block's remaining live warps all wait at its
        barrier (`release` it)."""
        cta = w.cta
        cta.live -= 1
        return bool(cta.waiting) and len(cta.waiting) >= cta.live

    def remove(self, cta: CTA, t: float) -> None:
        """Block `cta` (no live warp left) completes at `t`: its slot is free."""
        self._account(t)
        self.resident_warps -= len(cta.warps)
        del self.ctas[cta.block]
        heappush(self._free_slots, cta.slot)
