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
- Point-to-point (send/recv, all_to_all): each peer connection gets max_channels / n
  channels (NCCL's p2p channels per peer), so a single flow on 4 GPUs copies at a quarter
  of the channels' rate, until a transfer reaches nccl.p2p_all_channels_min_bytes: the
  measured send_recv on 4 H200s jumps from 160 GB/s at 128 MiB to 299 at 256 MiB (NCCL's
  mechanism for that was not identified; the threshold is the measurement's).
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
SLOT_BYTES = {"simple": 64 << 10, "ll": 32 << 10, "ll128": 64 << 10}


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

