"""The GPU's port to its peers' memory (NVLink peer access; PCIe where the system has no NVLink).

What is modelled: loads, stores and atomics an SM issues to an address in a peer GPU's
memory (`gpusim.launch(..., peer_args=...)`). After the crossbar (`noc.py`, booked by
`MemorySystem`) such a request leaves through this port instead of going to the local L2:

- egress (tx) and ingress (rx): two `BandwidthServer`s, one per direction, each of the
  port's payload bandwidth converted to bytes per SM cycle (times `sm_fraction` in sampled
  simulation, like every shared unit). Store and atomic operand data is booked on egress
  when it enters the port; read data (and atomic results) on ingress when the peer sends it
  back. Read requests and write acknowledgements are header-only packets: not booked, not
  counted (NVLink's packet overhead is inside `nvlink.data_efficiency`).
- bandwidth by `system.topology`: "nvswitch": all of the GPU's links into the switches,
  `nvlink.bandwidth_GBps`, one port shared by every peer; "direct": the links to that peer
  only, `nvlink.links // (gpu_count - 1)` of them, a separate port per peer; "pcie": the
  host link, `pcie.bandwidth_GBps`, shared.
- one-way latency: `nvlink.latency_ns` (+ `system.switch_latency_ns` for "nvswitch"),
  `pcie.latency_ns` for "pcie"; each request crosses it twice (request, response or ack).
- the peer's memory, as a fixed latency (its caches and DRAM are not simulated): a read
  takes an L2 miss there, `l2.hit_latency_cycles + hbm.latency_ns`; a store is
  acknowledged by its L2 after `l2.hit_latency_cycles`; an atomic takes the L2 hit latency
  plus `l2.atomic_latency_cycles`.

So an unloaded peer read costs 2 x one-way + the peer's L2-miss latency, after the
crossbar; a stream of them is bound by the ingress bandwidth.

Not modelled: the peer's L2 and HBM (hits, bandwidth, contention with the peer's own
work), traffic other GPUs send into this GPU's links, flow-control credits and per-link
striping (the links form one fluid server), request headers as bytes, address
translation across GPUs (no peer TLB misses), atomics' serialisation per address at the peer.

Counters (Nsight Compute names): `nvltx__bytes.sum` (payload bytes sent: store and atomic
data), `nvlrx__bytes.sum` (payload bytes received: read data, atomic results), and
`gpusim__nvlink_wait_cycles.sum` (queueing on both directions); with an elapsed time
`gpusim__nvl{tx,rx}_throughput.pct_of_peak_sustained_elapsed`.

Sources: NVIDIA H100 whitepaper (NVLink 4, 18 links, NVSwitch), CUDA C++ Programming
Guide "Peer-to-Peer Memory Access"; the latencies and efficiency are the spec's
(`gpusim/specs/interconnect.py`).
"""
from __future__ import annotations

from gpusim.errors import ConfigError
from gpusim.timing.memory.servers import BandwidthServer


def port_bandwidth_GBps(spec) -> float:
    """Payload bandwidth, one direction, of the port to one peer (see module doc)."""
    topo = spec.system.topology
    if topo == "pcie":
        return spec.pcie.bandwidth_GBps
    nvl = spec.nvlink
    if topo == "direct":
        links = nvl.links // max(spec.system.gpu_count - 1, 1)
        return links * nvl.link_bandwidth_GBps * nvl.data_efficiency
    return nvl.bandwidth_GBps


def one_way_latency_ns(spec) -> float:
    """GPU memory system to a peer's, one way."""
    topo = spec.system.topology
    if topo == "pcie":
        return spec.pcie.latency_ns
    if topo == "nvswitch":
        return spec.nvlink.latency_ns + spec.system.switch_latency_ns
    return spec.nvlink.latency_ns


class _Link:
    """One port's two directions."""

    __slots__ = ("tx", "rx")

    def __init__(self, bytes_per_cycle: float, name: str):
        self.tx = BandwidthServer(bytes_per_cycle, 0.0, name=f"{name}.tx")
        self.rx = BandwidthServer(bytes_per_cycle, 0.0, name=f"{name}.rx")


