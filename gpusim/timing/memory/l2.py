"""The L2 cache: hashed slices, sectored, set-associative, LRU, write-back, write-allocate.

What is modelled:
- `spec.l2.slices` slices; a 128-B line's slice is `hashing.unit_of(line, slices)`
  (rotation by an XOR-fold of the upper address bits: contiguous ranges spread evenly,
  power-of-two strides reach every slice). The `size / (line * ways)` sets (times
  `sm_fraction` in sampled simulation, at least one per slice) are dealt to the slices
  as evenly as they go (`sets_in_slice`); within slice i the set is
  `(line // slices) % sets_in_slice[i]`, so where the sets divide evenly a contiguous
  range of the whole capacity fits exactly.
- Each slice: `associativity` ways, LRU (an OrderedDict per set, most recent last),
  lines of `line_bytes / sector_bytes` sectors, each sector invalid or valid from a
  time (its fill time: a sector whose fill is still on its way merges the new request,
  which waits for the fill - the L2's own miss merging), and a dirty mask per line.
- One `BandwidthServer` per slice of `bandwidth_bytes_per_cycle_per_slice`
  (times `sm_fraction`): a warp request books `sectors * sector_bytes` at the slice
  once per line it touches; the booking start `ts` is the lookup time.
- Timing, from the arrival `t` at the slice (`pipeline_latency_cycles` = P, which
  `MemorySystem` sets to `l2.hit_latency_cycles - 2 * noc.latency_cycles` so that an L2
  hit's load-to-use latency seen by the SM is exactly `l2.hit_latency_cycles`):
    hit:     data leaves the slice at max(ts, sector fill time) + P
    miss:    one HBM burst read issued at ts; data leaves at HBM completion + P
    write:   acknowledged at ts + P
    atomic:  as a read, then the read-modify-write: + `atomic_latency_cycles`;
             RMWs to one sector are serialised, one per lane operation every
             `l2.atomic_same_address_interval_cycles`
  A request's time is the latest over its sectors.
- Misses fetch whole HBM bursts (`hbm.access_granularity_bytes`); with 64-B bursts the
  sibling sector of the pair is filled too (sector promotion).
- Writes: write-allocate without a fill (sectors are written whole; byte masks not
  modelled), the sector becomes valid and dirty. Evicting a line writes its dirty
  bursts to HBM at the eviction time. Nothing is written back at kernel end (`flush`):
  on hardware the 50 MB L2 keeps dirty lines, so `dram__bytes_write.sum` can be below
  the bytes stored.
- Counters (Nsight names): `lts__t_sectors.sum` (all ops), `lts__t_sectors_op_{read,write,atom,red}.sum` and their
  `_lookup_hit`/`_lookup_miss`, `lts__t_sectors_srcunit_tex_{op_read_,}lookup_{hit,miss}.sum`,
  `lts__t_sector_hit_rate.pct`, `lts__t_sector_op_read_hit_rate.pct`. A lookup hits when
  the sector's data is already in the slice; one whose fill is still in flight counts
  as a miss (but makes no new HBM request).

Not modelled: the two L2 partitions of H100/A100 and the far-partition hop, L2 MSHR and
queue limits (only bandwidth limits the slice), replacement hints (evict-first /
evict-last), compression, ECC, residency control, partial-sector byte masks.

Sources: [H100-WP] NVIDIA H100 Tensor Core GPU Architecture (2022), 50 MB L2;
Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking" (2018)
and "Dissecting the NVIDIA Turing T4 GPU" (2019): sectored 32-B L2, hashed slices, LRU;
Nsight Compute Kernel Profiling Guide, metrics reference (lts__ names).
"""
from __future__ import annotations

from collections import OrderedDict

from gpusim.errors import ConfigError
from gpusim.timing.memory.hashing import unit_of
from gpusim.timing.memory.hbm import HBM
from gpusim.timing.memory.servers import BandwidthServer

NEG_INF = float("-inf")
READ, WRITE, ATOM, RED = 0, 1, 2, 3
_OPS = ("read", "write", "atom", "red")


def as_list(sectors) -> list:
    """A numpy array or any sequence of sector indices as a list of Python ints."""
    return sectors.tolist() if hasattr(sectors, "tolist") else list(sectors)


