"""The GPUs of a system and the ports that join them, wired by `spec.system.topology`.

- nvswitch (HGX boards): every GPU's links go into the switches; a GPU has one egress and
  one ingress port of nvlink.bandwidth_GBps (all its links), any GPU reaches any other
  through the switch (+ system.switch_latency_ns), and several flows out of one GPU share
  its egress port, several flows into one GPU share its ingress.
- direct (boards without a switch, e.g. DGX-1): the links are split evenly over the
  peers; each ordered pair has its own port of links // (n - 1) links.
- pcie: every GPU's host link, pcie.bandwidth_GBps each way; traffic crosses the host
  bridge (pcie.latency_ns).

`transfer(src, dst, nbytes, efficiency)` is a SimPy process: the chunk holds the
sender's egress port for nbytes / (bandwidth x efficiency), then (through a switch or
the host) the receiver's ingress port as long, so flows from one GPU to several peers do
not block each other behind one busy receiver and a stream of chunks runs at the slower
port's rate; an idle receiver overlaps the sender (cut-through, see `carry`). Then the
route's latency. Counters per GPU: nvltx__bytes.sum (sent), nvlrx__bytes.sum
(received), payload bytes.
"""
from __future__ import annotations

import simpy

from gpusim.errors import ConfigError
from gpusim.interconnect.ports import Port


class Fabric:
    def __init__(self, spec, env: simpy.Environment | None = None, gpus: int | None = None):
        self.spec = spec
        self.env = env or simpy.Environment()
        self.n = int(gpus if gpus is not None else spec.system.gpu_count)
        if self.n < 1:
            raise ConfigError(f"a system needs at least one GPU, got {self.n}")
        if self.n > 1 and spec.system.topology != "pcie" and spec.nvlink.links == 0:
            raise ConfigError(f"{spec.name}: topology {spec.system.topology!r} needs NVLinks; nvlink.links is 0")
        self.topology = spec.system.topology
        nv = spec.nvlink
        if self.topology == "nvswitch":
            bw = nv.bandwidth_GBps
            self.egress = {g: Port(self.env, f"gpu{g}.nvlink.tx", bw) for g in range(self.n)}
            self.ingress = {g: Port(self.env, f"gpu{g}.nvlink.rx", bw) for g in range(self.n)}
            self.latency_ns = nv.latency_ns + spec.system.switch_latency_ns
        elif self.topology == "direct":
            per_peer = nv.links // max(1, self.n - 1)
            if self.n > 1 and per_peer < 1:
                raise ConfigError(f"{spec.name}: {nv.links} NVLinks cannot reach {self.n - 1} peers directly")
            bw = per_peer * nv.link_bandwidth_GBps * nv.data_efficiency
            self.egress = {(a, b): Port(self.env, f"gpu{a}->gpu{b}.nvlink", bw)
                           for a in range(self.n) for b in range(self.n) if a != b}
            self.ingress = {}
            self.latency_ns = nv.latency_ns
        else:
            bw = spec.pcie.bandwidth_GBps
            self.egress = {g: Port(self.env, f"gpu{g}.pcie.tx", bw) for g in range(self.n)}
            self.ingress = {g: Port(self.env, f"gpu{g}.pcie.rx", bw) for g in range(self.n)}
            self.latency_ns = spec.pcie.latency_ns
        self.sent = [0.0] * self.n
        self.received = [0.0] * self.n

    def route(self, src: int, dst: int) -> tuple[Port, ...]:
        """The ports a chunk from GPU src to GPU dst holds, in acquisition order."""
        if not (0 <= src < self.n and 0 <= dst < self.n) or src == dst:
            raise ConfigError(f"no route from GPU {src} to GPU {dst} in a system of {self.n} GPUs")
        if self.topology == "direct":
            return (self.egress[(src, dst)],)
        return (self.egress[src], self.ingress[dst])

    def route_bandwidth_GBps(self, src: int, dst: int) -> float:
        return min(p.bytes_per_ns for p in self.route(src, dst))

    def transfer(self, src: int, dst: int, nbytes: float, efficiency: float = 1.0, min_ns: float = 0.0):
        """SimPy process: move nbytes of payload from src to dst; ends when they have arrived.
        `efficiency` < 1 stretches the wire time (a protocol's flags/headers); `min_ns` is a
        floor on the time the ports are held (a sender slower than the link)."""
        if min_ns:
            yield self.env.timeout(min_ns)
        return (yield from self.carry(src, dst, nbytes, efficiency))

    def carry(self, src: int, dst: int, nbytes: float, efficiency: float = 1.0, granted: simpy.Event | None = None):
        """SimPy process: one chunk over the route, landed at dst when it returns.

        The chunk holds the egress port, then the ingress port, each for its wire time;
        an uncontended receiver overlaps the sender (cut-through: the chunk lands one
        latency after leaving the egress port, or when the ingress port has finished it,
        whichever is later), a busy one delays it. Returns the time it queued for the ports;
        `granted` (if given) succeeds with that time once the last port has taken the chunk."""
        ports = self.route(src, dst)
        ns = waited = 0.0
        for i, p in enumerate(ports):
            with p.server.request() as r:
                asked = self.env.now
                yield r
                waited += self.env.now - asked
                if granted is not None and i == len(ports) - 1:
                    granted.succeed(waited)
                ns = p.time_ns(nbytes) / efficiency
                yield self.env.timeout(ns)
                p.account(nbytes, ns)
            if i == 0:
                self.sent[src] += nbytes
        self.received[dst] += nbytes
        credit = ns if len(ports) > 1 else 0.0
        yield self.env.timeout(max(0.0, self.latency_ns - credit))
        return waited

    def counters(self) -> dict[str, list[float]]:
        return {"nvltx__bytes.sum": list(self.sent), "nvlrx__bytes.sum": list(self.received)}


class RankView:
    """Ranks 0..k-1 of one collective placed on GPUs `gpus` of a larger fabric: the same ports,
    so the collective shares them with whatever else runs on that fabric (`gpusim.System`)."""

    def __init__(self, fabric: Fabric, gpus):
        self.fabric, self.gpus, self.env = fabric, tuple(int(g) for g in gpus), fabric.env
        if len(set(self.gpus)) != len(self.gpus) or not all(0 <= g < fabric.n for g in self.gpus):
            raise ConfigError(f"ranks must be distinct GPUs of the fabric's {fabric.n}, got {list(gpus)}")
        self.n = len(self.gpus)

    def route_bandwidth_GBps(self, src: int, dst: int) -> float:
        return self.fabric.route_bandwidth_GBps(self.gpus[src], self.gpus[dst])

    def carry(self, src: int, dst: int, nbytes: float, efficiency: float = 1.0, granted: simpy.Event | None = None):
        return (yield from self.fabric.carry(self.gpus[src], self.gpus[dst], nbytes, efficiency))

    def transfer(self, src: int, dst: int, nbytes: float, efficiency: float = 1.0, min_ns: float = 0.0):
        return (yield from self.fabric.transfer(self.gpus[src], self.gpus[dst], nbytes, efficiency, min_ns))

    @property
    def sent(self) -> list[float]:
        return [self.fabric.sent[g] for g in self.gpus]
