"""Collective algorithms as SimPy processes over the fabric, carrying slices.

All of a call's channels run the same pattern over the same ports, so they are simulated
together: one slice stands for the matching slot of every channel (bytes = channels x
slot), and a sender moves it no faster than the channels can copy it
(channels x nccl.channel_bandwidth_GBps; for LL and LL128 x the protocol's payload share,
as the channels copy whole lines, flags included) nor than the route allows (fabric ports,
with the protocol's payload efficiency). Ports: see `Fabric.carry`. A slice lands one route
latency after it leaves the ports; a rank forwards a slice only once it has arrived (the
data dependency of a pipelined ring or chain).

Rings and chains store (`Pipeline.store`): NCCL's P2P transport over NVLink has the
channel's thread block write straight into the peer's buffer, so the copy and the wire are
one stage and a slice keeps the sender busy for the slower of the two. Tree and the
point-to-point patterns keep the older two-stage form (`Pipeline.send`: copy, then the
link, pipelined), which their fitted numbers assume.

- ring(steps): every step, rank r sends size/n to rank r+1 in slices (all_reduce: 2(n-1)
  steps; all_gather, reduce_scatter: n-1). Simple: a step is NCCL's slices of it
  (tuning.simple_ring_syncs: a channel runs its part in chunk loops of 2 MiB, every ring
  step of a loop cut into 2 slices, from enqueue.cc calcCollChunking and prims_simple.h
  genericOp), each costing its channels one slice sync (nccl.simple_slice_sync_ns: slot
  wait, barriers, copy-loop fill and drain, flag) beside their copy, which the link
  overlaps, and sent once the same slice of the previous step has landed here. LL: a step
  pays one sync latency (nccl.ll_step_latency_ns) and streams: slice j of step s leaves as
  soon as slice j of step s-1 has landed, as every LL line carries its own flag. LL128: a
  step starts once the whole previous step has landed.
- chain(order): a pipelined chain (broadcast from the root; reduce towards it), in fine
  slices (ranks forward what lands as it lands: the measured broadcast takes nearly the
  same time over 1 and 3 hops); every hop pays one sync latency (one slice per chunk), in
  parallel. `root_copy`: the first rank's copy per byte sent (the out-of-place broadcast
  root's copySend, which also stores into its own output: tuning.ROOT_COPY_SEND_COST).
- tree: NCCL's intra-node tree is a chain: reduce up to rank 0, then broadcast down, in
  fine slices, both directions at once, one handshake per hop; its rate is scaled by
  nccl.tree_efficiency. NCCL never chose Tree within one node in the measured log; the
  forced Tree/Simple on 4 H200s is slower at 64 KiB-16 MiB than this (DEVIATIONS.md).
- p2p(pairs): independent flows, one per NCCL p2p round d (send to r + d, receive from r - d;
  send_recv: d = 1; all_to_all: every d, d = 0 being the copy to self, which uses no link),
  each on its peer operation's channels (tuning.p2p_plan) at nccl.p2p_channel_bandwidth_GBps
  per channel, or less where rounds share channels and split their warps
  (tuning.p2p_channel_shares: all_to_all once its channels double), (x ll_efficiency for LL:
  the channel stores a flag with its data), in fine
  slices over the link; the receiver copies each landed chunk (nccl.p2p_chunk_bytes) out of
  its buffer at nccl.p2p_receive_bandwidth_GBps per channel, so a flow ends one chunk's copy
  after its last slice lands.
"""
from __future__ import annotations

import simpy

from gpusim.interconnect.fabric import Fabric


