"""HBM: the DRAM behind the L2, as `channels` independent bandwidth servers.

What is modelled:
- `spec.hbm.channels` channels (pseudo-channels across all stacks), each a
  `BandwidthServer` with `bandwidth_GBps / channels`, in bytes per SM clock cycle
  (`GPUSpec.hbm_bytes_per_cycle`), times `sm_fraction` in sampled simulation.
- Latency: `latency_ns` (the unloaded time an L2 miss adds, measured from the L2) in SM
  cycles, `latency_ns * sm_clock_mhz / 1000`, plus the channel's queueing delay.
- Granularity: every access moves one burst of `access_granularity_bytes`, aligned.
  With 32 a sector is one burst. With 64 a burst holds a pair of sectors: a lone
  32-B sector read or write costs 64 B of channel time and counts 64 B in
  `dram__bytes_*` (the L2 fills the sibling sector too, see `l2.py`), while a warp that
  reads both sectors of the pair costs one 64-B burst. So 64 halves the useful DRAM
  bandwidth of 32-B-strided or random sector traffic and leaves streaming unchanged.
- Which channel: `hashing.unit_of(burst index, channels)`.
- Counters: `dram__bytes_read.sum`, `dram__bytes_write.sum`, `dram__sectors_read.sum`,
  `dram__sectors_write.sum` (32-B units of those bytes); `utilisation(elapsed)` gives
  `dram__throughput.avg.pct_of_peak_sustained_elapsed`.

Not modelled: banks, row-buffer hits and misses, refresh, read/write turnaround, so a
stream reaches 100 % of `bandwidth_GBps` (hardware reaches about 90-93 %; calibrate
`bandwidth_GBps` down to the sustained figure). Dirty L2 lines are not written back at
kernel end (the L2 keeps them, as on hardware), so `dram__bytes_write.sum` can be below
the bytes a kernel stored.

Sources: [H100-WP] NVIDIA H100 Tensor Core GPU Architecture (2022): 5 HBM3 stacks,
10 512-bit controllers, 3.35 TB/s; Jia et al., "Dissecting the NVIDIA Volta GPU
Architecture via Microbenchmarking" (2018) for the load-to-use latency composition;
Nsight Compute Kernel Profiling Guide, metrics reference (dram__ names).
"""
from __future__ import annotations

from gpusim.errors import ConfigError
from gpusim.timing.memory.hashing import unit_of
from gpusim.timing.memory.servers import BandwidthServer


class HBM:
    """`read(now, sectors)`, `write(now, sectors)` -> completion time (SM cycles)."""

    def __init__(self, spec, sm_fraction: float = 1.0):
        h = spec.hbm
        gran = h.access_granularity_bytes
        sector = spec.l2.sector_bytes
        if gran % sector or gran & (gran - 1):
            raise ConfigError(f"HBMSpec.access_granularity_bytes must be a power-of-two multiple of the "
                              f"{sector}-byte sector, got {gran}")
        self.spec = spec
        self.channels = h.channels
        self.granularity_bytes = gran
        self.sector_bytes = sector
        self.sectors_per_burst = gran // sector
        self.burst_shift = self.sectors_per_burst.bit_length() - 1   # sector index >> shift = burst index
        self.latency_cycles = h.latency_ns * spec.clocks.sm_clock_mhz / 1000.0
        self.bytes_per_cycle = spec.hbm_bytes_per_cycle * sm_fraction
        per_channel = self.bytes_per_cycle / h.channels
        self._servers = [BandwidthServer(per_channel, self.latency_cycles, name=f"HBM.channel[{c}]")
                         for c in range(h.channels)]
        self.bursts_read = 0
        self.bursts_written = 0

    # -- fast paths used by the L2 (one burst index each) ----------------------------

    def read_burst(self, t: float, burst: int) -> float:
        """One burst read arriving at the controller at t; returns when its data is back at the L2."""
        self.bursts_read += 1
        return self._servers[unit_of(burst, self.channels)].serve(t, self.granularity_bytes)

    def write_burst(self, t: float, burst: int) -> float:
        self.bursts_written += 1
        return self._servers[unit_of(burst, self.channels)].serve(t, self.granularity_bytes)

    # -- public API -------------------------------------------------------------------

    def read(self, now: float, sectors) -> float:
        """Read the bursts holding `sectors` (sector indices = address >> 5); the latest completion."""
        return self._access(now, sectors, self.read_burst)

    def write(self, now: float, sectors) -> float:
        return self._access(now, sectors, self.write_burst)

    def _access(self, now, sectors, op) -> float:
        lst = sectors.tolist() if hasattr(sectors, "tolist") else sectors
        sh = self.burst_shift
        done = now
        for b in sorted({int(s) >> sh for s in lst}):
            r = op(now, b)
            if r > done:
                done = r
        return done

    def flush(self) -> None:
        """Kernel boundary: forget queue state (times restart); nothing is written back."""
        for s in self._servers:
            s.clear_bookings()

    def reset_counters(self) -> None:
        self.bursts_read = self.bursts_written = 0
        for s in self._servers:
            s.reset_stats()

    @property
    def busy_cycles(self) -> float:
        """Channel-busy cycles summed over channels."""
        return sum(s.busy_cycles for s in self._servers)

    def counters(self, elapsed_cycles: float | None = None) -> dict[str, float]:
        rd = self.bursts_read * self.granularity_bytes
        wr = self.bursts_written * self.granularity_bytes
        out = {
            "dram__bytes_read.sum": float(rd),
            "dram__bytes_write.sum": float(wr),
            "dram__sectors_read.sum": float(rd // self.sector_bytes),
            "dram__sectors_write.sum": float(wr // self.sector_bytes),
        }
        if elapsed_cycles:
            out["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = \
                100.0 * self.busy_cycles / (self.channels * elapsed_cycles)
        return out
