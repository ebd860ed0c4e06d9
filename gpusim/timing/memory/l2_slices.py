"""The L2's slices: where each 128-B line lives, its tags (sets of LRU ways), the slices'
bandwidth, and the lookup of a line's sectors at its home slice.

What is modelled (the cache's rules, see `l2.py`):
- Placement. `slices` slices (the simulated share, `l2.py`) in `partitions` equal groups;
  line -> slice g = `hashing.unit_of(line, slices)`, home partition g // slices-per-partition,
  set `unit_of(line // slices, sets_in_slice)` within slice g mod slices-per-partition
  (memoised: `locate`). Every partition has the same sets: a home line and a far line's
  copy (`l2_partitions.py`) use the same set index.
- Tags. Each set is an `LRUSet` of at most `associativity` ways, least recently used
  first; an entry is a list [sector valid-from times..., dirty sector bits, partial byte
  masks {sector: [valid bytes, dirty bytes]}, warm, `allocs` at its last use]. Allocating
  into a full set evicts its LRU way: a dirty home line is written back (`l2_writeback.py`)
  and the allocation waits for DRAM to take it (`stall`); a set with a free way may make
  room for the lines of unsimulated blocks (`sampling/standins.py`, sampled simulation).
- Lookup at the home slice (`lookup`): a write makes its bytes valid and dirty (a partial
  write to an absent sector allocates it without a fill, with only the written bytes
  valid); a read of a sector not wholly valid fetches its DRAM burst, which fills every
  sector of the burst not wholly valid (merged under the dirty bytes); a read of a sector
  whose fill is on its way waits for it; atomics read, then each sector's passes take their
  turns at the atomic unit of its line's granule (`l2_atomics.py`).
- Write allocation's wait: a write finding no sector of its line (just allocated; a line a read
  allocated, or a sector added to a line a write allocated, does not count) is told to
  `write_wait` (`l2_write_wait.WriteAllocationWait`), and a read miss goes on to DRAM after the
  wait it gives for the slice (docs/mechanisms_24.md section 45).
- Counters: hits and misses per source (an SM's L1, or the fabric) and operation, an atomic
  sector once per pass (its further passes find it); the sectors and DRAM bursts of home
  lines that went from clean to dirty (warm lines excepted: the stand-ins' rate).

Not modelled: MSHRs and queue limits (only bandwidth limits a slice), replacement hints,
the real hash.
"""
from __future__ import annotations

import math
from collections import OrderedDict

from gpusim.timing.memory.hashing import MEMO_ENTRIES, unit_of
from gpusim.timing.memory.l2_partial_lines import PartialLines
from gpusim.timing.memory.l2_write_wait import WriteAllocationWait
from gpusim.timing.memory.servers import BandwidthServer
from gpusim.timing.sampling.warming import COLD, HELD

NEG_INF = float("-inf")
READ, WRITE, ATOM, RED = 0, 1, 2, 3      # operations (an atomic is ATOM or RED)
FULL = 0xFFFFFFFF                        # every byte of a 32-B sector
TEX, FABRIC = 0, 1                       # where a lookup came from: an SM's L1, or the other partition


class LRUSet(OrderedDict):
    """One set's lines, least recently used first: line -> entry [sector valid-from times...,
    dirty sector bits, partial byte masks, warm, `allocs` at its last use]; `allocs` counts
    the lines allocated into the set so far."""
    __slots__ = ("allocs",)

    def __init__(self):
        super().__init__()
        self.allocs = 0


