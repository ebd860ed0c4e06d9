"""NCCL's choices for one call: algorithm, protocol, channels, and the slice size.

Structure as read in NCCL's src/graph/tuning.cc and src/enqueue.cc (2.18-2.28); numbers
are NCCL's own constants where it has them, else estimates named here.
- Protocol: NCCL predicts each (algorithm, protocol)'s time as
  base latency + steps x per-step latency + size / (model bus bandwidth / busbw factor)
  and takes the fastest. Latencies (us) are NCCL's NVLink table (`BASE_US`, `HW_US`);
  steps: 2(n-1) for all_reduce, n-1 for all_gather/reduce_scatter, n for broadcast/reduce.
  Model bandwidth: the fabric's per-GPU payload bandwidth x `SELECT_FACTOR[protocol]`
  (NCCL: LL x1/2 of the channel rate, capped; LL128 x0.92-0.96; fitted here so that the
  choices of NCCL 2.28.9 on 2 and 4 H200s are reproduced: see tests/collectives).
- Algorithm: within one node with NVLink SHARP (NVLS) off, NCCL 2.28 chose Ring for every
  collective and size in the measured log; Tree is available when asked for.
- Channels: NCCL lowers the channel count while size < channels x threads x threshold
  (threshold = nccl.channel_threshold_bytes_per_thread, x n for LL).
- Slices: one step of one channel moves its data in pieces of at most `SLOT_BYTES` (data
  bytes: LL's slot, 8-byte data halves of 16-byte lines x 512 threads x 8 = 32 KiB; for
  Simple and LL128, whose slots are 512 KiB and ~560 KiB, 64 KiB: NCCL's direct-pointer
  P2P over NVLink forwards data at that granularity or finer, which the measured
  broadcast (1.1 x size / link rate at 64 MiB on 4 GPUs) needs; an estimate).
- Point-to-point (send/recv, all_to_all): `p2p_plan`, NCCL's scheduling of one peer
  operation (read in enqueue.cc/paths.cc, 2.28). NCCL rounds its channel count up to a
  power of two for p2p (24 -> 32, as its log says: "32 p2p channels, 32 per peer"); an
  operation to one peer starts on `per_peer` channels, halved while per_peer x ranks
  exceeds the 32 (2 GPUs: 16, 4 GPUs: 8, 8 GPUs: 4), uses fewer while a channel's part
  would be under step/8, and doubles them (up to 32) while a part would exceed 32 steps:
  a Simple step is nccl.p2p_chunk_bytes (512 KiB), so parts above 16 MiB double the
  channels. That is the measured jump of send_recv on 4 H200s (8 channels, 160 GB/s at
  128 MiB; 16 channels, 299 GB/s at 256 MiB; 32 from 512 MiB) and on 2 (16 channels to
  256 MiB, 32 from 512 MiB). An operation of at most 32 x nccl.p2p_ll_threshold_bytes
  (512 KiB) to one peer runs LL (step 32 KiB of data), larger ones Simple: all_to_all on
  4 GPUs is LL to 2 MiB. Round d (send to rank + d, receive from rank - d; NCCL's p2p
  schedule within one node, init.cc) starts on channel bitreverse(d) (channel.h) and takes the
  next ones; where rounds overlap (all_to_all once its channels double) the works on a channel
  split its 20 warps (sendrecv.h): `p2p_channel_shares`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from gpusim.collectives.conventions import busbw_factor, check_op
from gpusim.errors import ConfigError

PROTOCOLS = ("ll", "ll128", "simple")
ALGORITHMS = ("ring", "tree")
BASE_US = {"ring": {"ll": 6.6, "ll128": 14.0, "simple": 8.4}, "tree": {"ll": 6.8, "ll128": 14.0, "simple": 0.0}}
HW_US = {"ring": {"ll": 0.6, "ll128": 1.9, "simple": 3.4}, "tree": {"ll": 0.6, "ll128": 1.25, "simple": 4.0}}
SELECT_FACTOR = {"simple": 0.60, "ll128": 0.94 * 0.60, "ll": 0.50 * 0.60}   # reproduce 148 of NCCL's 150
LL_SELECT_CAP_GBps = 120.0                                                   # logged choices (4 x H200)
LL_STEP_BYTES = 64 << 10            # LL buffer 512 KiB / NCCL_STEPS: 16-byte lines, half data
SLOT_BYTES = {"simple": 64 << 10, "ll": 32 << 10, "ll128": 64 << 10}
# Simple ring slices per chunk, NCCL's src/include/collectives.h (2.28): ALLREDUCE_CHUNKSTEPS /
# ALLREDUCE_SLICESTEPS = (NCCL_STEPS / 2) / (NCCL_STEPS / 4) = 2, the same for AllGather and
# ReduceScatter. Each slice ends with its own fence and flag (prims_simple.h: postPeer per slice),
# so each costs its channels one nccl.simple_slice_sync_ns (`simple_ring_syncs`). LL and LL128 run
# one slice per chunk.
SIMPLE_SLICES_PER_CHUNK = {"all_reduce": 2, "all_gather": 2, "reduce_scatter": 2}
# A Simple ring's chunk: CHUNKSTEPS (NCCL_STEPS / 2 = 4) steps of the Simple buffer's slot (NCCL's default
# buffer 4 MiB, DEFAULT_BUFFSIZE in src/init.cc, / NCCL_STEPS = 512 KiB): 2 MiB of a channel per loop
# (enqueue.cc calcCollChunking: chunkSize = stepSize x chunkSteps, no reduction for Ring/Simple).
SIMPLE_BUFFER_BYTES = 4 << 20
SIMPLE_RING_CHUNK_STEPS = 4
SIMPLE_MIN_SLICE_DIVISOR = 32        # prims_simple.h genericOp: slice = max(nelem / SlicePerChunk, sliceSize / 32)
# The root of an out-of-place broadcast (NCCL's src/device/broadcast.h runRing: inputBuf != outputBuf)
# runs copySend: its channels load each element once and store it twice, into the next rank's buffer
# and into their own output; in place it runs send, one load and one store. Its copy (a channel's
# memory operations per element) takes 3 / 2 as long: a chain's root stores `ROOT_COPY_SEND_COST` x
# its bytes at the channels' copy rate (algorithms.chain); the wire carries them once.
ROOT_COPY_SEND_COST = 1.5


# NCCL 2.28 (enqueue.cc, scheduling a collective's work onto channels) hands each channel a
# contiguous block of whole cells: a cell is 16 KiB of link traffic (CELL_TRAFFIC_BYTES / traffic
# per byte, rounded up to 16 bytes), a channel gets cells up to the call's traffic over its channels
# (at least 16 KiB), the last channel takes the remainder. A small call so leaves channels empty,
# and the busiest channel can carry a cell more than the mean: the measured NCCL logs
# (data/measurements/h200x4_multi.json, h200x2_multi.json: channel{Lo..Hi}) show these counts for every
# all_reduce / all_gather / reduce_scatter call (the thread threshold alone, channels_for, gives NCCL's
# maximum: 24 where the logs have 22 at 256-512 KiB). run.plan_call applies it to those rings only:
# broadcast and reduce (traffic 1 per byte) get the logged counts from it too, but their chain,
# fitted with the threshold's counts, then fits the measurements worse (DEVIATIONS.md, "channels").
CELL_TRAFFIC_BYTES = 16 << 10


def ring_partition(op: str, n: int, size: int, channels: int, protocol: str) -> tuple[int, float]:
    """(channels that get data, the busiest channel's part / the mean part) of a ring or chain
    call that may use `channels` (its data per rank: `size`, or size / n for all_gather and
    reduce_scatter; traffic per byte: all_reduce 2, all_gather / reduce_scatter n, broadcast /
    reduce 1, x 4 for LL)."""
    def div_up(a: int, b: int) -> int:
        return -(-a // b)

    per_byte = {"all_reduce": 2, "all_gather": n, "reduce_scatter": n}.get(op, 1) * (4 if protocol == "ll" else 1)
    count = size if op == "all_reduce" else size // n
    cell = div_up(div_up(CELL_TRAFFIC_BYTES, per_byte), 16) * 16           # bytes of data per cell
    cells = div_up(count, cell)
    per_channel = min(cells, div_up(max(CELL_TRAFFIC_BYTES, count * per_byte // channels), cell * per_byte))
    first = per_channel
    middle, last = (cells - first) // per_channel, (cells - first) % per_channel
    if (first != 0) + middle + (last != 0) > channels:                  # the last channel takes the rest
        middle = channels - 2
        per_channel = (cells - first) // (middle + 1)
        last = per_channel + (cells - first) % (middle + 1)
    if last == 0 and middle:
        last, middle = per_channel, middle - 1
    parts = [first] + [per_channel] * middle + ([last] if last else [])
    return len(parts), max(parts) * cell / (count / len(parts))


def simple_ring_syncs(spec, op: str, part_bytes: float) -> int:
    """Slice syncs one channel of a Simple ring pays per ring step for its `part_bytes` of that step:
    NCCL runs a ring in loops of one chunk per channel (all_gather.h, reduce_scatter.h, all_reduce.h
    runRing: for elemOffset in range(0, partCount, chunkCount)), every step of a loop a primitive over
    the chunk, cut into SlicePerChunk slices (prims_simple.h genericOp) of at least sliceSize / 32, each
    with its own slot wait (waitPeer), barriers, copy loop and flag (postPeer; the fence runs on an
    extra warp, overlapping the next slice's copy). So a step pays 2 syncs per loop, and one where
    the chunk is no larger than the minimum slice (the second slice is empty: no data, no fence)."""
    per = SIMPLE_SLICES_PER_CHUNK[op]
    slot = SIMPLE_BUFFER_BYTES // spec.nccl.slices_per_step
    chunk = slot * SIMPLE_RING_CHUNK_STEPS
    min_slice = slot * (SIMPLE_RING_CHUNK_STEPS // per) / SIMPLE_MIN_SLICE_DIVISOR
    loops = max(1, math.ceil(part_bytes / chunk))
    last = part_bytes - (loops - 1) * chunk
    return (loops - 1) * per + max(1, min(per, math.ceil(last / min_slice)))


@dataclass(frozen=True)
class Plan:
    op: str
    ranks: int
    size_bytes: int
    algorithm: str
    protocol: str
    channels: int
    forced: bool


def steps(op: str, n: int) -> int:
    op = check_op(op)
    if op == "all_reduce":
        return 2 * (n - 1)
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return n - 1
    return n if op in ("broadcast", "reduce") else 1


def predicted_us(spec, op: str, n: int, size: int, algorithm: str, protocol: str, link_GBps: float) -> float:
    """NCCL's own estimate of a call's time, used only to choose."""
    bw = link_GBps * SELECT_FACTOR[protocol]
    if protocol == "ll":
        bw = min(bw, LL_SELECT_CAP_GBps)
    if algorithm == "tree":
        bw *= spec.nccl.tree_efficiency / 2
    algbw = bw / max(busbw_factor(op, n), 1e-9)
    return BASE_US[algorithm][protocol] + steps(op, n) * HW_US[algorithm][protocol] + size / (algbw * 1e3)


def channels_for(spec, op: str, n: int, size: int, protocol: str) -> int:
    nc, cfg = spec.nccl.max_channels, spec.nccl
    threshold = cfg.channel_threshold_bytes_per_thread * (n if protocol == "ll" else 1)
    if protocol == "simple":
        threshold *= 8                            # NCCL_SIMPLE_THREAD_THRESHOLD 64 vs LL's 8
    while nc > 1 and size < nc * cfg.threads_per_channel * threshold:
        nc -= 1
    return nc


def plan(spec, op: str, n: int, size: int, link_GBps: float, algorithm: str | None = None,
         protocol: str | None = None) -> Plan:
    op = check_op(op)
    if n < 2:
        raise ConfigError(f"{op} needs at least 2 GPUs, got {n}")
    if algorithm is not None and algorithm.lower() not in ALGORITHMS:
        raise ConfigError(f"unknown NCCL algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")
    if protocol is not None and protocol.lower() not in PROTOCOLS:
        raise ConfigError(f"unknown NCCL protocol {protocol!r}; known: LL, LL128, Simple")
    if algorithm and algorithm.lower() == "tree" and op != "all_reduce":
        raise ConfigError(f"NCCL runs Tree for all_reduce only; {op} is Ring")
    algos = [algorithm.lower()] if algorithm else ["ring"]
    if op in ("all_to_all", "send_recv"):
        algos = ["p2p"]
        protos = ["simple"]
    else:
        protos = [protocol.lower()] if protocol else list(PROTOCOLS)
    if algos == ["p2p"]:
        return Plan(op, n, size, "p2p", "simple", spec.nccl.max_channels, bool(algorithm or protocol))
    best = min(((predicted_us(spec, op, n, size, a, p, link_GBps), a, p) for a in algos for p in protos))
    _, a, p = best
    return Plan(op, n, size, a, p, channels_for(spec, op, n, size, p), bool(algorithm or protocol))


@dataclass(frozen=True)
class P2PPlan:
    protocol: str
    channels: int          # channels of one peer operation
    part_bytes: float      # what one of them moves


def p2p_plan(spec, n: int, peer_bytes: float) -> P2PPlan:
    """NCCL's protocol and channels for one send (and its matching receive) of `peer_bytes`
    to one peer in a group over `n` ranks (module docstring)."""
    cfg = spec.nccl
    total = 1 << max(0, math.ceil(math.log2(cfg.max_channels)))     # p2pnChannels: a power of two
    per_peer_max = total
    start = per_peer_max
    while start * n > total and start > 1:
        start //= 2
    ll = peer_bytes <= per_peer_max * cfg.p2p_ll_threshold_bytes
    step = LL_STEP_BYTES if ll else cfg.p2p_chunk_bytes
    min_part, max_part = step / 8, step * 32
    ch = max(1, min(start, math.ceil(peer_bytes / min_part)))
    part = max(min_part, peer_bytes / ch)
    while part > max_part and ch <= per_peer_max // 2:
        ch *= 2
        part = peer_bytes / ch
    return P2PPlan("ll" if ll else "simple", ch, peer_bytes / ch)


# A p2p channel's thread block and how NCCL's kernel splits it between the works that share the
# channel (src/device/sendrecv.h, 2.28): every work gets nWarps / nWorks warps; of those, a send/recv
# pair gives (w - 1) // 2 to the receive and the rest to the send (w // 2 each for w <= 4), and a Simple
# send keeps one warp for the fence once it has 3 or more (NCCL_SIMPLE_EXTRA_GROUP_IF_NTHREADS_GE);
# a copy to self uses all w. Block size: NCCL_MAX_NTHREADS = 640 (device.h), 20 warps.
P2P_BLOCK_WARPS = 640 // 32
SIMPLE_FENCE_WARP_FROM = 3


def p2p_warps(works: int) -> tuple[int, int, int]:
    """(send worker warps, receive warps, self-copy warps) of one work on a channel shared by `works`."""
    w = max(1, P2P_BLOCK_WARPS // max(1, works))
    recv = w // 2 if w <= 4 else (w - 1) // 2
    send = recv if w <= 4 else recv + 1
    return send - (1 if send >= SIMPLE_FENCE_WARP_FROM else 0), recv, w


def p2p_rounds(op: str, n: int) -> list[int]:
    """NCCL's p2p rounds of a call (round d: send to rank + d, receive from rank - d): all_to_all
    every d (0 being the copy to self), send_recv d = 1."""
    return list(range(n)) if op == "all_to_all" else [1]


def p2p_round_channels(spec, round_: int, nch: int) -> list[int]:
    """The p2p channels of round `round_` (peer offset: send to rank + round, receive from rank - round):
    NCCL's base is the round's index bit-reversed over log2(p2p channels) bits (channel.h,
    ncclP2pChannelBaseForRound), its parts take the next channels (device.h, ncclP2pChannelForPart)."""
    total = 1 << max(0, math.ceil(math.log2(spec.nccl.max_channels)))
    bits = total.bit_length() - 1
    base = int(format(round_ % total, f"0{bits}b")[::-1], 2) if bits else 0
    return [(base + part) % total for part in range(min(nch, total))]


def p2p_channel_shares(spec, rounds: list[int], nch: int) -> dict[int, tuple[float, float]]:
    """Per round: (send share, receive share), the mean over its channels of the rate a channel
    gives it relative to a channel of its own (1.0), when the rounds' channels overlap. A send runs
    at min(nccl.p2p_channel_bandwidth_GBps, its worker warps x nccl.p2p_warp_bandwidth_GBps): a
    channel of its own has more warps than the channel's own limit needs; the receive and a copy to
    self in proportion to their warps."""
    chans = {r: p2p_round_channels(spec, r, nch) for r in rounds}
    works: dict[int, int] = {}
    for cs in chans.values():
        for c in cs:
            works[c] = works.get(c, 0) + 1
    cfg = spec.nccl
    _, r1, c1 = p2p_warps(1)
    send_rate = lambda w: min(cfg.p2p_channel_bandwidth_GBps, p2p_warps(w)[0] * cfg.p2p_warp_bandwidth_GBps)
    out = {}
    for r, cs in chans.items():
        if r == 0:                       # the copy to self: all the work's warps copy
            share = sum(p2p_warps(works[c])[2] / c1 for c in cs) / len(cs)
            out[r] = (share, share)
        else:
            out[r] = (sum(send_rate(works[c]) / send_rate(1) for c in cs) / len(cs),
                      sum(p2p_warps(works[c])[1] / r1 for c in cs) / len(cs))
    return out


def p2p_chunks(spec, pp: P2PPlan, limit: int = 256) -> int:
    """Chunks of one peer operation's part: NCCL moves a part in steps of
    nccl.p2p_chunk_bytes (Simple) or LL's 32 KiB of data; at most `limit` (for speed)."""
    chunk = LL_STEP_BYTES // 2 if pp.protocol == "ll" else spec.nccl.p2p_chunk_bytes
    return max(1, min(limit, math.ceil(pp.part_bytes / chunk)))


def slices(spec, size_per_channel_step: float, protocol: str, limit: int = 256) -> int:
    """How many slices one channel's step is cut into: slot-sized, and at least
    nccl.slices_per_step (the slots a channel keeps in flight) while a slice holds at
    least 4 KiB; at most `limit` (for speed)."""
    by_slot = math.ceil(size_per_channel_step / SLOT_BYTES[protocol])
    by_steps = min(spec.nccl.slices_per_step, max(1, int(size_per_channel_step // 4096)))
    return max(1, min(limit, max(by_slot, by_steps)))


def fine_slices(nbytes: float, piece: int = 64 << 10, limit: int = 256) -> int:
    """Slices of a forwarding chain (broadcast, reduce, tree): 64 KiB pieces of the whole
    message (all channels), at most `limit` (for speed)."""
    return max(1, min(limit, math.ceil(nbytes / piece)))
