"""The L2's partition fabric: what a request for a line homed in the other partition does
(a unit of `l2.L2Cache`, over its slices, `l2_slices.py`).

What is modelled (H100/H200/A100 have two partitions, `l2.partitions`): a request from
an SM is looked up in its near partition first (one `lts__t_sectors` count, its near
slice's bandwidth). For a line homed in the far partition the near one holds a copy:
- a read's sectors valid in the copy are near hits; the others cross the partition
  fabric (`fabric_bandwidth_bytes_per_cycle` shared by all, `fabric_latency_cycles`
  each way), are looked up at the home slice (counted again, as
  `lts__t_sectors_srcunit_ltcfabric`), served there (hit, or DRAM) and fill the copy.
  That lookup takes the fabric's bandwidth, not the home slice's: a slice's bandwidth
  (`bandwidth_bytes_per_cycle_per_slice`, measured with SMs pulling L2-resident data of
  their own, where 1% of the lookups came over the fabric) is what its SMs' lookups and
  the writes take. On the GPUs the GEMMs' lookups for SMs and writes stay within it
  (at most 98-100% of the H100's 7.96 TB/s and 97% of the H200's 9.41: Triton's f16/bf16
  and the TMA GEMM at 8192^3) while their lookups in all, with those that came over the
  fabric (0.7-1.9 TB/s), reach 9.5-9.9 TB/s: 119% of the H100's;
- writes and atomics always go on to the home (write-through): the near copy takes a
  write's bytes (allocating a clean copy), an atomic drops them;
- a write or atomic at the home drops the copies other partitions hold (coherence);
- only homes are ever dirty; copies are dropped silently when evicted. With
  `l2.far_writes_dirty_at_writer` (off in every preset) a far store's bytes stay dirty in
  the writer's copy instead (the home takes them valid, not dirty): evicting the copy
  writes them back (read first where the sector is partial), and a write or atomic at the
  home that drops the copy's sectors takes over their dirty bytes. The scatter probe
  (validate/scatter_capacity_probe.py: lines written from SMs of both partitions write
  back about what lines written from one do at twice the size) is what it was tried
  against (docs/mechanisms_24.md section 47).
So a stream's far half is counted twice (Nsight's 1.5x of the L1's misses and stores),
re-read far data is counted once (matmul: about 1.2x), and copies take capacity: after
vector_add a partition holds its homes (half the lines, a third of them written) and
copies of its own SMs' far lines, so about 2/9 of the L2 is left dirty (H200: 12.5 of
60 MB), a third after float64_axpy and the transposes (20 MB).

Not modelled: where exactly NVIDIA keeps far data (the copies are an inference from
Nsight's counters: lts sector counts and the dirty data left at kernel end), the
fabric's own arbitration, and any distance between slices within a partition.

Sources: [A100-WP] NVIDIA A100 Tensor Core GPU Architecture (2020): the L2 is divided
into two partitions, "each L2 partition localizes and caches data for memory accesses
from SMs in the GPCs directly connected to the partition", with hardware cache
coherence; [H100-WP]; Nsight Compute Kernel Profiling Guide (lts__t_sectors_srcunit_ltcfabric);
the H100/H200 counters in data/measurements.
"""
from __future__ import annotations

from gpusim.timing.memory.l2_slices import ATOM, FABRIC, FULL, NEG_INF, READ, RED, TEX, WRITE
from gpusim.timing.memory.servers import BandwidthServer