class Pipeline:
    def __init__(self, fabric: Fabric, spec, protocol: str, channels: int, efficiency_scale: float = 1.0,
                 channel_GBps: float | None = None):
        self.fabric, self.env = fabric, fabric.env
        self.eff = spec.nccl.efficiency(protocol) * efficiency_scale
        self.copy_GBps = channels * (spec.nccl.channel_bandwidth_GBps if channel_GBps is None else channel_GBps)
        if protocol == "ll" and channel_GBps is not None:   # p2p LL: the channel stores flags with its data,
            self.copy_GBps *= spec.nccl.ll_efficiency          # its data rate drops alike (rings: see DEVIATIONS.md)
        self.step_ns = spec.nccl.step_latency_ns(protocol)

    def handshake(self):
        """Process: one step's slot handshake (the sender learns the receiver's slot is free)."""
        yield self.env.timeout(self.step_ns)

    def send(self, src: int, dst: int, nbytes: float, arrived: simpy.Event, copy_bytes: float | None = None,
             share: float = 1.0):
        """Process: the sender's channels copy one slice out (`copy_bytes`, default nbytes, at
        their copy rate x `share`, the part of their warps this flow has; a step that also writes
        the slice into a local buffer copies twice as much), then it travels on its own (ports in
        order, then the route latency) and triggers `arrived` when it lands; the sender goes on
        with the next slice meanwhile (its copies pipeline with the link)."""
        yield self.env.timeout((nbytes if copy_bytes is None else copy_bytes) / (self.copy_GBps * share))
        self.env.process(self._move(src, dst, nbytes, arrived))

    def store(self, src: int, dst: int, nbytes: float, arrived: simpy.Event, copy_bytes: float | None = None,
              stall_ns: float = 0.0):
        """Process: the sender's channels store one slice straight into the peer's buffer (NCCL's
        P2P transport over NVLink: the thread block's stores are the link traffic), so the copy
        and the wire are one stage: the sender is busy for the slower of its copy
        (`copy_bytes` at the channels' copy rate, plus `stall_ns` in which each channel waits on
        its own sync) and the route's wire time, and the slice lands one route latency later.
        A channel's stall does not stop the others, which keep the link busy meanwhile."""
        copy_ns = (nbytes if copy_bytes is None else copy_bytes) / self.copy_GBps
        wire_ns = nbytes / (self.fabric.route_bandwidth_GBps(src, dst) * self.eff)
        hold = max(wire_ns, copy_ns)
        self.env.process(self._move(src, dst, nbytes, arrived, self.eff * wire_ns / hold, stall_ns))
        yield self.env.timeout(max(wire_ns, copy_ns + stall_ns))

    def _move(self, src: int, dst: int, nbytes: float, ev: simpy.Event, eff: float | None = None,
              delay_ns: float = 0.0):
        if delay_ns:
            yield self.env.timeout(delay_ns)
        yield from self.fabric.carry(src, dst, nbytes, self.eff if eff is None else eff)
        ev.succeed()


