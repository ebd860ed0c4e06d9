"""HBM: the DRAM behind the L2, as pseudo-channels with banks, row buffers, a shared
data bus per channel, read/write turnaround and refresh.

What is modelled (per pseudo-channel, `spec.hbm.channels` of them):
- Address mapping. Every access moves one burst of `access_granularity_bytes`
  (aligned). Addresses go to channels in chunks of `channel_interleave_bytes`, chunk i
  to channel `hashing.unit_of(i, channels)` (each aligned group of `channels` chunks a
  rotation of the channels); within a channel, consecutive chunks fill a row of
  `row_bytes`, and the q-th row of a channel goes to bank `unit_of(q, banks_per_channel)`
  as row q // banks. So a few warps' lines already spread over many channels, and a
  stream (which sweeps each row's chunks within a short time) finds its rows open.
- Banks: each has one row buffer (open-page policy: a row stays open until a request
  for another row of that bank). A request is a row hit (its row is open), a row miss
  on a closed bank (after a refresh) or a row conflict (another row open). Each bank is a
  `BandwidthServer` of bank time: a hit occupies it `accesses * t_ccd_l` (an access is
  one 32-B column command), a conflict `t_rp + t_rcd` more, plus the write recovery
  `t_wr` if the row being closed was last written, plus what the closed row's open time
  fell short of `t_ras`. So a bank cycles rows at most every tRAS + tRP (longer after
  writes). Every activation also takes a quarter of the channel's `t_faw` window (at
  most four per tFAW, as a rate), a write's `write_activation_share` times that (1.45 on
  Hopper: random whole-sector writes run at 0.78 of random reads' rate, [MEAS-DRAMW] in
  specs/presets/__init__.py): traffic without row hits is limited by that, e.g.
  random 4-byte loads reach about half the peak bandwidth (H200 `random_access/read`,
  2.4 of 4.8 TB/s; H100 2.0 of 3.35).
- Data bus: one `BandwidthServer` per channel of `bandwidth_GBps / channels`; a burst
  books its bytes there once its bank is ready. When the bus changes direction the
  change books idle bus time: `t_wtr` from a write to a read, `t_rtw` from a read to a
  write.
- Write queue: write-backs are collected per channel and issued together, in address
  order, when `write_queue_bursts` of them are waiting (the controller's write drain;
  reads go first otherwise). So a stream of reads and writes turns the bus around once
  per drain, not once per burst. The queue takes a new write at once while it has room;
  after a drain it has room again when the drained writes reach the bus, so a
  backlogged channel holds the L2's evictions (and the stores behind them) back. Writes
  still queued when a kernel ends are not timed (they are counted).
- The smallest access (`min_access_bytes`): a fill or write of fewer bytes than that (a
  partial write's 32-B fill, a lone dirty sector's write-back) takes the bank's column
  commands and the bus as that many bytes, and is counted as the bytes it moves: on the
  H100 and H200 4-B stores one a 128-B line take twice the DRAM time per counted byte that
  stores filling both sectors of each burst do ([MEAS-DRAM64]).
- Read-modify-write (`rmw_burst`: the L2 evicts a burst with dirty bytes it never
  fetched): the burst's sectors are read, and the merged sectors join the write queue
  only when the read's data is back at the L2, in time order; meanwhile the channel
  serves whatever else arrives. So the write finds its row still open only if nothing
  else used the bank: random 4-byte stores (H200 `random_access/write`) pay two
  activations per store, as the measured time says, not one.
- Refresh: an all-bank refresh takes `t_rfc` of every `t_refi` from each channel: its
  bus carries `1 - t_rfc / t_refi` of its peak (the refresh time spread evenly, so
  reordered and backlogged requests see it too), and every `t_refi` (staggered over
  the channels) the refresh closes every row. A read arriving while its channel
  refreshes gets its data no sooner than the refresh's end plus its latency (its bus
  time stays where the spread share put it, so a backlogged channel does not lose the
  refresh twice). So a request of many lines (a TMA box, a scattered warp load), which
  ends when its last line is back, waits for a refresh more often the more channels it
  touches: measured, a 2-D TMA box of 8 / 32 / 64 / 128 rows from DRAM takes about 70 /
  250 / 400 / 480 cycles longer than one line on an H100 ([MEAS-TMA] in
  `specs/presets/__init__.py`, from which `t_rfc` is fitted).
- Latency: `latency_ns` is what a pointer chase over a large footprint measures beyond
  an L2 hit ([MEAS]). That average includes the fabric crossings of the far half of
  the lines (l2.py) and the mean wait for a refresh in progress (t_rfc / t_refi of the
  reads wait t_rfc / 2 on average: `refresh_wait_cycles`), so an access to a closed bank
  (the state a chase mostly finds: refresh closes every row) of a near-homed line takes
  `closed_latency_cycles` = latency - 2 * fabric * far share - that mean wait. A row conflict (another row open) takes `t_rp`
  longer, a row hit `t_rcd` less. Banks start closed. An idle system adds no queueing:
  completion = arrival + that latency exactly.
- Sampled simulation (`sm_fraction` < 1): the simulated SMs get that fraction of the
  channels (rounded, at least one; the bus rate is adjusted so the total is exactly
  the fraction of `bandwidth_GBps`), each with all its banks and all its timings, so a
  row streams as fast as on the whole GPU and bank parallelism per channel is real.
- Counters: `dram__bytes_read.sum`, `dram__bytes_write.sum`, `dram__sectors_read.sum`,
  `dram__sectors_write.sum` (32-B units of those bytes); `gpusim__dram_row_{hits,misses}.sum`,
  `gpusim__dram_turnarounds.sum`; `utilisation(elapsed)` gives
  `dram__throughput.avg.pct_of_peak_sustained_elapsed` (bus time, turnarounds and
  refresh included).

Not modelled: bank groups (tCCD_S: the bus itself is the limit for accesses to
different banks), tRRD and the burstiness tFAW allows (four activations back to back),
per-bank refresh, the command
bus, power-down, ECC check bits and the true NVIDIA address hash. The controller is an
approximation of FR-FCFS: reads are served in arrival order at each bank, writes are
drained in batches in address order.

Ordering: requests arrive out of time order by up to a quantum (the SMs advance in
quanta); every bank and bus is a windowed `BandwidthServer`, which books an early
arrival into the idle past, so reordering never creates waiting on an idle unit. Row
buffer state follows processing order.

Sources: [JEDEC] JESD235 (HBM2) and JESD238 (HBM3): pseudo-channels, banks, 1 KB rows,
the meaning of each timing; [DRAMSIM3] DRAMsim3's HBM2 configuration (tRCD/tRP 14 ns,
tRAS 34, tWR 16, tCCD_L 2, tWTR_L 8, tREFI 3.9 us) for values; Ramulator 2 (Luo et al.,
2023) for the structure of a lean bank/row-buffer model; [H100-WP] 5 HBM3 stacks, 10
512-bit controllers, 3.35 TB/s; Nsight Compute Kernel Profiling Guide (dram__ names).
"""
from __future__ import annotations

