"""The L2's stand-ins (a unit of `memory/l2.py`'s L2Cache, over its slices): lines the simulation does not hold that the real L2 would evict.

What is modelled:
- Sampled simulation: the simulated SMs' share of the L2 would, in the full launch, be
  full of earlier blocks' lines long before the simulated blocks end. When the caller
  says how many blocks of the share each simulated block stands for
  (`share_blocks_per_simulated` r > 1), a line allocated into a set with a free way
  once r * lines allocated so far reaches the capacity evicts a stand-in ("phantom")
  line instead: it writes back as many sectors as the kernel's own lines have dirtied
  per allocated line so far (a running rate, issued deterministically), at the address
  one full-GPU capacity before the new line (what LRU evicts in a stream). So write-back
  traffic is present in the simulated time. The running rate lags where lines are
  dirtied after they were allocated (read, then written); the counters therefore count
  the phantom evictions at the rate over the whole simulation
  (`phantom_correction_sectors`). DRAM write counters then scale with the blocks,
  including what the full L2 keeps dirty at the end.
- Dirty data at launch (`preload_dirty`, `TimingOptions.l2_dirty_bytes_at_launch`): lines a
  previous kernel or a profiler left dirty (Nsight Compute's multi-pass kernel replay leaves
  about 2.4 MB before every profiled kernel, `benchmarks/ncu_dirty_probe.py`). They sit at
  addresses no kernel uses, the least recently used of their sets, so the kernel's
  allocations evict them first; in sampled simulation the share holds its fraction of them
  and, once the whole L2 is full, each allocation evicts `share_blocks_per_simulated` of them.
  Only the counters see their write-back (`residue_written_bytes`, whole-GPU bytes that no
  sampling scales): a few MB against the tens of MB a kernel must move to evict them.
- Traffic that loop sampling left out (`skipped_traffic_writebacks`): when the timing model
  simulates 1/s of a loop's loads and stores, the L2 sees 1/s of the allocations they
  make, so dirty lines that the left-out accesses would have evicted are still in the share
  at the end (matmul 4096^3: C written after the k loop, evicted on the GPU by the next
  blocks' 16 GB of A and B; 1/14 of it simulated). A line at LRU depth d of its set, after
  whose last use the set allocated a lines, has seen about d + (s - 1) a lines allocated
  or used after it in the real run: at ways or more it was evicted (lines reused in every
  iteration, a local frame or a footprint that fits, were used lately and stay), and its
  dirty sectors are counted as written back (with the read of a read-modify-write for
  bytes never fetched). The phantoms stand for the dirty lines
  earlier blocks left in the share; the left-out loads would have evicted those before
  the simulated blocks came, in the same proportion, so the phantom write-backs shrink
  by the share of the held dirty sectors counted here (matmul_tiled 4096^3 on H200:
  53.5 -> 66.9 MB, 69.5 measured; counting them without that, 100.6). Counted, not timed.

Sources: the H100/H200 counters in data/measurements and benchmarks/results/ncu_dirty_probe_*.json.
"""
from __future__ import annotations

from collections import deque

from gpusim.timing.memory.l2_writeback import unfetched

NEG_INF = float("-inf")