class PartitionFabric:
    """`far`: a request's sectors of a line homed in another partition (near copy, fabric
    crossing, home slice); `drop_copies`: coherence after a write or atomic at a home."""

    def __init__(self, spec, sm_fraction: float, slices):
        l2 = spec.l2
        self.slices = slices
        self.partitions = l2.partitions
        self.latency_cycles = l2.fabric_latency_cycles
        self.dirty_copies = l2.far_writes_dirty_at_writer
        self.server = BandwidthServer(l2.fabric_bandwidth_bytes_per_cycle * sm_fraction, l2.fabric_latency_cycles,
                                      name="L2.fabric")

    def far(self, line, s, x, home, part, ts, lst, i, j, op, ops, masks, nbytes, float_op=False, sm=0) -> float:
        """A line homed in another partition (slice s of each, set x), sectors lst[i:j] requested
        from partition `part` at ts (after its near slice's booking): near copy, fabric, home
        slice (which books `nbytes`); when the data or acknowledgement is back at the near slice."""
        sl = self.slices
        spl = sl.sectors_per_line
        mask = spl - 1
        od = sl.sets[part][x]                           # the near copy: sl.entry, inlined (hot path)
        copy = od.get(line)
        if copy is None:
            if op != ATOM and op != RED:
                copy = sl.allocate(od, line, ts, far=True)
        else:
            od.move_to_end(line)
            copy[spl + 3] = od.allocs
        if op == READ:
            sub = []                                    # the sectors that go on to the home
            r_near = ts
            pm = copy[spl + 1]
            hits = 0
            for idx in range(i, j):
                k = lst[idx] & mask
                r = copy[k]
                if r is not None and (pm is None or k not in pm or pm[k][0] == FULL) and r <= ts:
                    hits += 1
                elif r is not None and (pm is None or k not in pm) and r > ts:
                    if r > r_near:                      # its fill is on the way through the fabric: wait for it
                        r_near = r
                else:
                    sub.append(lst[idx])
            sl.hits[TEX][READ] += hits
            sl.misses[TEX][READ] += j - i - hits
            if not sub:
                return r_near
            fb = len(sub) * sl.sector_bytes
            tsf = self.server.serve(ts, fb)             # the fabric's bandwidth (module docstring)
            sl.stall = NEG_INF
            ent = sl.entry(home, line, x, tsf)
            if sl.stall > tsf:
                tsf = sl.stall
            r = sl.lookup(ent, tsf, sub, 0, len(sub), READ, None, None, FABRIC,
                          si=home * sl.slices_per_partition + s) + self.latency_cycles
            for sec in sub:                             # fill the copy
                k = sec & mask
                copy[k] = r
                if pm and k in pm:
                    e = pm[k]
                    if copy[spl] >> k & 1 and e[1] != FULL:     # a dirty copy's written bytes stay dirty
                        e[0] = FULL
                    else:
                        del pm[k]
            if pm is not None and not pm:
                copy[spl + 1] = None
            return r if r > r_near else r_near
        # writes and atomics: the near lookup (an atomic sector once per pass), then on to the home
        n_near = j - i if ops is None or op == WRITE else sum(ops[i:j])
        present = 0
        dirty = self.dirty_copies
        taken = None                                    # an atomic's sectors the copy held dirty: the home's now
        if op == WRITE and dirty:
            for idx in range(i, j):
                k = lst[idx] & mask
                if copy[k] is not None:
                    present += 1
                _dirty_copy_write(sl, copy, k, masks[idx] if masks is not None else FULL, spl, ts)
        elif op == WRITE:
            pm = copy[spl + 1]
            for idx in range(i, j):                     # each sector: _copy_write, inlined (hot path)
                k = lst[idx] & mask
                if copy[k] is None:
                    copy[k] = ts
                    m = masks[idx] if masks is not None else FULL
                    if m != FULL:
                        if pm is None:
                            pm = copy[spl + 1] = {}
                        pm[k] = [m, 0]
                else:
                    present += 1
                    if pm and k in pm:
                        _copy_write(copy, k, masks[idx] if masks is not None else FULL, spl)
        elif copy is not None:
            if copy[spl]:
                taken = _take_dirty(copy, lst, i, j, spl)
            for idx in range(i, j):
                k = lst[idx] & mask
                if copy[k] is not None:
                    present += 1
                    copy[k] = None
                    if copy[spl + 1]:
                        copy[spl + 1].pop(k, None)
        sl.hits[TEX][op] += present
        sl.misses[TEX][op] += n_near - present
        tf = self.server.serve(ts, n_near * sl.sector_bytes)
        tsf = (sl.write_servers if op == WRITE else sl.servers)[home * sl.slices_per_partition + s].serve(tf, nbytes)
        sl.stall = NEG_INF
        ent = sl.entry(home, line, x, tsf)
        if sl.stall > tsf:
            tsf = sl.stall
        r = sl.lookup(ent, tsf, lst, i, j, op, ops, masks, FABRIC, float_op, sm, home * sl.slices_per_partition + s,
                      clean=dirty and op == WRITE)
        if taken:
            _give_dirty(ent, taken, spl, tsf)
        if self.partitions > 2:
            self.drop_copies(line, x, home, part, lst, i, j, ent)
        return r + self.latency_cycles

    def drop_copies(self, line, x, home, part, lst, i, j, hent=None) -> None:
        """A write or atomic at the home (the line's set: x; its entry `hent`): copies in
        partitions other than the writer's go stale; the bytes a copy held dirty of those
        sectors (`far_writes_dirty_at_writer`) are the home's to write back now."""
        sl = self.slices
        spl = sl.sectors_per_line
        mask = spl - 1
        for p in range(self.partitions):
            if p == home or p == part:
                continue
            ent = sl.sets[p][x].get(line)
            if ent is not None:
                if ent[spl] and hent is not None:
                    taken = _take_dirty(ent, lst, i, j, spl)
                    if taken:
                        _give_dirty(hent, taken, spl, NEG_INF)
                pm = ent[spl + 1]
                for idx in range(i, j):
                    k = lst[idx] & mask
                    ent[k] = None
                    if pm:
                        pm.pop(k, None)

    def flush(self) -> None:
        self.server.clear_bookings()

    def reset_counters(self) -> None:
        self.server.reset_stats()


