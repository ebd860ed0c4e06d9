"""HBM: the DRAM behind the L2, as pseudo-channels with banks, row buffers, a shared
data bus per channel, read/write turnaround and refresh.

What is modelled (per pseudo-channel, `spec.hbm.channels` of them):
- Address mapping. Every access moves one burst of `access_granularity_bytes`
  (aligned). A row of `row_bytes` holds contiguous addresses; consecutive rows go to
  channels by `hashing.unit_of(row index, channels)` (each aligned group of `channels`
  rows a rotation of the channels), and within a channel the q-th row it receives goes
  to bank `unit_of(q, banks_per_channel)` as row q // banks. A stream therefore walks
  whole rows and spreads them over every channel and bank.
- Banks: each has one row buffer (open-page policy: a row stays open until a request
  for another row of that bank). A request is a row hit (its row is open), a row miss
  on a closed bank (after a refresh) or a row conflict (another row open). Each bank is a
  `BandwidthServer` of bank time: a hit occupies it `accesses * t_ccd_l` (an access is
  one 32-B column command), a conflict `t_rp + t_rcd` more, plus the write recovery
  `t_wr` if the row being closed was last written, plus what the closed row's open time
  fell short of `t_ras`. So a bank cycles rows at most every tRAS + tRP (longer after
  writes), and traffic without row hits is limited by how many banks work in parallel.
- Data bus: one `BandwidthServer` per channel of `bandwidth_GBps / channels`; a burst
  books its bytes there once its bank is ready. When the bus changes direction the
  change books idle bus time: `t_wtr` from a write to a read, `t_rtw` from a read to a
  write.
- Write queue: write-backs are collected per channel and issued together, in address
  order, when `write_queue_bursts` of them are waiting (the controller's write drain;
  reads go first otherwise). So a stream of reads and writes turns the bus around once
  per drain, not once per burst. Writes still queued when a kernel ends are not timed
  (they are counted).
- Refresh: every `t_refi` (staggered over the channels) an all-bank refresh books
  `t_rfc` of the channel's bus and closes every row.
- Latency: `latency_ns` is the unloaded latency of a row conflict (what a pointer chase
  over a large footprint measures: its bank has some other row open). A row hit comes
  back `t_rp + t_rcd` sooner, a closed bank `t_rp` sooner. An idle system adds no
  queueing: completion = arrival + that latency exactly.
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
different banks), tRRD and tFAW (activation rate limits), per-bank refresh, the command
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

from gpusim.errors import ConfigError
from gpusim.timing.memory.hashing import unit_of
from gpusim.timing.memory.servers import BandwidthServer

READ_DIR, WRITE_DIR = 0, 1
CONFLICT = -1                      # a bank's open row before we know it: some other row


class _Channel:
    """One pseudo-channel: its bus, its banks (created on first use) and their rows."""

    __slots__ = ("bus", "banks", "rows", "opened", "wrote", "dir", "wq", "next_refresh")

    def __init__(self, bus: BandwidthServer, banks: int, first_refresh: float):
        self.bus = bus
        self.banks: list = [None] * banks            # bank -> BandwidthServer of bank time
        self.rows = [CONFLICT] * banks               # open row per bank (None: closed)
        self.opened = [0.0] * banks                  # bank time used since the open row's activation
        self.wrote = [False] * banks                 # the open row was last written (tWR before closing it)
        self.dir = READ_DIR
        self.wq: list = []                           # queued write bursts (channel-local index)
        self.next_refresh = first_refresh


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
        self.burst_shift = self.sectors_per_burst.bit_length() - 1   # sector index >> shift = burst index
        self.bursts_per_row = h.row_bytes // gran
        ghz = spec.clocks.sm_clock_mhz / 1000.0
        self.latency_cycles = h.latency_ns * ghz
        self.bytes_per_cycle = spec.hbm_bytes_per_cycle * sm_fraction
        full_channel = per_channel = self.bytes_per_cycle / self.channels   # rounding the count keeps the total
        self._t_rcd, self._t_rp = h.t_rcd_ns * ghz, h.t_rp_ns * ghz
        self._t_ras, self._t_wr = h.t_ras_ns * ghz, h.t_wr_ns * ghz
        self._hit_occ = h.t_ccd_l_ns * ghz * (gran // sector)          # one burst: its column commands
        self._hit_lat = self.latency_cycles - self._t_rp - self._t_rcd
        self._closed_lat = self.latency_cycles - self._t_rp
        # idle bus time in bus bytes
        self._wtr_bytes = h.t_wtr_ns * ghz * full_channel
        self._rtw_bytes = h.t_rtw_ns * ghz * full_channel
        self._refi = h.t_refi_ns * ghz
        self._rfc_bytes = h.t_rfc_ns * ghz * full_channel
        self._wq_len = h.write_queue_bursts
        self._chans = [_Channel(BandwidthServer(per_channel, 0.0, name=f"HBM.channel[{c}]"), self.banks_per_channel,
                                self._refi * (c + 0.5) / self.channels)
                       for c in range(self.channels)]
        self.bursts_read = 0
        self.bursts_written = 0
        self.row_hits = self.row_misses = self.turnarounds = 0

    # -- the address mapping ---------------------------------------------------------

    def locate(self, burst: int) -> tuple[int, int, int]:
        """(channel, bank, row) of a burst index."""
        row_index = burst // self.bursts_per_row
        c = unit_of(row_index, self.channels)
        q = row_index // self.channels
        return c, unit_of(q, self.banks_per_channel), q // self.banks_per_channel

    # -- fast paths used by the L2 (one burst index each) ----------------------------

    def read_burst(self, t: float, burst: int) -> float:
        """One burst read arriving at the controller at t; returns when its data is back at the L2."""
        self.bursts_read += 1
        row_index = burst // self.bursts_per_row
        nch = self.channels
        ch = self._chans[unit_of(row_index, nch)]
        q = row_index // nch
        if t >= ch.next_refresh:
            self._refresh(ch, t)
        ready, lat = self._bank(ch, t, q, False)
        nbytes = self.granularity_bytes
        if ch.dir != READ_DIR:
            ch.dir = READ_DIR
            nbytes += self._wtr_bytes
            self.turnarounds += 1
        return ch.bus.serve(ready, nbytes) + lat

    def write_burst(self, t: float, burst: int) -> None:
        """One burst written back at t: queued at its channel, drained with the others."""
        self.bursts_written += 1
        row_index = burst // self.bursts_per_row
        nch = self.channels
        ch = self._chans[unit_of(row_index, nch)]
        ch.wq.append((row_index // nch, burst))
        if len(ch.wq) >= self._wq_len:
            self._drain(ch, t)

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
        """Write back the bursts holding `sectors`; returns `now` (write-backs are not waited for)."""
        lst = sectors.tolist() if hasattr(sectors, "tolist") else sectors
        sh = self.burst_shift
        for b in sorted({int(s) >> sh for s in lst}):
            self.write_burst(now, b)
        return now

    def drain(self, t: float) -> None:
        """Issue every queued write now (a controller with nothing else to do)."""
        for ch in self._chans:
            if ch.wq:
                self._drain(ch, t)

    # -- internals ----------------------------------------------------------------------

    def _bank(self, ch: _Channel, t: float, q: int, write: bool) -> tuple[float, float]:
        """Book bank time for one burst of channel-local row block q arriving at t; return
        (time the bank lets it onto the bus, its latency from there)."""
        nb = self.banks_per_channel
        b = unit_of(q, nb)
        row = q // nb
        srv = ch.banks[b]
        if srv is None:
            srv = ch.banks[b] = BandwidthServer(1.0, 0.0, name="HBM.bank")
        occ = self._hit_occ
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
                lat = self.latency_cycles
                short = self._t_ras - ch.opened[b]
                occ += self._t_rp + self._t_rcd + (short if short > 0 else 0.0) + (self._t_wr if ch.wrote[b] else 0.0)
            ch.rows[b] = row
            ch.opened[b] = self._t_rcd + self._hit_occ
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
        gran = self.granularity_bytes
        bus = ch.bus
        for q, _ in wq:
            ready, _lat = self._bank(ch, t, q, True)
            bus.serve(ready, gran + extra)
            extra = 0.0

    def _refresh(self, ch: _Channel, t: float) -> None:
        while t >= ch.next_refresh:
            ch.bus.serve(ch.next_refresh, self._rfc_bytes)
            ch.next_refresh += self._refi
        ch.rows = [None] * self.banks_per_channel
        ch.opened = [0.0] * self.banks_per_channel

    # -- kernel boundaries and statistics ---------------------------------------------

    def flush(self) -> None:
        """Kernel boundary: forget queue state (times restart); queued writes are dropped
        from the timing (they were counted), row buffers are left open."""
        for ch in self._chans:
            ch.bus.clear_bookings()
            for srv in ch.banks:
                if srv is not None:
                    srv.clear_bookings()
            ch.wq = []
            ch.next_refresh = ch.next_refresh % self._refi

    def reset_counters(self) -> None:
        self.bursts_read = self.bursts_written = 0
        self.row_hits = self.row_misses = self.turnarounds = 0
        for ch in self._chans:
            ch.bus.reset_stats()

    @property
    def busy_cycles(self) -> float:
        """Bus-busy cycles (transfers, turnarounds, refresh) summed over channels."""
        return sum(ch.bus.busy_cycles for ch in self._chans)

    def counters(self, elapsed_cycles: float | None = None) -> dict[str, float]:
        rd = self.bursts_read * self.granularity_bytes
        wr = self.bursts_written * self.granularity_bytes
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