import heapq

from gpusim.errors import ConfigError
from gpusim.timing.memory.hashing import unit_of
from gpusim.timing.memory.servers import BandwidthServer

READ_DIR, WRITE_DIR = 0, 1
READ_TIME_WEIGHT = 1.0 / 64      # the congestion's moving mean: a read's weight (about the last 64 reads)


class _Channel:
    """One pseudo-channel: its bus, its banks (created on first use) and their rows."""

    __slots__ = ("bus", "act", "banks", "rows", "opened", "wrote", "dir", "wq", "next_refresh", "accept_at",
                 "merged")

    def __init__(self, bus: BandwidthServer, banks: int, first_refresh: float):
        self.bus = bus
        self.act = BandwidthServer(1.0, 0.0, name="HBM.activate")   # activation slots (tFAW / 4 each)
        self.banks: list = [None] * banks            # bank -> BandwidthServer of bank time
        self.rows = [None] * banks                   # open row per bank (None: closed, as after an idle period)
        self.opened = [0.0] * banks                  # bank time used since the open row's activation
        self.wrote = [False] * banks                 # the open row was last written (tWR before closing it)
        self.dir = READ_DIR
        self.wq: list = []                           # queued write bursts (channel-local index)
        self.next_refresh = first_refresh
        self.accept_at = float("-inf")               # the queue has room again (its last drain reached the bus)
        self.merged: list = []                       # heap of (time, burst, bytes): read-modify-writes whose read is on its way


