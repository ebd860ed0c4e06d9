"""Collective algorithms as SimPy processes over the fabric, carrying slices.

All of a call's channels run the same pattern over the same ports, so they are simulated
together: one slice stands for the matching slot of every channel (bytes = channels x
slot), and a sender moves it no faster than the channels can copy it
(channels x nccl.channel_bandwidth_GBps) nor than the route allows (fabric ports, with
the protocol's payload efficiency); the copy and the link pipeline. Through a switch a slice is stored and forwarded:
it holds the sender's egress port, then the receiver's ingress port (so flows out of one
GPU to different peers do not block each other behind a busy receiver). After a slice
leaves the ports it arrives one route latency plus one protocol step latency later (flag or fifo handshake); a rank forwards a
slice only once it has arrived (the data dependency of a pipelined ring or chain).

- ring(steps): every step, rank r sends one slice-set to rank r+1; step s of slice j waits
  for step s-1 of slice j to arrive from r-1 (all_reduce: 2(n-1) steps of size/n;
  all_gather, reduce_scatter: n-1 steps of size/n).
- chain(order): a pipelined chain (broadcast from the root; reduce towards it). Each rank
  forwards what lands as it lands (NCCL's direct pointers over NVLink), so only the first
  hop pays the protocol's step latency; later hops pay the link latency.
- tree: NCCL's intra-node tree is a chain: reduce up to rank 0, then broadcast down,
  slice by slice, both directions at once; its rate is scaled by nccl.tree_efficiency.
- p2p(pairs): independent flows (send_recv: r -> r+1; all_to_all: every ordered pair).
"""
from __future__ import annotations

import simpy

from gpusim.interconnect.fabric import Fabric


class Pipeline:
    def __init__(self, fabric: Fabric, spec, protocol: str, channels: int, efficiency_scale: float = 1.0):
        self.fabric, self.env = fabric, fabric.env
        self.eff = spec.nccl.efficiency(protocol) * efficiency_scale
        self.copy_GBps = channels * spec.nccl.channel_bandwidth_GBps
        self.step_ns = spec.nccl.step_latency_ns(protocol)

    def send(self, src: int, dst: int, nbytes: float, arrived: simpy.Event, step_ns: float | None = None):
        """Process: the sender's channels copy one slice out (nbytes / their copy rate), then
        it travels on its own (ports in order, then latency) and triggers `arrived` when
        it lands; the sender goes on with the next slice meanwhile (its copies pipeline
        with the link). `step_ns` defaults to the protocol's step latency."""
        step_ns = self.step_ns if step_ns is None else step_ns
        yield self.env.timeout(nbytes / self.copy_GBps)        # the channels' threads copy it out
        self.env.process(self._move(src, dst, nbytes, arrived, step_ns))

    def _move(self, src: int, dst: int, nbytes: float, ev: simpy.Event, step_ns: float):
        f = self.fabric
        yield from f.carry(src, dst, nbytes, self.eff)
        yield self.env.timeout(step_ns)
        ev.succeed()


def ring(pipe: Pipeline, n: int, nsteps: int, step_bytes: float, k: int) -> simpy.Event:
    env = pipe.env
    arrived = [[[env.event() for _ in range(k)] for _ in range(nsteps)] for _ in range(n)]   # at rank r+1

    def rank(r):
        for s in range(nsteps):
            for j in range(k):
                if s > 0:
                    yield arrived[(r - 1) % n][s - 1][j]
                yield from pipe.send(r, (r + 1) % n, step_bytes / k, arrived[r][s][j])

    procs = [env.process(rank(r)) for r in range(n)]
    return simpy.AllOf(env, procs + [arrived[r][nsteps - 1][k - 1] for r in range(n)])


def chain(pipe: Pipeline, order: list[int], nbytes: float, k: int) -> simpy.Event:
    env = pipe.env
    hops = len(order) - 1
    arrived = [[env.event() for _ in range(k)] for _ in range(hops)]   # arrived[i][j]: at order[i+1]

    def node(i):
        for j in range(k):
            if i > 0:
                yield arrived[i - 1][j]
            yield from pipe.send(order[i], order[i + 1], nbytes / k, arrived[i][j], None if i == 0 else 0.0)

    procs = [env.process(node(i)) for i in range(hops)]
    return simpy.AllOf(env, procs + [arrived[hops - 1][k - 1]])


def tree(pipe: Pipeline, n: int, nbytes: float, k: int) -> simpy.Event:
    env = pipe.env
    up_order, down_order = list(range(n - 1, -1, -1)), list(range(n))
    hops = n - 1
    up = [[env.event() for _ in range(k)] for _ in range(hops)]
    down = [[env.event() for _ in range(k)] for _ in range(hops)]

    def up_node(i):
        for j in range(k):
            if i > 0:
                yield up[i - 1][j]
            yield from pipe.send(up_order[i], up_order[i + 1], nbytes / k, up[i][j])

    def down_node(i):
        for j in range(k):
            yield (up[hops - 1][j] if i == 0 else down[i - 1][j])
            yield from pipe.send(down_order[i], down_order[i + 1], nbytes / k, down[i][j])

    procs = [env.process(up_node(i)) for i in range(hops)] + [env.process(down_node(i)) for i in range(hops)]
    return simpy.AllOf(env, procs + [down[hops - 1][k - 1]])


def p2p(pipe: Pipeline, pairs: list[tuple[int, int, float]], k: int) -> simpy.Event:
    env = pipe.env
    events = []

    def flow(src, dst, nbytes):
        for j in range(k):
            ev = env.event()
            events.append(ev)
            yield from pipe.send(src, dst, nbytes / k, ev)

    procs = [env.process(flow(s, d, b)) for s, d, b in pairs]
    done = env.event()

    def all_landed():
        yield simpy.AllOf(env, procs)
        yield simpy.AllOf(env, events)
        done.succeed()

    env.process(all_landed())
    return done
