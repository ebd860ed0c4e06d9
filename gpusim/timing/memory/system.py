"""The memory system below the L1s: crossbar (NoC) + L2 partitions of slices + HBM, and
how their latencies compose into the load-to-use latencies a microbenchmark measures.

Latency composition (all in SM cycles; an idle system adds no queueing, so these hold
exactly, and every shared unit only adds waiting when it is busy):

    L1 hit            = l1.hit_latency_cycles                              (l1.py)
    L2 hit (near)     = noc.latency + P + noc.latency   = l2.hit_latency_cycles
    L2 hit (far)      = l2.hit_latency_cycles + 2 * l2.fabric_latency_cycles
    L2 miss           = noc.latency + HBM + P + noc.latency
                      = l2.hit_latency_cycles + hbm.latency_ns * sm_clock_mhz / 1000
                        (+ 2 * fabric latency for a line homed in the far partition;
                        a DRAM row hit is t_rp + t_rcd sooner, see hbm.py)
    atomic (L2 hit)   = l2.hit_latency_cycles + l2.atomic_latency_cycles
    write acknowledge = l2.hit_latency_cycles (the warp does not wait for it)

where P = l2.hit_latency_cycles - 2 * noc.latency_cycles is the slice pipeline (lookup,
data return). A near hit is also a hit on a near copy of a far line (l2.py), which is
what a pointer chase over an L2-sized footprint measures once warmed up. The L1 sends a
miss at the load's issue time (its tag lookup is inside P).
The path of one request at `now` from SM `sm_id` (near partition `sm_id % partitions`):
  1. crossbar: books the request's data bytes (len(sectors) * 32) on the NoC server,
     arrival at L2 = start + noc.latency (`noc.py`);
  2. L2: per line touched, books the bytes on its near slice; near hits leave at
     lookup + P; far lines cross the fabric to their home slice; misses go to HBM at
     the lookup time and leave at HBM completion + P (`l2.py`);
  3. the way back: + noc.latency (its bandwidth was booked in step 1).
A request's completion is the latest over its sectors. Stores carry byte masks (bit b
of a 32-bit mask = byte b of the sector) down to the L2.

`sm_fraction` (sampled simulation, where only that fraction of the SMs is simulated)
scales every shared bandwidth (crossbar, each L2 slice, the fabric, each HBM bank and
bus) and the L2 capacity (sets per slice), keeping slice, channel and bank counts, so
the simulated SMs see the share of the memory system they would have with all SMs
running. Arrays that blocks from across the grid share are the exception: the whole L2
holds them, warm from the other SMs, so the share's misses on them may be hits
(`warm_shared`, sampling/warming.py). `share_blocks_per_simulated` (blocks of that share per simulated block) lets
the L2 stand in for the unsimulated blocks' lines (l2.py, "phantom" write-backs), so
DRAM writes scale with the blocks. Counters then describe the simulated blocks; scale
them by total blocks / simulated blocks for the whole launch.

Peer memory (`peer_ranges`: sector ranges that live in a peer GPU's memory, from
`gpusim.launch(..., peer_args=...)`): the sectors of a request that fall in such a range
cross the crossbar as above, then leave through the NVLink port (`peer.py`) instead of the
L2: they are not looked up in, cached in or counted by the local L2 and HBM. A request
mixing local and peer sectors completes when both parts have. Without peer ranges the
request path is exactly the one above (the peer path is bound only when there are some).

Not modelled: anything that makes latency depend on which SM or slice beyond the
near/far partition (distance on the die), per-SM crossbar port limits, memory-side
request queue limits (only bandwidth creates backpressure; the L1's MSHRs and its
unacknowledged-store limit bound what each SM has in flight).
Ordering: the timing model advances SMs in time quanta, so requests reach the shared
servers slightly out of time order; the windowed servers (`servers.py`) absorb that to
within one window (32 cycles).
"""
from __future__ import annotations

from bisect import bisect_right