def _copy_write(copy, k: int, m: int, spl: int) -> None:
    """A write's bytes into sector k, present, of a near copy (clean) of `spl` sectors."""
    pm = copy[spl + 1]
    v = pm[k][0] | m
    if v == FULL:
        del pm[k]
    else:
        pm[k][0] = v


def _dirty_copy_write(sl, copy, k: int, m: int, spl: int, ts: float) -> None:
    """A write's bytes (mask m) into sector k of a near copy that keeps them dirty
    (`far_writes_dirty_at_writer`): entries as a home's, [valid mask, dirty mask] per partial sector."""
    was = copy[spl] >> k & 1
    _merge_dirty(copy, k, m, spl, ts)
    if not was:
        sl.dirty(copy, k)


def _take_dirty(copy, lst, i: int, j: int, spl: int) -> list:
    """The copy's dirty bytes of sectors lst[i:j] as (sector, valid-from time, dirty mask),
    cleared from the copy (its entry is dropped or made stale by the caller)."""
    mask = spl - 1
    d = copy[spl]
    pm = copy[spl + 1]
    out = []
    for idx in range(i, j):
        k = lst[idx] & mask
        if d >> k & 1:
            out.append((k, copy[k], pm[k][1] if pm and k in pm else FULL))
            d &= ~(1 << k)
    copy[spl] = d
    return out


def _give_dirty(hent, taken: list, spl: int, ts: float) -> None:
    """Dirty bytes taken from a copy become the home entry's (valid and dirty there)."""
    for k, r, m in taken:
        _merge_dirty(hent, k, m, spl, r if r is not None else ts)
        hent[spl] |= 1 << k


def _merge_dirty(ent, k: int, m: int, spl: int, ts: float) -> None:
    """Bytes (mask m) of sector k made valid and dirty in entry `ent` (valid from ts where the
    sector was absent); its partial masks [valid, dirty] kept while either is partial. The
    caller sets the dirty bit."""
    pm = ent[spl + 1]
    was = ent[spl] >> k & 1
    if ent[k] is None:
        ent[k] = ts
        if m != FULL:
            if pm is None:
                pm = ent[spl + 1] = {}
            pm[k] = [m, m]
    elif pm and k in pm:
        e = pm[k]
        e[0] |= m
        e[1] = (e[1] | m) if was else m
        if e[0] == FULL and e[1] == FULL:
            del pm[k]
            if not pm:
                ent[spl + 1] = None
    elif m != FULL and not was:                         # valid, clean: now partly dirty
        if pm is None:
            pm = ent[spl + 1] = {}
        pm[k] = [FULL, m]