class PeerPort:
    """`read`, `write`, `atomic` (t, peer, nbytes) -> when the data or acknowledgement is
    back at this GPU's side of the port (the caller adds the crossbar's way back)."""

    def __init__(self, spec, sm_fraction: float = 1.0):
        if spec.system.gpu_count < 2:
            raise ConfigError(f"peer access needs a system of at least 2 GPUs; system.gpu_count is "
                              f"{spec.system.gpu_count}")
        self.spec = spec
        self.topology = spec.system.topology
        ghz = spec.clocks.sm_clock_mhz / 1000.0
        self.bandwidth_GBps = port_bandwidth_GBps(spec)
        if not self.bandwidth_GBps > 0:
            raise ConfigError(f"peer access over system.topology {self.topology!r}: the port's bandwidth is "
                              f"{self.bandwidth_GBps} GB/s")
        self.bytes_per_cycle = self.bandwidth_GBps / ghz * sm_fraction
        self.one_way_cycles = one_way_latency_ns(spec) * ghz
        self.read_cycles = spec.l2.hit_latency_cycles + spec.hbm.latency_ns * ghz
        self.write_cycles = float(spec.l2.hit_latency_cycles)
        self.atomic_cycles = float(spec.l2.hit_latency_cycles + spec.l2.atomic_latency_cycles)
        self._links: dict[int, _Link] = {}

    @property
    def ports(self) -> int:
        """Port(s) used so far: one per peer with topology "direct", else one shared (at least 1)."""
        return max(len(self._links), 1)

    def _link(self, peer: int) -> _Link:
        key = peer if self.topology == "direct" else -1
        link = self._links.get(key)
        if link is None:
            link = self._links[key] = _Link(self.bytes_per_cycle, "NVLink" if self.topology != "pcie" else "PCIe")
        return link

    def read(self, t: float, peer: int, nbytes: int) -> float:
        """A read request entering the port at `t`; when its `nbytes` of data are back."""
        sent = t + self.one_way_cycles + self.read_cycles           # the peer starts sending the data
        return self._link(peer).rx.serve(sent, nbytes) + self.one_way_cycles

    def write(self, t: float, peer: int, nbytes: int) -> float:
        """A write of `nbytes` entering the port at `t`; when its acknowledgement is back."""
        out = self._link(peer).tx.serve(t, nbytes)
        return out + 2 * self.one_way_cycles + self.write_cycles

    def atomic(self, t: float, peer: int, nbytes: int, reduction: bool = False) -> float:
        """Atomics on `nbytes` of sectors entering at `t`; when their results (RED: the ack) are back."""
        link = self._link(peer)
        done = link.tx.serve(t, nbytes) + self.one_way_cycles + self.atomic_cycles
        if not reduction:
            done = link.rx.serve(done, nbytes)
        return done + self.one_way_cycles

    # -- kernel boundaries and statistics -------------------------------------------------

    def flush(self) -> None:
        for link in self._links.values():
            link.tx.clear_bookings()
            link.rx.clear_bookings()

    def reset_counters(self) -> None:
        for link in self._links.values():
            link.tx.reset_stats()
            link.rx.reset_stats()

    def counters(self, elapsed_cycles: float | None = None) -> dict[str, float]:
        links = list(self._links.values())
        tx = sum(lk.tx.bytes_served for lk in links)
        rx = sum(lk.rx.bytes_served for lk in links)
        out = {"nvltx__bytes.sum": float(tx), "nvlrx__bytes.sum": float(rx),
               "gpusim__nvlink_wait_cycles.sum": float(sum(lk.tx.wait_cycles + lk.rx.wait_cycles for lk in links))}
        if elapsed_cycles:
            cap = self.bytes_per_cycle * elapsed_cycles * self.ports
            out["gpusim__nvltx_throughput.pct_of_peak_sustained_elapsed"] = 100.0 * tx / cap
            out["gpusim__nvlrx_throughput.pct_of_peak_sustained_elapsed"] = 100.0 * rx / cap
        return out
