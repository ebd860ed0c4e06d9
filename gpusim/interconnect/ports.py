"""One direction of a GPU's link bundle (all its NVLinks, or its PCIe link): a server that
moves chunks at `bandwidth_GBps` (bytes per ns), one chunk at a time, in arrival order.

A chunk holds the port for bytes / bandwidth; its latency is paid after it leaves the
port (the next chunk does not wait for it), so a stream of chunks runs at the port's
bandwidth and a single chunk takes latency + bytes / bandwidth. Counters: bytes moved
and busy time, for the Nsight-named `nvltx__bytes.sum` / `nvlrx__bytes.sum` totals.
"""
from __future__ import annotations

import simpy


class Port:
    def __init__(self, env: simpy.Environment, name: str, bandwidth_GBps: float):
        if not bandwidth_GBps > 0:
            raise ValueError(f"port {name}: bandwidth must be positive, got {bandwidth_GBps}")
        self.env, self.name = env, name
        self.bytes_per_ns = bandwidth_GBps          # GB/s == bytes/ns
        self.server = simpy.Resource(env, capacity=1)
        self.bytes = 0.0
        self.busy_ns = 0.0

    def time_ns(self, nbytes: float) -> float:
        return nbytes / self.bytes_per_ns

    def account(self, nbytes: float, ns: float) -> None:
        self.bytes += nbytes
        self.busy_ns += ns