def ring(pipe: Pipeline, n: int, nsteps: int, step_bytes: float, k: int, local_copy_steps=(),
         stream: bool = False, groups: int = 0, slice_sync_ns: float = 0.0) -> simpy.Event:
    """`local_copy_steps`: steps whose channels also write a slice into a local buffer
    (all_gather's step 0: the rank's own block into its output; reduce_scatter's last
    step: the reduced block into the output; all_reduce's step n-1, the first all-gather
    step: the reduced block into the output while sending it on). The measured
    all_gather and reduce_scatter on 2 H200s run at 272-277 GB/s busbw, all_reduce at 326,
    broadcast at 365: the step that copies twice is slower by what the channels can copy.
    `stream` (LL): a rank forwards slice j of step s as soon as slice j of step s-1 has
    landed, not once the whole step has: every LL line carries its own flag, so the
    receiver consumes and forwards data as it lands (NCCL's prims_ll.h polls line by line);
    a step pays one sync latency. Otherwise (LL128) a step starts once the whole previous
    step has landed.
    `groups` (Simple): a step is NCCL's slices (tuning.simple_ring_syncs: 2 per chunk loop),
    the k pieces cut into that many groups; each costs its channels one slice sync
    (`slice_sync_ns` = nccl.simple_slice_sync_ns: prims_simple.h waitPeer, barriers, the copy
    loop's fill and drain, postPeer's flag; the fence runs on an extra warp) on top of their
    copy, which the wire overlaps (each channel stalls on its own sync while the others keep
    the link busy: a link-bound ring hides it, a copy-bound or latency-bound one pays it);
    the slice lands one sync later and leaves once the same NCCL slice of the previous step
    has landed (the receiver's flag is per slice, so slices stream across steps and loops:
    NCCL runs every step of one chunk before the next chunk, on the same FIFO slots)."""
    env = pipe.env
    if groups:
        k = max(k, groups)
    arrived = [[[env.event() for _ in range(k)] for _ in range(nsteps)] for _ in range(n)]   # at rank r+1

    def simple(r):
        got = arrived[(r - 1) % n]
        bounds = [(q * k) // groups for q in range(groups + 1)]
        for s in range(nsteps):
            double = 2.0 if s in local_copy_steps else 1.0
            for q in range(groups):
                lo, hi = bounds[q], bounds[q + 1]
                if s > 0:                           # NCCL slice q of the previous step has landed here
                    yield got[s - 1][hi - 1]
                stall = slice_sync_ns / (hi - lo)   # the slice's sync, spread over its pieces
                for j in range(lo, hi):
                    yield from pipe.store(r, (r + 1) % n, step_bytes / k, arrived[r][s][j], double * step_bytes / k,
                                          stall)

    def rank(r):
        got = arrived[(r - 1) % n]
        for s in range(nsteps):
            if s > 0 and not stream:                # the whole previous step has landed here
                yield simpy.AllOf(env, got[s - 1])
            yield from pipe.handshake()
            double = 2.0 if s in local_copy_steps else 1.0
            for j in range(k):
                if s > 0 and stream:
                    yield got[s - 1][j]
                yield from pipe.store(r, (r + 1) % n, step_bytes / k, arrived[r][s][j], double * step_bytes / k)

    procs = [env.process(simple(r) if groups else rank(r)) for r in range(n)]
    return simpy.AllOf(env, procs + [arrived[r][nsteps - 1][k - 1] for r in range(n)])


def chain(pipe: Pipeline, order: list[int], nbytes: float, k: int, root_copy: float = 1.0) -> simpy.Event:
    env = pipe.env
    hops = len(order) - 1
    arrived = [[env.event() for _ in range(k)] for _ in range(hops)]   # arrived[i][j]: at order[i+1]

    def node(i):
        yield from pipe.handshake()
        for j in range(k):
            if i > 0:
                yield arrived[i - 1][j]
            yield from pipe.store(order[i], order[i + 1], nbytes / k, arrived[i][j],
                                  (root_copy if i == 0 else 1.0) * nbytes / k)

    procs = [env.process(node(i)) for i in range(hops)]
    return simpy.AllOf(env, procs + [arrived[hops - 1][k - 1]])


def tree(pipe: Pipeline, n: int, nbytes: float, k: int) -> simpy.Event:
    env = pipe.env
    up_order, down_order = list(range(n - 1, -1, -1)), list(range(n))
    hops = n - 1
    up = [[env.event() for _ in range(k)] for _ in range(hops)]
    down = [[env.event() for _ in range(k)] for _ in range(hops)]

    def up_node(i):
        yield from pipe.handshake()
        for j in range(k):
            if i > 0:
                yield up[i - 1][j]
            yield from pipe.send(up_order[i], up_order[i + 1], nbytes / k, up[i][j])

    def down_node(i):
        yield from pipe.handshake()
        for j in range(k):
            yield (up[hops - 1][j] if i == 0 else down[i - 1][j])
            yield from pipe.send(down_order[i], down_order[i + 1], nbytes / k, down[i][j])

    procs = [env.process(up_node(i)) for i in range(hops)] + [env.process(down_node(i)) for i in range(hops)]
    return simpy.AllOf(env, procs + [down[hops - 1][k - 1]])


def p2p(pipe: Pipeline, pairs: list[tuple], k: int, chunks: int = 1,
        receive_GBps: float = 0.0) -> simpy.Event:
    """Each flow (src, dst, bytes[, send share, receive share]) sends its bytes in k slices (all its
    channels together), which stream over the link; with `receive_GBps` the receiver copies each of
    its `chunks` (NCCL's steps) out of its buffer into the user's once the whole chunk has landed, at
    that rate, chunk after chunk (NCCL's receive side without registered buffers): a flow ends one
    chunk's copy after its last slice lands. The shares (default 1) scale the flow's send and receive
    rates: the part of its channels' warps it has where other flows' works share them
    (tuning.p2p_channel_shares). A flow with src == dst is a copy to self (all_to_all's own block):
    no link, its channels copy at `receive_GBps` x its share."""
    env = pipe.env
    k = max(k, chunks)
    flows = [(f[0], f[1], f[2], f[3] if len(f) > 3 else 1.0, f[4] if len(f) > 4 else 1.0) for f in pairs]
    landed = [[env.event() for _ in range(k)] for _ in flows]
    last_of_chunk = [((c + 1) * k + chunks - 1) // chunks - 1 for c in range(chunks)]

    def flow(i, src, dst, nbytes, share):
        yield from pipe.handshake()
        for j in range(k):
            yield from pipe.send(src, dst, nbytes / k, landed[i][j], share=share)

    def receive(i, nbytes, share):
        for c in range(chunks):
            yield landed[i][last_of_chunk[c]]
            if receive_GBps:
                yield env.timeout(nbytes / chunks / (receive_GBps * share))

    def self_copy(nbytes, share):
        yield from pipe.handshake()
        yield env.timeout(nbytes / ((receive_GBps or pipe.copy_GBps) * share))

    procs = []
    for i, (src, dst, b, ss, rs) in enumerate(flows):
        if src == dst:
            procs.append(env.process(self_copy(b, ss)))
        else:
            procs += [env.process(flow(i, src, dst, b, ss)), env.process(receive(i, b, rs))]
    return simpy.AllOf(env, procs)