class L2Slices:
    """The tags and bandwidth of every simulated slice; `lookup` a line's sectors at its home.
    `writeback` (l2_writeback.WriteBack), `standins` (sampling.standins.StandIns) and `atomics`
    (l2_atomics.AtomicUnits) are the units an allocation or an atomic pass calls on."""

    def __init__(self, spec, sm_fraction: float, hbm, atomics, writeback):
        l2 = spec.l2
        self.partitions = l2.partitions
        # sampled simulation: the simulated SMs' share of the slices, each as fast as on the whole GPU
        self.slices_per_partition = spp = max(1, round(l2.slices * sm_fraction / l2.partitions))
        self.slices = spp * l2.partitions
        self.ways = l2.associativity
        self.sector_bytes = l2.sector_bytes
        self.sectors_per_line = l2.line_bytes // l2.sector_bytes
        self.line_shift = self.sectors_per_line.bit_length() - 1
        sets = max(self.slices, round(l2.size_bytes // (l2.line_bytes * l2.associativity) * sm_fraction))
        per_part = sets // self.partitions
        per, extra = divmod(per_part, spp)
        self.sets_in_slice = [per + (i < extra) for i in range(spp)]          # within one partition
        self.geometry = [(i * per + min(i, extra), self.sets_in_slice[i]) for i in range(spp)]
        self.capacity_lines = per_part * self.partitions * self.ways
        self.capacity_bytes = self.capacity_lines * l2.line_bytes
        self.bytes_per_cycle = l2.bandwidth_bytes_per_cycle_per_slice * l2.slices * sm_fraction
        bw = self.bytes_per_cycle / self.slices          # rounding the count keeps the total
        self.servers = [BandwidthServer(bw, 0.0, name=f"L2.slice[{i}]") for i in range(self.slices)]
        # written data: a port of its own at each slice (`l2.write_port`), or the same servers; a write's bytes
        # come scaled by bandwidth / write bandwidth either way (l2.py)
        self.write_servers = ([BandwidthServer(bw, 0.0, name=f"L2.slice[{i}].write") for i in range(self.slices)]
                              if l2.write_port else self.servers)
        self.sets = [[LRUSet() for _ in range(per_part)] for _ in range(self.partitions)]
        self.memo: dict[int, int] = {}         # line -> its set << 20 | slice (speed: hashing.py's memos)
        self.atomic_latency_cycles = l2.atomic_latency_cycles
        self.fill_cost = l2.fill_cost_bytes_per_byte    # a DRAM fill's bytes booked at its home slice, per byte
        self.fabric_latency_cycles = l2.fabric_latency_cycles
        self.write_wait = WriteAllocationWait(spec, self.slices)   # a read miss's wait behind lines writes allocated
        # the lines with partly written sectors each slice keeps (l2_partial_lines.py; None: no limit)
        self.partial = PartialLines(spec, self, hbm) if l2.partial_lines_per_slice else None
        self.hbm = hbm
        self.atomics = atomics
        self.writeback = writeback
        self.standins = None                     # sampling.standins.StandIns, set by the cache that builds both
        self.footprint = None                    # sampled simulation: a sampling.warming.SharedFootprint, set by the engine
        self.tau = 0.0                           # grid position (block / blocks) of the requesting SM's block
        self.stall = NEG_INF                     # set by an allocation whose victim's write-back had to wait
        self.allocated = 0                       # lines allocated (homes and copies; not warm ones)
        self.dirtied_sectors = 0                 # sectors of home lines that went from clean to dirty
        self.dirtied_bursts = 0                  # DRAM bursts of home lines that went from clean to dirty
        self.reset_counters()

    def widen(self, lines: float) -> int:
        """Sampled simulation: room for `lines` more lines in every partition (a shared line
        is held in each partition whose SMs read it: its home and the copies), as ways added
        to every set (the sets and the placement unchanged, so the lines already placed stay
        where they are); the ways added. What the share's scaled capacity lacks for the
        shared regions the sample touches (`warming.SharedFootprint.share_excess_lines`);
        `capacity_lines` stays the share of the whole L2 (the stand-ins' measure)."""
        sets = sum(len(p) for p in self.sets)
        add = math.ceil(lines * self.partitions / sets) if lines > 0 and sets else 0
        self.ways += add
        return add

    # -- placement ----------------------------------------------------------------------

    def home_of(self, line: int) -> int:
        """The partition a 128-B line index is homed in."""
        return unit_of(line, self.slices) // self.slices_per_partition

    def set_of(self, line: int) -> int:
        """The set (within a partition) a 128-B line index uses."""
        first, nsets = self.geometry[unit_of(line, self.slices) % self.slices_per_partition]
        return first + unit_of(line // self.slices, nsets)

    def locate(self, line: int) -> tuple[int, int, int]:
        """(set, home partition, slice within a partition) of a line: `set_of`, `home_of`, memoised."""
        memo = self.memo
        where = memo.get(line)                          # the line's set x << 20 | slice g
        if where is None:                               # g = unit_of(line, slices), x = set_of(line), inlined
            nslices = self.slices
            q = line // nslices
            g = (line - q * nslices + (q ^ (q >> 3) ^ (q >> 7) ^ (q >> 12) ^ (q >> 18) ^ (q >> 25))) % nslices
            home, s = divmod(g, self.slices_per_partition)
            first, nsets = self.geometry[s]
            x = q // nsets
            x = first + (q - x * nsets + (x ^ (x >> 3) ^ (x >> 7) ^ (x >> 12) ^ (x >> 18) ^ (x >> 25))) % nsets
            if len(memo) >= MEMO_ENTRIES:
                memo.clear()
            memo[line] = (x << 20) | g                  # one int, not a tuple: tuples outlive young collections
            return x, home, s                           # and made the next launch pay a full one
        home, s = divmod(where & 0xFFFFF, self.slices_per_partition)
        return where >> 20, home, s

    # -- tags ---------------------------------------------------------------------------

    def entry(self, p: int, line: int, x: int, ts: float, alloc: bool = True) -> list | None:
        """The line's entry in set x of partition p (allocated, evicting the LRU way, if absent)."""
        od = self.sets[p][x]
        ent = od.get(line)
        if ent is None:
            return self.allocate(od, line, ts) if alloc else None
        od.move_to_end(line)
        ent[self.sectors_per_line + 3] = od.allocs
        return ent

    def allocate(self, od: LRUSet, line: int, ts: float, far: bool = False) -> list:
        """A new entry for the line in set od, evicting its LRU way if the set is full (a wait
        for the victim's write-back is left in `stall`)."""
        spl = self.sectors_per_line
        fp = self.footprint
        state = fp.warm_state(line, self.tau, self.hbm.congested) if fp is not None else COLD
        warm = state != COLD
        standins = self.standins
        if len(od) >= self.ways:
            vline, vent = od.popitem(last=False)
            if standins.residue:
                standins.evicted(vline)
            if self.partial is not None and vent[spl + 1]:
                _, home, vs = self.locate(vline)
                self.partial.forget(home * self.slices_per_partition + vs, vline, vent)
            if vent[spl]:
                if fp is not None and fp.warm(vline, self.tau):
                    self.warm_kept_lines += 1      # the whole L2 still holds it: no write-back yet
                else:
                    self.stall = self.writeback.write_back(ts, vline, vent)
        elif not warm and standins.full(self.allocated):
            self.stall = standins.make_room(ts, line)
        od.allocs += 1
        ent = [None] * spl + [0, None, warm, od.allocs]
        od[line] = ent
        if warm and self.partial is None and not fp.whole(line):   # only stored to: the other SMs' bytes, not whole sectors
            self.warm_fills += 1
        elif warm:                                      # valid from the other SMs' accesses (sampling/warming.py)
            # held, or (IN_FLIGHT) on its way from DRAM for a block of the same wave: ready when the
            # DRAM would return that fetch (HBM.peek_read; a far line's copy: two fabric crossings more)
            if state == HELD:
                held = (fp.held_sectors(line, self.tau, spl, self.hbm.congested)      # with the limit: the
                        if self.partial is not None and not fp.whole(line) else -1)   # sectors completed
                for k in range(spl):
                    if held >> k & 1:
                        ent[k] = NEG_INF
            else:
                hbm = self.hbm
                per = hbm.sectors_per_burst
                extra = 2 * self.fabric_latency_cycles if far else 0.0
                burst = line * spl >> hbm.burst_shift
                for k in range(0, spl, per):            # one fetch per burst of the line
                    ready = hbm.peek_read(ts, burst) + extra
                    burst += 1
                    for kk in range(k, min(k + per, spl)):
                        ent[kk] = ready
            self.warm_fills += 1
        else:
            self.allocated += 1
        return ent

    def dirty(self, ent, k: int) -> None:
        """Sector k of a home line is written (counted for the stand-ins if it was clean)."""
        spl = self.sectors_per_line
        d = ent[spl]
        if not d >> k & 1:
            if not ent[spl + 2]:
                self.dirtied_sectors += 1
                bsh = self.hbm.burst_shift
                base = (k >> bsh) << bsh
                if not (d >> base) & ((1 << (1 << bsh)) - 1):
                    self.dirtied_bursts += 1
            ent[spl] = d | 1 << k

    def dirty_bytes(self) -> int:
        """Bytes the slices hold dirty now (what a kernel leaves behind)."""
        spl = self.sectors_per_line
        n = 0
        for sets in self.sets:
            for od in sets:
                for ent in od.values():
                    d = ent[spl]
                    if d:
                        pm = ent[spl + 1]
                        for k in range(spl):
                            if d >> k & 1:
                                n += bin(pm[k][1]).count("1") if pm and k in pm else 32
        return n

    # -- the lookup at the home slice -----------------------------------------------------

    def lookup(self, ent, ts, lst, i, j, op, ops, masks, src, float_op=False, sm=0, si=-1, clean=False) -> float:
        """Sectors lst[i:j] of one line at its home slice (entry `ent`, slice index `si`), looked up
        at ts; their ready time. `ops`: an atomic's passes per sector (None: one each); `masks`: a
        write's byte masks (None: whole sectors); `float_op`, `sm`: an atomic's kind and requesting
        SM. A miss's DRAM burst, when it arrives, books `fill_cost` of its bytes at slice `si`: the
        fill writes the slice's data array (validate/l2_fill_probe.py). `clean`: a write whose bytes
        stay dirty in the writer's near copy (`l2.far_writes_dirty_at_writer`): valid here, not dirty."""
        spl = self.sectors_per_line
        mask = spl - 1
        hits = misses = 0
        pm = ent[spl + 1]
        if op == WRITE:                                 # a write is ready at ts
            ww = self.write_wait
            fresh = ww.enabled and si >= 0 and ent[0] is None and all(ent[k] is None for k in range(1, spl))
            d, warm = ent[spl], ent[spl + 2]
            bsh = self.hbm.burst_shift
            burst_bits = (1 << (1 << bsh)) - 1
            dirtied = bursts = 0
            for idx in range(i, j):
                k = lst[idx] & mask
                m = masks[idx] if masks is not None else FULL
                if ent[k] is None:
                    misses += 1
                    ent[k] = ts
                    if m != FULL:
                        if pm is None:
                            pm = ent[spl + 1] = {}
                        pm[k] = [m, 0 if clean else m]
                else:
                    hits += 1
                    if pm and k in pm:
                        e = pm[k]
                        e[0] |= m
                        if not clean:
                            e[1] |= m
                        if e[0] == FULL and (e[1] == FULL or (clean and not d >> k & 1)):
                            del pm[k]
                    elif m != FULL and not (d >> k & 1) and not clean:    # valid, clean: now partly dirty
                        if pm is None:
                            pm = ent[spl + 1] = {}
                        pm[k] = [FULL, m]
                if clean:
                    continue
                if not d >> k & 1:                      # self.dirty(ent, k), inlined (hot path)
                    if not warm:
                        dirtied += 1
                        if not (d >> ((k >> bsh) << bsh)) & burst_bits:
                            bursts += 1
                    d |= 1 << k
            ent[spl] = d
            if dirtied:
                self.dirtied_sectors += dirtied
                self.dirtied_bursts += bursts
            if pm is not None and not pm:
                ent[spl + 1] = pm = None
            done = ts
            if self.partial is not None and si >= 0 and not clean:
                done = self.partial.note(ent, pm, lst[i] >> self.line_shift, si, ts)
            self.hits[src][WRITE] += hits
            self.misses[src][WRITE] += misses
            if fresh:                                   # its line just allocated: the slice's read misses wait
                ww.allocated(si, ts)
            return done
        hbm = self.hbm
        bsh, bmask = hbm.burst_shift, hbm.sectors_per_burst - 1
        fp = self.footprint
        latest = ts
        tq = None                                       # when a miss goes on to DRAM (behind the slice's write misses)
        for idx in range(i, j):
            s = lst[idx]
            k = s & mask
            r = ent[k]
            valid = r is not None and (pm is None or k not in pm or pm[k][0] == FULL)
            if not valid:
                misses += 1
                if tq is None:
                    tq = ts + self.write_wait.wait(si, ts) if si >= 0 and self.write_wait.enabled else ts
                r = hbm.read_burst(tq, s >> bsh)
                if self.fill_cost and si >= 0:          # the fill takes the home slice's data array
                    self.servers[si].serve(r, hbm.granularity_bytes * self.fill_cost)
                if fp is not None:                  # what the sampled share fetched (sampling/warming.py)
                    fp.count_dram(s // spl)
                base = (k >> bsh) << bsh            # fill every sector of the burst not wholly valid
                for kk in range(base, base + bmask + 1):
                    if ent[kk] is None:
                        ent[kk] = r
                    elif pm and kk in pm:
                        e = pm[kk]
                        if e[0] != FULL:
                            ent[kk] = r
                            e[0] = FULL
                            if e[1] == FULL or e[1] == 0:
                                del pm[kk]
            elif r > ts:
                misses += 1                         # fill in flight: wait for it, no new fetch
            else:
                hits += 1
                r = ts
            if op != READ:                          # the sector's passes at the line's atomic unit
                p = ops[idx] if ops is not None else 1
                hits += p - 1                       # each further pass is a lookup that finds it
                r = self.atomics.rmw(r, s >> self.line_shift, s, p, float_op, sm) + self.atomic_latency_cycles
                self.dirty(ent, k)
            if r > latest:
                latest = r
        if pm is not None and not pm:
            ent[spl + 1] = None
            if self.partial is not None and si >= 0:
                self.partial.forget(si, lst[i] >> self.line_shift)
        self.hits[src][op] += hits
        self.misses[src][op] += misses
        return latest

    @property
    def all_servers(self) -> list:
        """The reads' servers, and the write ports where they are separate."""
        return self.servers if self.write_servers is self.servers else self.servers + self.write_servers

    # -- kernel boundaries ----------------------------------------------------------------

    def flush(self) -> None:
        """Queues forgotten and every fill counted as arrived; contents and dirty lines kept."""
        for s in self.all_servers:
            s.clear_bookings()
        self.write_wait.flush()
        spl = self.sectors_per_line
        for sets in self.sets:
            for od in sets:
                for ent in od.values():
                    for k in range(spl):
                        if ent[k] is not None:
                            ent[k] = NEG_INF

    def reset_counters(self) -> None:
        self.hits = [[0, 0, 0, 0], [0, 0, 0, 0]]        # [src][op]
        self.misses = [[0, 0, 0, 0], [0, 0, 0, 0]]
        self.warm_fills = 0                      # lines allocated valid: the whole GPU's L2 holds them
        self.warm_kept_lines = 0                 # dirty lines evicted without a write-back, for the same reason
        if self.partial is not None:
            self.partial.reset_counters()
        for s in self.all_servers:
            s.reset_stats()
