"""The L2 cache: partitions of hashed slices, sectored, set-associative, LRU, write-back,
write-allocate with byte masks.

What is modelled:
- Slices and partitions. `spec.l2.slices` slices in `partitions` equal groups. A 128-B
  line's slice is g = `hashing.unit_of(line, slices)`; its home partition is the group
  holding g. Each SM is attached to one partition, its near one (`part`, the caller
  passes `sm_id % partitions`). The `size / (line * ways)` sets (at least one per
  slice) are split evenly over the partitions and dealt to the slices of each as evenly
  as they go; a line uses set `unit_of(line // slices, sets_in_slice)` of slice
  `g mod slices-per-partition` of a partition (hashed too, so that power-of-two
  strides use every set even where few slices are simulated), and where the sets
  divide evenly a contiguous range of the whole capacity fits exactly in its homes. In sampled
  simulation (`sm_fraction` < 1) the simulated SMs get that fraction of the slices
  (rounded, at least one per partition, each at full speed, the total bandwidth
  exactly the fraction) and of the sets.
- Near and far (H100/H200/A100: two partitions): an SM's request is looked up in its
  near partition (one `lts__t_sectors` count); lines homed in the far partition are
  served from a near copy or cross the partition fabric to their home, where they
  count again (`l2_partitions.py`). Only homes are ever dirty.
- Each slice: `associativity` ways, LRU (an `LRUSet` per set, most recent last),
  lines of `line_bytes / sector_bytes` sectors. A sector is invalid or valid from a
  time (its fill time: a sector whose fill is still on its way merges the new request,
  which waits for the fill - the L2's own miss merging). Per sector the L2 keeps which
  bytes are valid and which are dirty (byte masks from the stores, bit b = byte b):
  * a write of a whole sector needs no fill: valid, dirty;
  * a partial write to an absent sector allocates it without a fill, with only the
    written bytes valid and dirty; later writes OR their bytes in (beyond a slice's
    `partial_lines_per_slice` such lines, completed by DRAM read-modify-writes);
  * a read of a sector not wholly valid misses: the DRAM burst is fetched and merged
    under the dirty bytes;
  * a write that covers part of an ECC granule (`ecc_granule_bytes`, the L2 data
    word) of a sector its home does not hold whole costs its slice a second sector of
    bandwidth (read, merge, write back; `l2_writeback.py`).
- Requests: a slice looks up about one line request a cycle whatever its sectors, so a read's
  lookup at its near slice takes at least one request's share of the slice's bandwidth
  (`requests_per_cycle_per_slice`, 0.92 on the H200: 1-sector requests reach 151 sectors a ns,
  2- and 4-sector ones the bytes' 281; data/measurements/l2_request_rate_h200.json).
- Bandwidth: one `BandwidthServer` per slice of `bandwidth_bytes_per_cycle_per_slice`;
  a lookup books `sectors * sector_bytes` there once per line it touches (a write
  scaled up to take `write_bandwidth_bytes_per_cycle_per_slice`); the booking start
  `ts` is the lookup time (with `write_port`, a write books a server of its own at the
  slice, the same bytes, so that written data does not take the reads' bandwidth; off in
  every preset). A DRAM fill writes the line's home slice when its burst arrives and books
  `fill_cost_bytes_per_byte` of its bytes there (0.4 on the H200, 0.15 on the H100:
  L2-resident loads mixed 8:1 .. 2:1 with streamed ones lose lookups as the fills rise,
  data/measurements/l2_fill_h{200,100}.json, `validate/l2_fill_probe.py`); a far line's copy
  is filled through the fabric without it.
- Timing, from the arrival `t` at the near slice (`pipeline_latency_cycles` = P, which
  `MemorySystem` sets to `l2.hit_latency_cycles - 2 * noc.latency_cycles` so that a near
  hit's load-to-use latency seen by the SM is exactly `l2.hit_latency_cycles`):
    hit:     data leaves the slice at max(ts, sector fill time) + P
    miss:    one HBM burst read issued at ts + W; data leaves at HBM completion + P. W: the wait behind
             the lines writes allocated at the slice lately (`write_miss_read_wait_ns_per_gline_per_s` ns
             per G such lines a second GPU-wide, judged from the slice's own rate over about
             `l2_write_wait.WINDOW_CYCLES`; data/measurements/copy_latency_h{200,100}_run*.json:
             reads that miss wait 195 (H200) / 250-290 (H100) cycles more per TB/s of stores that
             allocate their lines, whole or one sector; stores into lines the L2 holds, and reads
             that hit, next to none; the cause inside the L2 is not known, so the law is the measured one)
    far:     + 2 * fabric_latency_cycles (and the fabric's queue: a far read's lookup at
             its home takes the fabric's bandwidth, not the home slice's)
    write:   acknowledged at ts + P (far: at the home's booking + fabric latency + P)
    atomic:  as a read, then the read-modify-writes at the home: each sector's passes (the
             L1 splits a warp's lanes into passes of at most one lane per address) take
             their turns at the atomic unit of the line's 512-B granule
             (`l2_atomics.py`); the result is ready `atomic_latency_cycles` after the
             last pass starts. Each pass holds its home slice for the unit's time and a
             far line's near slice for `l2.atomic_near_slice_cycles_per_pass`.
  A request's time is the latest over its sectors.
- Misses fetch whole HBM bursts (`hbm.access_granularity_bytes`); with 64-B bursts the
  sibling sector of the pair is filled too (sector promotion).
- The cache is a composition of units, each with its own state: the slices' tags,
  bandwidth and home lookup (`l2_slices.py`), the partition fabric and near copies
  (`l2_partitions.py`), write-back of evicted dirty lines and ECC-granule costs
  (`l2_writeback.py`), partly written lines (`l2_partial_lines.py`), the atomic units
  (`l2_atomics.py`), the read misses' wait behind lines
  writes allocated (`l2_write_wait.py`), and, for sampled simulation
  and dirty data at launch, stand-in ("phantom") evictions for the unsimulated blocks'
  lines and lines left dirty before the kernel (`../sampling/standins.py`). This module routes
  a request: near slice booking, then the home slice or the fabric.
- Shared footprints in sampled simulation (`footprint`, a sampling.warming.SharedFootprint set
  by the engine; `tau`, the requesting block's grid position): a line the whole GPU's L2
  would hold is allocated valid (no DRAM fill, no phantom), and evicted dirty without a
  write-back (`gpusim__l2_warm_fill_lines.sum`, `gpusim__l2_warm_kept_lines.sum`).
- Counters (Nsight names): `lts__t_sectors.sum` (all ops; an atomic sector once per pass),
  `lts__d_atomic_input_cycles_active.sum` (passes at their home units), `lts__t_sectors_op_{read,write,atom,red}.sum`
  and their `_lookup_hit`/`_lookup_miss`, `lts__t_sectors_srcunit_tex{,_lookup_hit,_lookup_miss}.sum`
  (lookups for SMs, in their near partition), `lts__t_sectors_srcunit_tex_op_read_lookup_{hit,miss}.sum`,
  `lts__t_sectors_srcunit_ltcfabric{,_lookup_hit,_lookup_miss}.sum` (lookups arriving from
  the other partition), `lts__t_sector_hit_rate.pct`, `lts__t_sector_op_read_hit_rate.pct`;
  `gpusim__l2_rmw_bursts.sum`, `gpusim__l2_partial_write_sectors.sum`,
  `gpusim__l2_phantom_writeback_sectors.sum`, `gpusim__l2_fabric_bytes.sum`. A lookup hits when
  the sector's data is already in the slice; one whose fill is still in flight counts
  as a miss (but makes no new HBM request).

Not modelled: L2 MSHR and queue limits (only bandwidth limits the slice), replacement
hints (evict-first / evict-last), compression, residency control, the real hash, and
where exactly NVIDIA keeps far data (the copies here are an inference from Nsight's
counters: 1.5x lookups, about 1.2x for re-read far data, and the dirty data left).

Sources: [H100-WP] NVIDIA H100 Tensor Core GPU Architecture (2022), 50 MB L2;
[A100-WP] (2020): "each L2 partition localizes and caches data for memory accesses
from SMs in the GPCs directly connected to the partition", hardware cache coherence;
Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking" (2018)
and "Dissecting the NVIDIA Turing T4 GPU" (2019): sectored 32-B L2, hashed slices, LRU;
Nsight Compute Kernel Profiling Guide, metrics reference (lts__ names, srcunit ltcfabric);
the measured H100/H200 counters in data/measurements (see DEVIATIONS.md).
"""
from __future__ import annotations

