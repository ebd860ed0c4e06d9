"""The SM <-> L2 crossbar (NoC) as one shared bandwidth server plus a fixed traversal latency.

What is modelled:
- One `BandwidthServer` of `spec.noc.bandwidth_bytes_per_cycle` (all SMs together,
  times `sm_fraction` in sampled simulation) carrying the data of every request: a
  read's returning sectors, a write's or atomic's outgoing sectors. The bytes are booked
  when the request enters the crossbar (`traverse`), so a read's response bandwidth is
  reserved up front; the response then takes `latency_cycles` back without being booked
  again. That keeps the arrivals at the server close to time order (a response booked
  at its real return time would arrive hundreds of cycles out of order).
- `latency_cycles` each way: `traverse` returns the arrival time at the L2 slice
  (start of service + latency); `MemorySystem` adds `latency_cycles` for the way back.

Not modelled: separate request and response networks (reads and writes share the one
bandwidth, as a half-duplex link would), request headers (a read request costs no
bandwidth on the way out), per-SM port limits (an SM may take any share of the
crossbar), the GPC hierarchy. The crossing between the L2 partitions is the L2's
fabric (`l2.py`), not this crossbar: an SM talks to its near partition only.

Counters (not Nsight metrics; the crossbar has none of its own at this level):
`gpusim__noc_bytes.sum`, `gpusim__noc_wait_cycles.sum`, and with an elapsed time
`gpusim__noc_throughput.pct_of_peak_sustained_elapsed`.
"""
from __future__ import annotations

from gpusim.timing.memory.servers import BandwidthServer


class NoC:
    """`traverse(t, nbytes) -> arrival time at the L2`; `latency_cycles` for the way back."""

    def __init__(self, spec, sm_fraction: float = 1.0):
        self.latency_cycles = spec.noc.latency_cycles
        self.bytes_per_cycle = spec.noc.bandwidth_bytes_per_cycle * sm_fraction
        self.server = BandwidthServer(self.bytes_per_cycle, self.latency_cycles, name="NoC")
        self.traverse = self.server.serve          # bound method: the hot path has no extra call

    def flush(self) -> None:
        """Kernel boundary: forget queue state, keep statistics."""
        self.server.clear_bookings()

    def reset_counters(self) -> None:
        self.server.reset_stats()

    def counters(self, elapsed_cycles: float | None = None) -> dict[str, float]:
        s = self.server
        out = {"gpusim__noc_bytes.sum": float(s.bytes_served), "gpusim__noc_wait_cycles.sum": float(s.wait_cycles)}
        if elapsed_cycles:
            out["gpusim__noc_throughput.pct_of_peak_sustained_elapsed"] = 100.0 * s.utilisation(elapsed_cycles)
        return out