class StandIns:
    """The phantom evictions and the dirty lines at launch of one L2's slices
    (`l2_slices.L2Slices`, whose sets it fills and empties and whose allocation counts it reads;
    the slices call `evicted`, `full` and `make_room` as they allocate)."""

    def __init__(self, slices, hbm, share_blocks_per_simulated: float, full_lines: int):
        self.slices = slices
        self.hbm = hbm
        self.share_ratio = share_blocks_per_simulated
        self.full_lines = full_lines             # the whole GPU's L2, in lines
        self.phantom_allocs = 0                  # allocations that evicted a phantom line
        self._credit = 0.0
        self.residue: deque = deque()            # lines of preload_dirty, oldest first (some may be gone)
        self._residue_range = (0, 0)             # their line indices
        self._residue_evicted = 0
        self._residue_placed = 0
        self._residue_bytes = 0
        self._residue_credit = 0.0
        self.phantom_sectors = 0

    def reset_counters(self) -> None:
        self.phantom_sectors = 0

    # -- called by the slices as they allocate ----------------------------------------------

    def evicted(self, line: int) -> None:
        """The slices evicted `line` (their LRU way)."""
        lo, hi = self._residue_range
        if lo <= line < hi:
            self._residue_evicted += 1

    def full(self, allocated: int) -> bool:
        """Sampled simulation: whether the whole L2 is full once the share allocated `allocated`
        lines (each stands for `share_blocks_per_simulated` of the whole GPU's)."""
        return self.share_ratio > 1.0 and allocated * self.share_ratio >= self.slices.capacity_lines

    def make_room(self, t: float, line: int) -> float:
        """An allocation into a free way once the whole L2 is full: the oldest lines go first
        (those of `preload_dirty`), then a phantom is evicted; when its write-back leaves."""
        if self.residue:
            self._evict_residue()
        self.phantom_allocs += 1
        return self._phantom(t, line)

    # -- dirty lines at launch ----------------------------------------------------------------

    def preload_dirty(self, nbytes: int) -> int:
        """Start with `nbytes` (the whole GPU's; this share holds its fraction) of dirty lines at
        addresses no L2 request uses (from byte 2^44 up: the shared-memory window), the least
        recently used of their sets, as a previous kernel or a profiler's memory restore leaves
        them: the kernel's allocations evict them first. Only the counters see their write-back
        (`residue_written_bytes`: the share of `nbytes` evicted, for the whole GPU, neither scaled
        by sampling nor timed: a few MB against the tens of MB a kernel must move to evict them).
        Lines that find their set full are left out. Returns the lines placed."""
        sl = self.slices
        spl = sl.sectors_per_line
        want = round(nbytes * sl.capacity_lines / self.full_lines) // (spl * sl.sector_bytes)
        base = (1 << 44) >> (sl.line_shift + sl.sector_bytes.bit_length() - 1)
        for line in range(base, base + want):
            od = sl.sets[sl.home_of(line)][sl.set_of(line)]
            if len(od) >= sl.ways or line in od:
                continue
            od[line] = [NEG_INF] * spl + [0, None, False, od.allocs]     # clean here: counted, not timed
            self.residue.append(line)
        self._residue_range = (base, base + want)
        self._residue_placed = len(self.residue)
        self._residue_bytes = nbytes
        return self._residue_placed

    def residue_written_bytes(self) -> float:
        """Bytes of `preload_dirty` written back so far, for the whole GPU."""
        placed = self._residue_placed
        return self._residue_bytes * self._residue_evicted / placed if placed else 0.0

    def _evict_residue(self) -> None:
        """Sampled simulation, once the whole L2 is full: each allocation stands for
        `share_blocks_per_simulated` (r) allocations of the share, which evict r of the oldest
        lines, those of `preload_dirty` first."""
        sl = self.slices
        self._residue_credit += self.share_ratio
        while self._residue_credit >= 1.0 and self.residue:
            self._residue_credit -= 1.0
            line = self.residue.popleft()
            if sl.sets[sl.home_of(line)][sl.set_of(line)].pop(line, None) is not None:
                self._residue_evicted += 1

    # -- the unsimulated blocks' lines ----------------------------------------------------------

    def _phantom(self, t: float, line: int) -> float:
        """A stand-in for a line of an unsimulated block evicted by this allocation (see the
        module docstring): write back the kernel's running dirty sectors per allocated line."""
        sl = self.slices
        if not sl.allocated:
            return t
        self._credit += sl.dirtied_sectors / sl.allocated
        if self._credit < 1.0:
            return t
        hbm = self.hbm
        # the write-backs the stand-ins stand for: bursts of as many dirty sectors as the kernel's own
        n = max(1, min(hbm.sectors_per_burst, round(sl.dirtied_sectors / max(sl.dirtied_bursts, 1))))
        if self._credit < n:
            return t
        old = line - self.full_lines
        burst = (old if old > 0 else line) << sl.line_shift >> hbm.burst_shift
        done = t
        while self._credit >= n:
            self._credit -= n
            self.phantom_sectors += n
            a = hbm.write_burst(t, burst, n)
            if a > done:
                done = a
            burst += 1
        return done

    def skipped_traffic_writebacks(self, scale: float) -> tuple[float, int]:
        """Loop sampling (1 in `scale` of the loads and stores simulated): (dirty sectors written
        back, of them read first) that the left-out allocations add: the home lines at LRU
        depth d, after whose last use their set allocated a lines, with d + (scale - 1) a >=
        ways, less the same share of the phantom write-backs (see the module docstring)."""
        if scale <= 1.0:
            return 0.0, 0
        sl = self.slices
        spl, ways = sl.sectors_per_line, sl.ways
        written = partial = held = 0
        more = scale - 1.0
        for sets in sl.sets:
            for od in sets:
                for depth, ent in enumerate(reversed(od.values())):
                    d = ent[spl]
                    if not d or ent[spl + 2]:
                        continue
                    n = bin(d).count("1")
                    held += n
                    if depth + more * (od.allocs - ent[spl + 3]) < ways:
                        continue
                    written += n
                    partial += sum(1 for k in range(spl) if d >> k & 1 and unfetched(ent, k, spl))
        if not written:
            return 0.0, 0
        phantoms = self.phantom_sectors + self.phantom_correction_sectors()
        return written - phantoms * written / held, partial

    def phantom_correction_sectors(self) -> float:
        """Phantom write-backs still owed, in 32-B sectors: the sectors the phantom evictions
        stand for at the kernel's dirtying rate over the whole simulation, minus those issued
        at the running rate (which lags where lines are dirtied after they are allocated)."""
        sl = self.slices
        if not sl.allocated:
            return 0.0
        return self.phantom_allocs * sl.dirtied_sectors / sl.allocated - self.phantom_sectors