class L2Cache:
    """`read`, `write`, `atomic` (t, sectors) -> time the data/ack leaves the slice."""

    def __init__(self, spec, hbm: HBM | None = None, sm_fraction: float = 1.0, *,
                 pipeline_latency_cycles: float | None = None,
                 atomic_same_sector_interval_cycles: float | None = None):
        l2 = spec.l2
        if l2.sector_bytes != spec.l1.sector_bytes:
            raise ConfigError("L2Spec.sector_bytes must equal L1Spec.sector_bytes (sector indices are shared)")
        if not 0 < sm_fraction <= 1:
            raise ConfigError(f"sm_fraction must be in (0, 1], got {sm_fraction!r}")
        self.spec = spec
        self.slices = l2.slices
        self.ways = l2.associativity
        self.sector_bytes = l2.sector_bytes
        self.sectors_per_line = l2.line_bytes // l2.sector_bytes
        self.line_shift = self.sectors_per_line.bit_length() - 1
        sets = max(self.slices, round(l2.size_bytes // (l2.line_bytes * l2.associativity) * sm_fraction))
        per, extra = divmod(sets, self.slices)
        self.sets_in_slice = [per + (i < extra) for i in range(self.slices)]
        self._geometry = [(i * per + min(i, extra), self.sets_in_slice[i]) for i in range(self.slices)]
        self.capacity_bytes = sets * self.ways * l2.line_bytes
        self.pipeline_latency_cycles = l2.hit_latency_cycles if pipeline_latency_cycles is None \
            else pipeline_latency_cycles
        self.atomic_latency_cycles = l2.atomic_latency_cycles
        # a fraction of the SMs gets that fraction of a hot sector's atomic throughput, like any shared unit
        self.atomic_interval_cycles = (l2.atomic_same_address_interval_cycles
                                       if atomic_same_sector_interval_cycles is None
                                       else atomic_same_sector_interval_cycles) / sm_fraction
        self.hbm = hbm if hbm is not None else HBM(spec, sm_fraction)
        if self.hbm.granularity_bytes > l2.line_bytes:
            raise ConfigError(f"HBMSpec.access_granularity_bytes ({self.hbm.granularity_bytes}) cannot exceed "
                              f"L2Spec.line_bytes ({l2.line_bytes})")
        bw = l2.bandwidth_bytes_per_cycle_per_slice * sm_fraction
        self.bytes_per_cycle = bw * self.slices
        self._servers = [BandwidthServer(bw, 0.0, name=f"L2.slice[{i}]") for i in range(self.slices)]
        self._sets = [OrderedDict() for _ in range(sets)]
        self._atom_free: dict[int, float] = {}   # sector -> earliest start of its next RMW
        self.reset_counters()

    # -- public API ---------------------------------------------------------------------

    def read(self, t: float, sectors) -> float:
        return self._access(t, as_list(sectors), READ)

    def write(self, t: float, sectors) -> float:
        return self._access(t, as_list(sectors), WRITE)

    def atomic(self, t: float, sectors, reduction: bool = False, ops=None) -> float:
        return self._access(t, as_list(sectors), RED if reduction else ATOM, as_list(ops) if ops is not None else None)

    def flush(self) -> None:
        """Kernel boundary: queues forgotten and every fill counted as arrived (time may
        restart at 0); contents and dirty lines kept, nothing written back."""
        for s in self._servers:
            s.clear_bookings()
        self.hbm.flush()
        self._atom_free.clear()
        spl = self.sectors_per_line
        for od in self._sets:
            for ent in od.values():
                for k in range(spl):
                    if ent[k] is not None:
                        ent[k] = NEG_INF

    def reset_counters(self) -> None:
        self._hits = [0, 0, 0, 0]
        self._misses = [0, 0, 0, 0]
        self.dirty_evictions = 0
        for s in self._servers:
            s.reset_stats()

    @property
    def busy_cycles(self) -> float:
        return sum(s.busy_cycles for s in self._servers)

    def slice_bytes(self) -> list[float]:
        """Bytes booked at each slice (how evenly the hash spread the traffic)."""
        return [s.bytes_served for s in self._servers]

    def counters(self, elapsed_cycles: float | None = None) -> dict[str, float]:
        out: dict[str, float] = {}
        for op, name in enumerate(_OPS):
            h, m = self._hits[op], self._misses[op]
            out[f"lts__t_sectors_op_{name}.sum"] = float(h + m)
            out[f"lts__t_sectors_op_{name}_lookup_hit.sum"] = float(h)
            out[f"lts__t_sectors_op_{name}_lookup_miss.sum"] = float(m)
        h, m = sum(self._hits), sum(self._misses)
        out["lts__t_sectors.sum"] = float(h + m)
        out["lts__t_sectors_srcunit_tex.sum"] = float(h + m)
        out["lts__t_sectors_srcunit_tex_lookup_hit.sum"] = float(h)
        out["lts__t_sectors_srcunit_tex_lookup_miss.sum"] = float(m)
        out["lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"] = float(self._hits[READ])
        out["lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"] = float(self._misses[READ])
        out["lts__t_sector_hit_rate.pct"] = 100.0 * h / (h + m) if h + m else 0.0
        rh, rm = self._hits[READ], self._misses[READ]
        out["lts__t_sector_op_read_hit_rate.pct"] = 100.0 * rh / (rh + rm) if rh + rm else 0.0
        if elapsed_cycles:
            out["lts__t_sectors.avg.pct_of_peak_sustained_elapsed"] = \
                100.0 * self.busy_cycles / (self.slices * elapsed_cycles)
        return out

    # -- the access path ------------------------------------------------------------------

    def _access(self, t: float, lst: list, op: int, ops: list | None = None) -> float:
        sh, mask, spl = self.line_shift, self.sectors_per_line - 1, self.sectors_per_line
        nslices, geometry, ways = self.slices, self._geometry, self.ways
        sets, servers, sbytes = self._sets, self._servers, self.sector_bytes
        hbm = self.hbm
        bsh, bmask, gran = hbm.burst_shift, hbm.sectors_per_burst - 1, hbm.granularity_bytes
        channels, nch = hbm._servers, hbm.channels
        latest = t
        hits = misses = bursts = 0
        n = len(lst)
        i = 0
        while i < n:                                    # one group per run of sectors in one line
            line = lst[i] >> sh
            j = i + 1
            while j < n and lst[j] >> sh == line:
                j += 1
            sl = unit_of(line, nslices)
            ts = servers[sl].serve(t, (j - i) * sbytes)
            first, nsets = geometry[sl]
            od = sets[first + (line // nslices) % nsets]
            ent = od.get(line)
            if ent is None:
                if len(od) >= ways:
                    vline, vent = od.popitem(last=False)
                    if vent[spl]:
                        self._write_back(ts, vline, vent[spl])
                ent = [None] * spl + [0]
                od[line] = ent
            else:
                od.move_to_end(line)
            for idx in range(i, j):
                s = lst[idx]
                k = s & mask
                r = ent[k]
                if op == WRITE:
                    if r is None:
                        misses += 1
                        ent[k] = ts
                    else:
                        hits += 1
                    ent[spl] |= 1 << k
                    r = ts
                else:
                    if r is None:
                        misses += 1
                        r = channels[unit_of(s >> bsh, nch)].serve(ts, gran)   # = hbm.read_burst
                        bursts += 1
                        base = (k >> bsh) << bsh        # fill every invalid sector of the burst
                        for kk in range(base, base + bmask + 1):
                            if ent[kk] is None:
                                ent[kk] = r
                    elif r > ts:
                        misses += 1                     # fill in flight: wait for it, no new fetch
                    else:
                        hits += 1
                        r = ts
                    if op != READ:                      # read-modify-write at the slice, one per lane op
                        a = self._atom_free.get(s, NEG_INF)
                        if a > r:
                            r = a
                        n_ops = ops[idx] if ops is not None else 1
                        self._atom_free[s] = r + self.atomic_interval_cycles * n_ops
                        r += self.atomic_latency_cycles + self.atomic_interval_cycles * (n_ops - 1)
                        ent[spl] |= 1 << k
                if r > latest:
                    latest = r
            i = j
        self._hits[op] += hits
        self._misses[op] += misses
        hbm.bursts_read += bursts
        if op >= ATOM and len(self._atom_free) > 1 << 16:
            self._prune_atomics(t)
        return latest + self.pipeline_latency_cycles

    def _write_back(self, t: float, line: int, dirty: int) -> None:
        hbm = self.hbm
        bsh = hbm.burst_shift
        first = line << self.line_shift
        done = -1
        for k in range(self.sectors_per_line):
            if dirty >> k & 1:
                self.dirty_evictions += 1
                burst = (first + k) >> bsh
                if burst != done:
                    hbm.write_burst(t, burst)
                    done = burst

    def _prune_atomics(self, t: float) -> None:
        horizon = t - 65536.0                           # far beyond any quantum's reordering
        self._atom_free = {s: a for s, a in self._atom_free.items() if a > horizon}
