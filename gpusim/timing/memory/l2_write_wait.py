"""The wait a read that misses the L2 has behind the lines stores allocated at its slice lately.

Measured (docs/mechanisms_24.md sections 44-45, `validate/copy_latency_probe.py`'s `store_beside`, H200 and
H100): a read that misses the L2 waits longer the more lines stores allocate, linearly (195-198 SM cycles per
TB/s of new 128-B lines on the H200, 253-287 on the H100, to 1.7 TB/s); a store of one 32-B sector into a new
line costs as much as a whole line, four stores sharing one new line as much as one, stores into lines the L2
holds and reads that hit next to none. What inside the L2 holds the miss is not known, so this unit gives the
law as measured: each slice keeps a count of the lines writes allocated there, decayed with time constant
`WINDOW_CYCLES` (SM cycles), and a read miss goes on to DRAM `l2.write_miss_read_wait_ns_per_gline_per_s`
times that rate later, the rate taken as G lines a second over the whole GPU's slices (so a sampled share of
the slices, each as busy as on the whole GPU, waits as the whole GPU does).

Requests reach a slice roughly, not exactly, in time order (SMs are simulated a stretch at a time): an
allocation older than the slice's latest is added decayed to it, and a read older than it takes the count as
it stands.
"""
from __future__ import annotations

import math

WINDOW_CYCLES = 1000.0       # SM cycles over which a slice's rate of lines allocated by writes is averaged (decay time)


class WriteAllocationWait:
    """Per slice: `allocated(si, t)` a write allocated a line at slice si at SM cycle t; `wait(si, t)` the
    SM cycles a read miss there at t waits before going on to DRAM. `enabled`: the spec's wait is not 0."""

    def __init__(self, spec, slices: int):
        ghz = spec.clocks.sm_clock_mhz / 1000.0
        # the wait in SM cycles per unit of decayed count: ns per G lines a second GPU-wide, where one slice's rate
        # (count / WINDOW_CYCLES lines a cycle) times the whole GPU's slices times ghz is G lines a second
        self._per_count = (spec.l2.write_miss_read_wait_ns_per_gline_per_s * spec.l2.slices * ghz * ghz
                           / WINDOW_CYCLES)
        self.enabled = self._per_count > 0
        self._slices = slices
        self.flush()

    def flush(self) -> None:
        """Kernel boundary: time restarts, nothing allocated lately."""
        self._count = [0.0] * self._slices
        self._time = [0.0] * self._slices

    def allocated(self, si: int, t: float) -> None:
        last = self._time[si]
        if t > last:
            self._count[si] = self._count[si] * math.exp((last - t) / WINDOW_CYCLES) + 1.0
            self._time[si] = t
        else:                                   # from an SM behind in time: decayed to the slice's latest
            self._count[si] += math.exp((t - last) / WINDOW_CYCLES)

    def wait(self, si: int, t: float) -> float:
        c = self._count[si]
        if not c:
            return 0.0
        last = self._time[si]
        return self._per_count * (c * math.exp((last - t) / WINDOW_CYCLES) if t > last else c)