from gpusim.errors import ConfigError
from gpusim.timing.memory.gpc_merge import GpcMerge
from gpusim.timing.memory.hbm import HBM
from gpusim.timing.memory.l2_atomics import AtomicUnits
from gpusim.timing.memory.l2_partitions import PartitionFabric
from gpusim.timing.memory.l2_queue import QueuedReads
from gpusim.timing.memory.l2_slices import ATOM, FABRIC, NEG_INF, READ, RED, TEX, WRITE, L2Slices, LRUSet
from gpusim.timing.sampling.standins import StandIns
from gpusim.timing.memory.l2_writeback import WriteBack

INF = float("inf")

__all__ = ["L2Cache", "LRUSet", "as_list"]
_OPS = ("read", "write", "atom", "red")


def as_list(sectors) -> list:
    """A numpy array or any sequence of sector indices as a list of Python ints."""
    return sectors.tolist() if hasattr(sectors, "tolist") else list(sectors)


class L2Cache:
    """`read`, `write`, `atomic` (t, sectors, part) -> time the data/ack leaves the near slice.
    Units: `slices` (L2Slices), `fabric` (PartitionFabric), `writeback` (WriteBack),
    `atomics` (AtomicUnits), `standins` (StandIns), `hbm`."""

    def __init__(self, spec, hbm: HBM | None = None, sm_fraction: float = 1.0, *,
                 pipeline_latency_cycles: float | None = None,
                 share_blocks_per_simulated: float = 1.0):
        l2 = spec.l2
        if l2.sector_bytes != spec.l1.sector_bytes:
            raise ConfigError("L2Spec.sector_bytes must equal L1Spec.sector_bytes (sector indices are shared)")
        if l2.sector_bytes != 32:
            raise ConfigError(f"L2Spec.sector_bytes must be 32 (byte masks are 32 bits), got {l2.sector_bytes}")
        if not 0 < sm_fraction <= 1:
            raise ConfigError(f"sm_fraction must be in (0, 1], got {sm_fraction!r}")
        if not share_blocks_per_simulated >= 1:
            raise ConfigError(f"share_blocks_per_simulated must be >= 1, got {share_blocks_per_simulated!r}")
        self.spec = spec
        self.hbm = hbm if hbm is not None else HBM(spec, sm_fraction)
        if self.hbm.granularity_bytes > l2.line_bytes:
            raise ConfigError(f"HBMSpec.access_granularity_bytes ({self.hbm.granularity_bytes}) cannot exceed "
                              f"L2Spec.line_bytes ({l2.line_bytes})")
        self.atomics = AtomicUnits(spec, sm_fraction)   # the slices' atomic units (l2_atomics.py)
        self.writeback = WriteBack(spec, self.hbm)
        self.slices = sl = L2Slices(spec, sm_fraction, self.hbm, self.atomics, self.writeback)
        self.fabric = PartitionFabric(spec, sm_fraction, sl)
        self.queue = QueuedReads(sl.slices, l2.join_queued_reads)
        self.merge = GpcMerge(spec, sl.sectors_per_line)    # reads served by a GPC's recent lookup (gpc_merge.py)
        self.standins = sl.standins = StandIns(sl, self.hbm, share_blocks_per_simulated,
                                               round(sl.capacity_lines / sm_fraction))
        self.partitions = sl.partitions
        self.sectors_per_line = sl.sectors_per_line
        self.capacity_bytes = sl.capacity_bytes
        self.capacity_lines = sl.capacity_lines
        self.sets_in_slice = sl.sets_in_slice
        self.pipeline_latency_cycles = l2.hit_latency_cycles if pipeline_latency_cycles is None \
            else pipeline_latency_cycles
        self.first_ready = NEG_INF          # when the first line of the latest request was ready (a bulk copy's fill starts)
        # a written sector holds the slice longer than a read one: writes book this many bytes per byte
        self._write_cost = l2.bandwidth_bytes_per_cycle_per_slice / l2.write_bandwidth_bytes_per_cycle_per_slice
        # a slice looks up about one line request a cycle whatever its sectors: a read's lookup takes at least
        # one request's share of the slice's bandwidth (`l2.requests_per_cycle_per_slice`; 0: bytes only)
        self._request_bytes = (l2.bandwidth_bytes_per_cycle_per_slice / l2.requests_per_cycle_per_slice
                               if l2.requests_per_cycle_per_slice > 0 else 0.0)
        self.reset_counters()

    # -- public API ---------------------------------------------------------------------

    def read(self, t: float, sectors, part: int = 0, sm: int = 0) -> float:
        return self._access(t, as_list(sectors), READ, part=part, sm=sm)

    def write(self, t: float, sectors, part: int = 0, masks=None) -> float:
        return self._access(t, as_list(sectors), WRITE, masks=as_list(masks) if masks is not None else None,
                            part=part)

    def atomic(self, t: float, sectors, reduction: bool = False, passes=None, part: int = 0,
               float_op: bool = False, sm: int = 0) -> float:
        """`passes[i]`: the passes sector i is in (default one each); `float_op`: float RMWs;
        `sm`: the requesting SM."""
        return self._access(t, as_list(sectors), RED if reduction else ATOM,
                            as_list(passes) if passes is not None else None, part=part, float_op=float_op, sm=sm)

    @property
    def slice_count(self) -> int:
        """Simulated slices (the share's, in sampled simulation)."""
        return self.slices.slices

    def home_of(self, line: int) -> int:
        """The partition a 128-B line index is homed in."""
        return self.slices.home_of(line)

    def set_of(self, line: int) -> int:
        """The set (within a partition) a 128-B line index uses."""
        return self.slices.set_of(line)

    @property
    def ways(self) -> int:
        """Ways a set holds (the slices' count: sampled simulation may widen it, `L2Slices.widen`)."""
        return self.slices.ways

    @property
    def footprint(self):
        """Sampled simulation: the warming.SharedFootprint the slices ask on allocation."""
        return self.slices.footprint

    @footprint.setter
    def footprint(self, fp) -> None:
        self.slices.footprint = fp

    @property
    def tau(self) -> float:
        """Grid position (block / blocks) of the requesting SM's block."""
        return self.slices.tau

    @tau.setter
    def tau(self, tau: float) -> None:
        self.slices.tau = tau

    def preload_dirty(self, nbytes: int) -> int:
        return self.standins.preload_dirty(nbytes)

    def residue_written_bytes(self) -> float:
        return self.standins.residue_written_bytes()

    def skipped_traffic_writebacks(self, scale: float) -> tuple[float, int]:
        return self.standins.skipped_traffic_writebacks(scale)

    def phantom_correction_sectors(self) -> float:
        return self.standins.phantom_correction_sectors()

    def dirty_bytes(self) -> int:
        """Bytes the L2 holds dirty now (what a kernel leaves behind)."""
        return self.slices.dirty_bytes()

    def flush(self) -> None:
        """Kernel boundary: queues forgotten and every fill counted as arrived (time may
        restart at 0); contents and dirty lines kept, nothing written back."""
        self.slices.flush()
        self.fabric.flush()
        self.queue.flush()
        self.merge.flush()
        self.hbm.flush()
        self.atomics.flush()

    def reset_counters(self) -> None:
        self.slices.reset_counters()
        self.writeback.reset_counters()
        self.standins.reset_counters()
        self.fabric.reset_counters()
        self.queue.reset_counters()
        self.merge.reset_counters()
        self.atomics.reset_counters()

    @property
    def busy_cycles(self) -> float:
        """The slices' busy cycles: their reads', or their write ports' where those are separate and busier."""
        sl = self.slices
        return max(sum(s.busy_cycles for s in sl.servers), sum(s.busy_cycles for s in sl.write_servers))

    def slice_bytes(self) -> list[float]:
        """Bytes booked at each slice (how evenly the hash spread the traffic)."""
        sl = self.slices
        if sl.write_servers is sl.servers:
            return [s.bytes_served for s in sl.servers]
        return [r.bytes_served + w.bytes_served for r, w in zip(sl.servers, sl.write_servers)]

    def counters(self, elapsed_cycles: float | None = None) -> dict[str, float]:
        out: dict[str, float] = {}
        sl, wb = self.slices, self.writeback
        H, M = sl.hits, sl.misses
        for op, name in enumerate(_OPS):
            h, m = H[TEX][op] + H[FABRIC][op], M[TEX][op] + M[FABRIC][op]
            out[f"lts__t_sectors_op_{name}.sum"] = float(h + m)
            out[f"lts__t_sectors_op_{name}_lookup_hit.sum"] = float(h)
            out[f"lts__t_sectors_op_{name}_lookup_miss.sum"] = float(m)
        for src, name in ((TEX, "tex"), (FABRIC, "ltcfabric")):
            h, m = sum(H[src]), sum(M[src])
            out[f"lts__t_sectors_srcunit_{name}.sum"] = float(h + m)
            out[f"lts__t_sectors_srcunit_{name}_lookup_hit.sum"] = float(h)
            out[f"lts__t_sectors_srcunit_{name}_lookup_miss.sum"] = float(m)
        h, m = sum(H[TEX]) + sum(H[FABRIC]), sum(M[TEX]) + sum(M[FABRIC])
        out["lts__t_sectors.sum"] = float(h + m)
        out["lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"] = float(H[TEX][READ])
        out["lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"] = float(M[TEX][READ])
        out["lts__t_sector_hit_rate.pct"] = 100.0 * h / (h + m) if h + m else 0.0
        rh, rm = H[TEX][READ] + H[FABRIC][READ], M[TEX][READ] + M[FABRIC][READ]
        out["lts__t_sector_op_read_hit_rate.pct"] = 100.0 * rh / (rh + rm) if rh + rm else 0.0
        out["lts__d_atomic_input_cycles_active.sum"] = float(self.atomics.passes)
        out["gpusim__l2_rmw_bursts.sum"] = float(wb.rmw_bursts)
        out["gpusim__l2_partial_write_sectors.sum"] = float(wb.partial_write_sectors)
        out["gpusim__l2_completed_partial_bursts.sum"] = float(sl.partial.completed_bursts if sl.partial else 0)
        out["gpusim__l2_phantom_writeback_sectors.sum"] = float(self.standins.phantom_sectors)
        out["gpusim__l2_warm_fill_lines.sum"] = float(sl.warm_fills)
        out["gpusim__l2_warm_kept_lines.sum"] = float(sl.warm_kept_lines)
        out["gpusim__l2_fabric_bytes.sum"] = float(self.fabric.server.bytes_served)
        out["gpusim__l2_queued_read_sectors.sum"] = float(self.queue.joined_sectors)
        out["gpusim__gpc_merged_read_sectors.sum"] = float(self.merge.merged_sectors)
        if elapsed_cycles:
            out["lts__t_sectors.avg.pct_of_peak_sustained_elapsed"] = \
                100.0 * self.busy_cycles / (sl.slices * elapsed_cycles)
        return out

    # -- the access path ------------------------------------------------------------------

    def _access(self, t: float, lst: list, op: int, ops: list | None = None, masks: list | None = None,
                part: int = 0, float_op: bool = False, sm: int = 0, runs: list | None = None) -> float:
        """Route a request's sectors, one line at a time: book the near slice, then the home
        slice's lookup (`L2Slices.lookup`) or the fabric's far path (`PartitionFabric.far`).
        `ops`: an atomic's passes per sector (None: one each); `float_op`: an atomic's kind;
        `sm`: the requesting SM (an atomic's unit, a read's queue: l2_queue.py); `runs`: the
        lengths of the line requests `lst` is made of (None: each run of sectors in one line;
        a bypassing copy's second reads, `copy_requests.py`)."""
        sl = self.slices
        sh = sl.line_shift
        spp, servers, wservers, sbytes = sl.slices_per_partition, sl.servers, sl.write_servers, sl.sector_bytes
        locate, near_sets, use = sl.locate, sl.sets[part], sl.sectors_per_line + 3
        multi = sl.partitions > 1
        queue = self.queue if op == READ and self.queue.enabled else None
        merge = self.merge if op == READ and self.merge.enabled else None
        mask = sl.sectors_per_line - 1
        latest, earliest = t, INF
        n = len(lst)
        i = 0
        k = 0
        while i < n:                                    # one group per run of sectors in one line
            line = lst[i] >> sh
            if runs is not None:
                j = i + runs[k]
                k += 1
            else:
                j = i + 1
                while j < n and lst[j] >> sh == line:
                    j += 1
            r = None
            if merge is not None:                       # read from this GPC a little earlier: that lookup serves it
                secs = [lst[idx] & mask for idx in range(i, j)]
                r = merge.join(sm, line, secs, t)
            x, home, s = locate(line)
            si = part * spp + s
            if queue is not None and r is None:         # the same sectors still queued at this slice: join them
                want = 0
                for idx in range(i, j):
                    want |= 1 << (lst[idx] & mask)
                r = queue.join(si, line, want, t, sm)
            if r is not None:                           # served by an earlier read's lookup: nothing booked
                if r > latest:
                    latest = r
                if r < earliest:
                    earliest = r
                i = j
                continue
            nbytes = (j - i) * sbytes
            if op == WRITE:
                if masks is not None:
                    nbytes += self.writeback.partial_cost(masks, i, j, lst, sl.sets[home][x].get(line))
                nbytes *= self._write_cost
            near = nbytes
            if op == READ and near < self._request_bytes:
                near = self._request_bytes
            if op >= ATOM:                              # each pass holds its home slice, a far one its near too
                npass = sum(ops[i:j]) if ops is not None else j - i
                near = nbytes = npass * self.atomics.home_bytes
                if home != part:
                    near = npass * self.atomics.near_bytes
            ts = (wservers if op == WRITE else servers)[si].serve(t, near)
            if home == part:
                od = near_sets[x]
                ent = od.get(line)
                if ent is None:
                    sl.stall = NEG_INF
                    ent = sl.allocate(od, line, ts)
                    if sl.stall > ts:                   # the victim's write-back had to get into DRAM first
                        ts = sl.stall
                else:                                   # a hit: what L2Slices.entry does, inlined
                    od.move_to_end(line)
                    ent[use] = od.allocs
                r = sl.lookup(ent, ts, lst, i, j, op, ops, masks, TEX, float_op, sm, si)
                if op != READ and multi:
                    self.fabric.drop_copies(line, x, home, part, lst, i, j, ent)
            else:
                r = self.fabric.far(line, s, x, home, part, ts, lst, i, j, op, ops, masks, nbytes, float_op, sm)
            if queue is not None:
                queue.queued(si, line, want, ts, t, r, sm)
            if merge is not None:
                merge.note(sm, line, secs, t, r)
            if r > latest:
                latest = r
            if r < earliest:
                earliest = r
            i = j
        self.first_ready = (earliest if n else t) + self.pipeline_latency_cycles
        return latest + self.pipeline_latency_cycles