from gpusim.errors import ConfigError
from gpusim.timing.memory.hbm import HBM
from gpusim.timing.memory.l2 import L2Cache, as_list
from gpusim.timing.memory.l2_slices import ATOM, FULL, READ, RED, WRITE
from gpusim.timing.memory.noc import NoC
from gpusim.timing.memory.peer import PeerPort


class MemorySystem:
    """`read`, `write`, `atomic` (now, sm_id, sectors) -> time the data (or ack) is back at the SM."""

    def __init__(self, spec, sm_fraction: float = 1.0, share_blocks_per_simulated: float = 1.0,
                 peer_ranges=None):
        """`peer_ranges`: (first sector, end sector, peer GPU) of the memory that lives on peers."""
        if not (isinstance(sm_fraction, (int, float)) and 0 < sm_fraction <= 1):
            raise ConfigError(f"MemorySystem: sm_fraction must be in (0, 1], got {sm_fraction!r}")
        pipeline = spec.l2.hit_latency_cycles - 2 * spec.noc.latency_cycles
        if pipeline < 0:
            raise ConfigError(f"L2Spec.hit_latency_cycles ({spec.l2.hit_latency_cycles}) must be at least twice "
                              f"NoCSpec.latency_cycles ({spec.noc.latency_cycles}): it is the load-to-use latency "
                              f"including both crossbar traversals")
        self.spec = spec
        self.sm_fraction = sm_fraction
        self.noc = NoC(spec, sm_fraction)
        self.hbm = HBM(spec, sm_fraction)
        self.l2 = L2Cache(spec, self.hbm, sm_fraction, pipeline_latency_cycles=pipeline,
                          share_blocks_per_simulated=share_blocks_per_simulated)
        self.partitions = spec.l2.partitions
        self._sector_bytes = spec.l2.sector_bytes
        self._traverse = self.noc.traverse
        self._back = self.noc.latency_cycles
        self._l2 = self.l2._access
        self.peer = None
        if peer_ranges:
            self._peer_setup(spec, sm_fraction, peer_ranges)

    # -- unloaded latencies (what a pointer-chasing microbenchmark would measure) ---------

    @property
    def l2_hit_latency_cycles(self) -> float:
        return self.spec.l2.hit_latency_cycles

    @property
    def l2_far_hit_latency_cycles(self) -> float:
        return self.spec.l2.hit_latency_cycles + 2 * self.spec.l2.fabric_latency_cycles

    @property
    def l2_miss_latency_cycles(self) -> float:
        """A DRAM row conflict for a line homed in the near partition."""
        return self.spec.l2.hit_latency_cycles + self.hbm.latency_cycles

    # -- requests ---------------------------------------------------------------------

    def read(self, now: float, sm_id: int, sectors, runs: list | None = None) -> float:
        """Sectors (address >> 5) missed by SM `sm_id`'s L1 at `now`; when their data is at the SM.
        `runs`: the lengths of the requests the sectors come in (None: one a line)."""
        lst = sectors if type(sectors) is list else as_list(sectors)    # the L2 does not modify it
        return self._l2(self._traverse(now, len(lst) * self._sector_bytes), lst, READ, None, None,
                        sm_id % self.partitions, sm=sm_id, runs=runs) + self._back

    @property
    def first_back(self) -> float:
        """When the first line of the latest `read` was back at the SM (the TMA unit fills shared
        memory from then on); +inf where no line of it went through this GPU's L2 (a peer read)."""
        return self.l2.first_ready + self._back

    def write(self, now: float, sm_id: int, sectors, byte_masks=None) -> float:
        """Writes leaving the SM at `now` of the bytes `byte_masks[i]` (bit b: byte b; None:
        whole sectors) of `sectors[i]`; when the L2's acknowledgement is back."""
        lst = sectors if type(sectors) is list else as_list(sectors)
        masks = as_list(byte_masks) if byte_masks is not None else None
        if masks and min(masks) == FULL:                # whole sectors: the same as no masks, and faster
            masks = None
        return self._l2(self._traverse(now, len(lst) * self._sector_bytes), lst, WRITE, None, masks,
                        sm_id % self.partitions) + self._back

    def atomic(self, now: float, sm_id: int, sectors, reduction: bool = False, passes=None,
               float_op: bool = False) -> float:
        """Atomics performed at the L2 (`reduction`: RED, no value returned); when the result is back.
        `passes[i]`: the passes sector i is in (default one each; each carries the sector across
        the crossbar and is one read-modify-write at the L2); `float_op`: floating-point RMWs."""
        lst = as_list(sectors)
        pl = as_list(passes) if passes is not None else None
        t = self._traverse(now, (sum(pl) if pl is not None else len(lst)) * self._sector_bytes)
        return self._l2(t, lst, RED if reduction else ATOM, pl, part=sm_id % self.partitions,
                        float_op=float_op, sm=sm_id) + self._back

    # -- requests to a peer GPU's memory ----------------------------------------------------

    def _peer_setup(self, spec, sm_fraction: float, peer_ranges) -> None:
        ranges = sorted((int(a), int(b), int(p)) for a, b, p in peer_ranges if b > a)
        for (a0, b0, _), (a1, _, _) in zip(ranges, ranges[1:]):
            if a1 < b0:
                raise ConfigError(f"MemorySystem: peer sector ranges overlap at sector {a1:#x}")
        self.peer = PeerPort(spec, sm_fraction)
        self._peer_starts = [a for a, _, _ in ranges]
        self._peer_ends = [b for _, b, _ in ranges]
        self._peer_ids = [p for _, _, p in ranges]
        self._peer_lo, self._peer_hi = ranges[0][0], ranges[-1][1]
        self.read, self.write, self.atomic = self._peer_read, self._peer_write, self._peer_atomic

    def _owner(self, s: int) -> int:
        """The peer holding sector s, or -1 (local)."""
        i = bisect_right(self._peer_starts, s) - 1
        return self._peer_ids[i] if i >= 0 and s < self._peer_ends[i] else -1

    def _split(self, lst: list) -> dict[int, list[int]] | None:
        """None when every sector is local, else {owner: indices into lst} (owner -1: local)."""
        lo, hi = min(lst), max(lst)
        if hi < self._peer_lo or lo >= self._peer_hi:
            return None
        first = self._owner(lo)
        if first == self._owner(hi):
            i = bisect_right(self._peer_starts, lo) - 1
            if first < 0 and (i + 1 >= len(self._peer_starts) or self._peer_starts[i + 1] > hi):
                return None                       # lo and hi local with no peer range between them
            if first >= 0 and hi < self._peer_ends[i]:
                return {first: list(range(len(lst)))}
        parts: dict[int, list[int]] = {}
        for k, s in enumerate(lst):
            parts.setdefault(self._owner(s), []).append(k)
        return parts if set(parts) != {-1} else None

    def _peer_read(self, now: float, sm_id: int, sectors, runs: list | None = None) -> float:
        self.l2.first_ready = float("inf")
        lst = as_list(sectors)
        parts = self._split(lst) if lst else None
        if parts is None:
            return MemorySystem.read(self, now, sm_id, lst, runs)
        sb = self._sector_bytes
        t = self._traverse(now, len(lst) * sb)
        done = t
        for owner, idx in parts.items():
            if owner < 0:
                r = self._l2(t, [lst[k] for k in idx], READ, part=sm_id % self.partitions, sm=sm_id)
            else:
                r = self.peer.read(t, owner, len(idx) * sb)
            if r > done:
                done = r
        return done + self._back

    def _peer_write(self, now: float, sm_id: int, sectors, byte_masks=None) -> float:
        lst = as_list(sectors)
        parts = self._split(lst) if lst else None
        if parts is None:
            return MemorySystem.write(self, now, sm_id, lst, byte_masks)
        masks = as_list(byte_masks) if byte_masks is not None else None
        sb = self._sector_bytes
        t = self._traverse(now, len(lst) * sb)
        done = t
        for owner, idx in parts.items():
            if owner < 0:
                r = self._l2(t, [lst[k] for k in idx], WRITE, masks=[masks[k] for k in idx] if masks else None,
                             part=sm_id % self.partitions)
            else:                                 # whole sectors on the link (no byte-mask savings)
                r = self.peer.write(t, owner, len(idx) * sb)
            if r > done:
                done = r
        return done + self._back

    def _peer_atomic(self, now: float, sm_id: int, sectors, reduction: bool = False, passes=None,
                     float_op: bool = False) -> float:
        lst = as_list(sectors)
        parts = self._split(lst) if lst else None
        if parts is None:
            return MemorySystem.atomic(self, now, sm_id, lst, reduction, passes, float_op)
        pl = as_list(passes) if passes is not None else None
        sb = self._sector_bytes
        t = self._traverse(now, (sum(pl) if pl is not None else len(lst)) * sb)
        done = t
        for owner, idx in parts.items():
            if owner < 0:
                r = self._l2(t, [lst[k] for k in idx], RED if reduction else ATOM,
                             [pl[k] for k in idx] if pl else None, part=sm_id % self.partitions,
                             float_op=float_op, sm=sm_id)
            else:
                r = self.peer.atomic(t, owner, len(idx) * sb, reduction)    # the link: unchanged by passes (not measured)
            if r > done:
                done = r
        return done + self._back

    # -- sampled simulation: the whole L2's shared footprint (sampling/warming.py) -------------------

    def warm_shared(self, footprint) -> None:
        """Misses of the simulated share on lines of `footprint` (a sampling.warming.SharedFootprint)
        that the whole GPU's L2 would hold are filled without DRAM traffic; atomics on its
        shared lines contend with the whole grid's from the start (l2_atomics.py). The share's
        sets get the ways that the shared lines its blocks touch take beyond its part of them
        (`L2Slices.widen`), so that they do not crowd out what its blocks touch alone."""
        self.l2.footprint = footprint
        self.l2.atomics.footprint = footprint
        if self.sm_fraction < 1.0:
            self.l2.slices.widen(footprint.share_excess_lines(self.sm_fraction))

    def block_position(self, tau: float) -> None:
        """The next requests come from a block at grid position `tau` (block / grid blocks)."""
        self.l2.tau = tau

    # -- kernel boundaries and statistics -------------------------------------------------

    def flush(self) -> None:
        """Kernel end: queues forgotten (the next kernel may restart time at 0), L2 contents
        kept, dirty lines NOT written back (as on hardware)."""
        self.noc.flush()
        self.l2.flush()              # flushes the HBM queues too
        if self.peer is not None:
            self.peer.flush()

    def reset_counters(self) -> None:
        self.noc.reset_counters()
        self.l2.reset_counters()
        self.hbm.reset_counters()
        if self.peer is not None:
            self.peer.reset_counters()

    def counters(self, elapsed_cycles: float | None = None) -> dict[str, float]:
        """All units' counters under Nsight Compute names (gpusim__ for ones Nsight lacks);
        with `elapsed_cycles`, also the units' busy percentages."""
        out = {}
        out.update(self.noc.counters(elapsed_cycles))
        out.update(self.l2.counters(elapsed_cycles))
        out.update(self.hbm.counters(elapsed_cycles))
        if self.peer is not None:
            out.update(self.peer.counters(elapsed_cycles))
        owed = self.l2.phantom_correction_sectors() * self._sector_bytes
        if owed:                                # sampled simulation: stand-ins for unsimulated blocks' lines
            out["dram__bytes_write.sum"] += owed
            out["dram__sectors_write.sum"] += owed / self._sector_bytes
        return out


__all__ = ["MemorySystem", "READ", "WRITE", "ATOM", "RED"]