class HBM:
    """`read_burst(t, burst)`, `write_burst(t, burst)` for the L2 (burst = address //
    access_granularity_bytes); `read(now, sectors)`, `write(now, sectors)` -> completion
    time (SM cycles)."""

    def __init__(self, spec, sm_fraction: float = 1.0):
        h = spec.hbm
        gran = h.access_granularity_bytes
        sector = spec.l2.sector_bytes
        if gran % sector or gran & (gran - 1):
            raise ConfigError(f"HBMSpec.access_granularity_bytes must be a power-of-two multiple of the "
                              f"{sector}-byte sector, got {gran}")
        self.spec = spec
        self.sm_fraction = sm_fraction
        # sampled simulation: the simulated SMs' share of the channels, each as fast as on the whole GPU
        self.channels = max(1, round(h.channels * sm_fraction))
        self.banks_per_channel = h.banks_per_channel
        self.granularity_bytes = gran
        self.sector_bytes = sector
        self.sectors_per_burst = gran // sector
        self.min_access_bytes = max(h.min_access_bytes, sector)       # a partial burst's bank and bus time
        self.burst_shift = self.sectors_per_burst.bit_length() - 1   # sector index >> shift = burst index
        self.bursts_per_chunk = h.channel_interleave_bytes // gran      # a chunk: contiguous bytes of one channel
        self.chunks_per_row = h.row_bytes // h.channel_interleave_bytes
        ghz = spec.clocks.sm_clock_mhz / 1000.0
        self.latency_cycles = h.latency_ns * ghz
        l2 = spec.l2
        far_share = (l2.partitions - 1) / l2.partitions          # of a chase's lines, homed in a far partition
        # a closed bank of a near home: what is left of the measured latency without the far half's crossings
        # ... and without the mean wait for a refresh in progress (a request arriving at random
        # finds its channel refreshing t_rfc / t_refi of the time, for t_rfc / 2 on average)
        self.refresh_wait_cycles = h.t_rfc_ns / h.t_refi_ns * h.t_rfc_ns / 2 * ghz
        self.closed_latency_cycles = (self.latency_cycles - 2 * l2.fabric_latency_cycles * far_share
                                      - self.refresh_wait_cycles)
        if self.closed_latency_cycles < h.t_rcd_ns * ghz:
            raise ConfigError(f"HBMSpec.latency_ns ({h.latency_ns}) is too small for the fabric crossings it "
                              f"includes: a DRAM access would take less than tRCD")
        self.bytes_per_cycle = spec.hbm_bytes_per_cycle * sm_fraction
        full_channel = self.bytes_per_cycle / self.channels              # rounding the count keeps the total
        self.refresh_share = h.t_rfc_ns / h.t_refi_ns
        per_channel = full_channel * (1.0 - self.refresh_share)         # refresh takes its share of every window
        self._t_rcd, self._t_rp = h.t_rcd_ns * ghz, h.t_rp_ns * ghz
        self._t_ras, self._t_wr = h.t_ras_ns * ghz, h.t_wr_ns * ghz
        self._ccd = h.t_ccd_l_ns * ghz                                  # one 32-B column command
        self._hit_occ = self._ccd * (gran // sector)                    # one burst: its column commands
        self._act_occ = h.t_faw_ns * ghz / 4.0                          # one activation's share of the tFAW window
        self._act_occ_write = self._act_occ * h.write_activation_share  # a write's activation ([MEAS-DRAMW])
        self._hit_lat = self.closed_latency_cycles - self._t_rcd
        self._closed_lat = self.closed_latency_cycles
        self._conflict_lat = self.closed_latency_cycles + self._t_rp
        # idle bus time in bus bytes
        self._wtr_bytes = h.t_wtr_ns * ghz * full_channel
        self._rtw_bytes = h.t_rtw_ns * ghz * full_channel
        self._refi = h.t_refi_ns * ghz
        self._rfc = h.t_rfc_ns * ghz
        self._refi_idle = self._refi - self._rfc            # a refresh's end, before the next one's start
        self._wq_len = h.write_queue_bursts
        refresh = h.t_rfc_ns > 0                                        # tRFC 0: no refresh at all
        self._chans = [_Channel(BandwidthServer(per_channel, 0.0, name=f"HBM.channel[{c}]"), self.banks_per_channel,
                                self._refi * (c + 0.5) / self.channels if refresh else float("inf"))
                       for c in range(self.channels)]
        # congestion (sampling/warming.py's convoys): a moving mean of reads' time at the DRAM, from
        # their arrival at the controller to their data back, over about the last 64 reads
        self.read_time_mean = self.latency_cycles
        self._congested_at = 2.0 * self.latency_cycles   # reads wait in the queues at least as long as the latency
        self.congested = False
        self.bursts_read = 0
        self.bursts_written = 0
        self.bytes_read = self.bytes_written = 0
        self.row_hits = self.row_misses = self.turnarounds = 0

    # -- the address mapping ---------------------------------------------------------

    def locate(self, burst: int) -> tuple[int, int, int]:
        """(channel, bank, row) of a burst index."""
        chunk = burst // self.bursts_per_chunk
        c = unit_of(chunk, self.channels)
        q = chunk // self.channels // self.chunks_per_row
        return c, unit_of(q, self.banks_per_channel), q // self.banks_per_channel

    # -- fast paths used by the L2 (one burst index each) ----------------------------

    def read_burst(self, t: float, burst: int, sectors: int = 0) -> float:
        """One burst read arriving at the controller at t (`sectors` > 0: only that many 32-B
        sectors of it, as a partial write's fill); returns when its data is back at the L2."""
        self.bursts_read += 1
        nbytes = sectors * self.sector_bytes if sectors else self.granularity_bytes
        self.bytes_read += nbytes
        if nbytes < self.min_access_bytes:               # counted as asked, timed as the smallest access
            nbytes = self.min_access_bytes
        chunk = burst // self.bursts_per_chunk
        nch = self.channels
        q = chunk // nch                                # unit_of(chunk, nch), inlined, its q reused (hot path)
        ch = self._chans[(chunk - q * nch + (q ^ (q >> 3) ^ (q >> 7) ^ (q >> 12) ^ (q >> 18) ^ (q >> 25))) % nch]
        q //= self.chunks_per_row
        if ch.merged and ch.merged[0][0] <= t:
            self._admit(ch, t)
        if t >= ch.next_refresh:
            self._refresh(ch, t)
        ready, lat = self._bank(ch, t, q, False, nbytes)
        if ch.dir != READ_DIR:
            ch.dir = READ_DIR
            nbytes += self._wtr_bytes
            self.turnarounds += 1
        done = ch.bus.serve(ready, nbytes) + lat
        if self._rfc and t < ch.next_refresh - self._refi_idle:     # the channel's refresh is still going on:
            end = ch.next_refresh - self._refi_idle + lat           # the data cannot come before its end
            if end > done:
                done = end
        m = self.read_time_mean = self.read_time_mean + (done - t - self.read_time_mean) * READ_TIME_WEIGHT
        self.congested = m >= self._congested_at
        return done

    def peek_read(self, t: float, burst: int) -> float:
        """When a read of `burst` arriving at t would have its data back at the L2, booking
        nothing and changing no row: the fetch another SM of the whole GPU makes for a line the
        sample's share finds in flight (l2_slices.allocate, sampling/warming.py). It sees the
        channel's refresh, the bank's open row and queue, and the bus's queue as they are."""
        c, b, row = self.locate(burst)
        ch = self._chans[c]
        refresh_at = ch.next_refresh
        cur = ch.rows[b] if t < refresh_at else None      # a refresh due by t closes every row
        if t >= refresh_at:
            refresh_at += ((t - refresh_at) // self._refi + 1) * self._refi
        if cur == row:
            lat, occ = self._hit_lat, 0.0
        elif cur is None:
            lat, occ = self._closed_lat, self._t_rcd
        else:
            lat, occ = self._conflict_lat, self._t_rp + self._t_rcd
        srv = ch.banks[b]
        occ += self._hit_occ
        ready = srv.peek(t, occ) - occ if srv is not None else t
        if ready < t:
            ready = t
        done = ch.bus.peek(ready, self.granularity_bytes) + lat
        if self._rfc and t < refresh_at - self._refi_idle:
            end = refresh_at - self._refi_idle + lat
            if end > done:
                done = end
        return done

    def write_burst(self, t: float, burst: int, sectors: int = 0) -> float:
        """One burst written back at t (`sectors` > 0: only that many dirty 32-B sectors of
        it): queued at its channel, drained with the others. Returns when the queue took it:
        at once while it has room; after a drain, not before the drained writes reach the
        bus (a backlogged channel holds the L2 back)."""
        self.bursts_written += 1
        nbytes = sectors * self.sector_bytes if sectors else self.granularity_bytes
        self.bytes_written += nbytes
        ch = self._chans[unit_of(burst // self.bursts_per_chunk, self.channels)]
        if ch.merged and ch.merged[0][0] <= t:
            self._admit(ch, t)
        return self._enqueue(ch, t, burst, max(nbytes, self.min_access_bytes))

    def rmw_burst(self, t: float, burst: int, fetched: int, written: int) -> tuple[float, float]:
        """A dirty burst with bytes never fetched, evicted at t: its `fetched` 32-B sectors are
        read, merged under the dirty bytes, and the `written` sectors go to the write queue
        when the read's data is back at the L2 (not before: in between, the channel serves
        whatever else arrives, so the write finds the row open only if nothing else used
        the bank). Returns when the queue would take the write (a backlogged channel holds
        the L2 back) and when the read's data is back at the L2."""
        back = self.read_burst(t, burst, fetched)
        self.bursts_written += 1
        nbytes = written * self.sector_bytes
        self.bytes_written += nbytes
        ch = self._chans[unit_of(burst // self.bursts_per_chunk, self.channels)]
        heapq.heappush(ch.merged, (back, burst, max(nbytes, self.min_access_bytes)))
        return (t if t >= ch.accept_at else ch.accept_at), back

    # -- public API -------------------------------------------------------------------

    def read(self, now: float, sectors) -> float:
        """Read the bursts holding `sectors` (sector indices = address >> 5); the latest completion."""
        lst = sectors.tolist() if hasattr(sectors, "tolist") else sectors
        sh = self.burst_shift
        done = now
        for b in sorted({int(s) >> sh for s in lst}):
            r = self.read_burst(now, b)
            if r > done:
                done = r
        return done

    def write(self, now: float, sectors) -> float:
        """Write back the bursts holding `sectors`; when the last was taken by its queue."""
        lst = sectors.tolist() if hasattr(sectors, "tolist") else sectors
        sh = self.burst_shift
        done = now
        for b in sorted({int(s) >> sh for s in lst}):
            done = max(done, self.write_burst(now, b))
        return done

    def drain(self, t: float) -> None:
        """Issue every queued write now (a controller with nothing else to do), and the
        merged writes of read-modify-writes once their reads are back."""
        for ch in self._chans:
            while ch.merged:
                back, burst, nbytes = heapq.heappop(ch.merged)
                self._enqueue(ch, back if back > t else t, burst, nbytes)
            if ch.wq:
                self._drain(ch, t)

    # -- internals ----------------------------------------------------------------------

    def _enqueue(self, ch: _Channel, t: float, burst: int, nbytes: int) -> float:
        """Queue one write burst at its channel; drain when the queue is full."""
        if t >= ch.next_refresh:
            self._refresh(ch, t)
        accepted = t if t >= ch.accept_at else ch.accept_at
        ch.wq.append((burst // self.bursts_per_chunk // self.channels // self.chunks_per_row, burst, nbytes))
        if len(ch.wq) >= self._wq_len:
            self._drain(ch, accepted)
        return accepted

    def _admit(self, ch: _Channel, t: float) -> None:
        """The merged writes whose reads were back by t join the write queue, in time order."""
        merged = ch.merged
        while merged and merged[0][0] <= t:
            back, burst, nbytes = heapq.heappop(merged)
            self._enqueue(ch, back, burst, nbytes)

    def _bank(self, ch: _Channel, t: float, q: int, write: bool, nbytes: int) -> tuple[float, float]:
        """Book bank time for one burst (`nbytes` of it) of channel-local row block q arriving
        at t; return (time the bank lets it onto the bus, its latency from there). A row
        activation first takes a slot of the channel's tFAW window."""
        nb = self.banks_per_channel
        row = q // nb                                   # b = unit_of(q, nb), inlined (hot path)
        b = (q - row * nb + (row ^ (row >> 3) ^ (row >> 7) ^ (row >> 12) ^ (row >> 18) ^ (row >> 25))) % nb
        srv = ch.banks[b]
        if srv is None:
            srv = ch.banks[b] = BandwidthServer(1.0, 0.0, name="HBM.bank")
        occ = self._ccd * (nbytes // self.sector_bytes)
        cur = ch.rows[b]
        if cur == row:
            self.row_hits += 1
            lat = self._hit_lat
            ch.opened[b] += occ
        else:
            self.row_misses += 1
            if cur is None:                               # closed (refreshed): activate only
                lat = self._closed_lat
                occ += self._t_rcd
            else:                                         # precharge the open row, then activate
                lat = self._conflict_lat
                short = self._t_ras - ch.opened[b]
                occ += self._t_rp + self._t_rcd + (short if short > 0 else 0.0) + (self._t_wr if ch.wrote[b] else 0.0)
            ch.rows[b] = row
            ch.opened[b] = self._t_rcd + self._hit_occ
            if self._act_occ:
                t = ch.act.serve(t, self._act_occ_write if write else self._act_occ)
        ch.wrote[b] = write
        start = srv.serve(t, occ)
        return start, lat

    def _drain(self, ch: _Channel, t: float) -> None:
        wq = ch.wq
        ch.wq = []
        wq.sort()
        if ch.dir != WRITE_DIR:
            ch.dir = WRITE_DIR
            extra = self._rtw_bytes
            self.turnarounds += 1
        else:
            extra = 0.0
        bus = ch.bus
        first = None
        for q, _, nbytes in wq:
            ready, _lat = self._bank(ch, t, q, True, nbytes)
            start = bus.serve(ready, nbytes + extra)
            if first is None:
                first = start
            extra = 0.0
        ch.accept_at = first

    def _refresh(self, ch: _Channel, t: float) -> None:
        """The channel's all-bank refresh(es) due by t: every row is closed."""
        ch.next_refresh += ((t - ch.next_refresh) // self._refi + 1) * self._refi
        ch.rows = [None] * self.banks_per_channel
        ch.opened = [0.0] * self.banks_per_channel

    # -- kernel boundaries and statistics ---------------------------------------------

    def flush(self) -> None:
        """Kernel boundary: forget queue state (times restart); queued writes are dropped
        from the timing (they were counted), row buffers are left open."""
        for ch in self._chans:
            ch.bus.clear_bookings()
            ch.act.clear_bookings()
            for srv in ch.banks:
                if srv is not None:
                    srv.clear_bookings()
            ch.wq = []
            ch.merged = []
            ch.accept_at = float("-inf")
            if ch.next_refresh != float("inf"):
                ch.next_refresh = ch.next_refresh % self._refi
        self.read_time_mean = self.latency_cycles
        self.congested = False

    def reset_counters(self) -> None:
        self.bursts_read = self.bursts_written = 0
        self.bytes_read = self.bytes_written = 0
        self.row_hits = self.row_misses = self.turnarounds = 0
        for ch in self._chans:
            ch.bus.reset_stats()

    @property
    def busy_cycles(self) -> float:
        """Bus-busy cycles (transfers, turnarounds, refresh) summed over channels."""
        return sum(ch.bus.busy_cycles for ch in self._chans)

    def counters(self, elapsed_cycles: float | None = None) -> dict[str, float]:
        rd, wr = self.bytes_read, self.bytes_written
        out = {
            "dram__bytes_read.sum": float(rd),
            "dram__bytes_write.sum": float(wr),
            "dram__sectors_read.sum": float(rd // self.sector_bytes),
            "dram__sectors_write.sum": float(wr // self.sector_bytes),
            "gpusim__dram_row_hits.sum": float(self.row_hits),
            "gpusim__dram_row_misses.sum": float(self.row_misses),
            "gpusim__dram_turnarounds.sum": float(self.turnarounds),
        }
        if elapsed_cycles:
            out["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = \
                100.0 * self.busy_cycles / (self.channels * elapsed_cycles)
        return out
