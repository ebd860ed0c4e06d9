"""One collective call: NCCL's plan (tuning.py), its pattern simulated on a fresh fabric
(algorithms.py), and nccl-tests' figures. Deterministic: no randomness, SimPy's event order.

time = nccl.launch_latency_ns + (n - 1) x nccl.launch_skew_per_gpu_ns (one process launches
       the GPUs' kernels one after another, as nccl-tests -g and the measurements here do)
       + the protocol's base latency (nccl.<protocol>_base_latency_ns;
       nccl.p2p_latency_ns for send/recv patterns instead, whose protocol and channels
       are NCCL's per peer operation: tuning.p2p_plan)
       + the simulated pattern (first slice sent to last slice landed).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import simpy

from gpusim.collectives import algorithms
from gpusim.collectives.conventions import busbw_factor, check_op
from gpusim.collectives.tuning import (ROOT_COPY_SEND_COST, fine_slices, p2p_channel_shares, p2p_chunks,
                                       p2p_plan, p2p_rounds, p2p_warps, plan, ring_partition, simple_ring_syncs,
                                       slices)
from gpusim.errors import ConfigError
from gpusim.interconnect.fabric import Fabric
from gpusim.specs.overrides import resolve


@dataclass(frozen=True)
class CollectiveResult:
    op: str
    gpus: int
    bytes: int
    time_us: float
    algbw_GBps: float
    busbw_GBps: float
    algorithm: str
    protocol: str
    channels: int
    gpu: str
    link_bytes_sent: tuple = field(default=())      # nvltx__bytes.sum per GPU

    def as_dict(self) -> dict:
        d = asdict(self)
        d["link_bytes_sent"] = list(self.link_bytes_sent)
        return d


@dataclass(frozen=True)
class CallPlan:
    """One call as NCCL would run it: the op, its ranks and size, NCCL's plan (algorithm,
    protocol, channels; for p2p its per-peer-operation plan) and the fixed cost paid before
    the pattern's first slice leaves (launch, launch skew, base latency). `in_place`: the call
    reads and writes one buffer per rank (NCCL's in-place call; nccl-tests measures out of place)."""
    op: str
    gpus: int
    bytes: int
    plan: object
    p2p: object
    fixed_ns: float
    in_place: bool = False
    imbalance: float = 1.0          # a ring's busiest channel's part / the mean part (tuning.ring_partition)


def plan_call(op: str, size_bytes: int, spec, gpus: int, link_GBps: float, algorithm: str | None = None,
              protocol: str | None = None, dtype_bytes: int = 4, in_place: bool = False) -> CallPlan:
    """Check one call's arguments and plan it; `link_GBps` is the slower direction of a rank's route."""
    op = check_op(op)
    n = int(gpus)
    if n < 2:
        raise ConfigError(f"{op} needs at least 2 GPUs: pass gpus=N or set system.gpu_count (got {n})")
    size = int(size_bytes)
    if size <= 0:
        raise ConfigError(f"{op}: size must be a positive byte count, got {size_bytes!r}")
    per_rank_blocks = n if op in ("all_gather", "reduce_scatter", "all_to_all") else 1
    if size % (dtype_bytes * per_rank_blocks):
        raise ConfigError(f"{op}: {size} bytes do not split into {per_rank_blocks} blocks of {dtype_bytes}-byte "
                          f"elements")
    p, pp, imbalance = plan(spec, op, n, size, link_GBps, algorithm, protocol), None, 1.0
    if p.algorithm == "p2p":                                   # NCCL's channels and protocol per peer operation
        pp = p2p_plan(spec, n, size / (n if op == "all_to_all" else 1))
        p = replace(p, protocol=pp.protocol, channels=pp.channels)
    elif p.algorithm == "ring" and op in ("all_reduce", "all_gather", "reduce_scatter"):
        used, imbalance = ring_partition(op, n, size, p.channels, p.protocol)   # the channels given data
        p = replace(p, channels=used)
    fixed_ns = spec.nccl.launch_latency_ns + (n - 1) * spec.nccl.launch_skew_per_gpu_ns \
        + (spec.nccl.base_latency_ns(p.protocol) if p.algorithm != "p2p" else spec.nccl.p2p_latency_ns)
    return CallPlan(op, n, size, p, pp, fixed_ns, bool(in_place), imbalance)


def plan_on(fabric, op: str, size_bytes: int, spec, algorithm: str | None = None, protocol: str | None = None,
            dtype_bytes: int = 4, in_place: bool = False) -> CallPlan:
    """`plan_call` for a call over `fabric`'s ranks (a `Fabric` or a `RankView`), with the
    slower direction of rank 0's route to rank 1 as NCCL's link."""
    link = min(fabric.route_bandwidth_GBps(0, 1), fabric.route_bandwidth_GBps(1, 0))
    return plan_call(op, size_bytes, spec, fabric.n, link, algorithm, protocol, dtype_bytes, in_place)


def start_pattern(call: CallPlan, spec, fabric) -> simpy.Event:
    """Start the call's pattern on `fabric` (its ranks 0..n-1: a `Fabric`, or a `RankView` of a
    larger one) at the fabric's present time; the event fires when the last slice has landed."""
    op, n, size, p, pp = call.op, call.gpus, call.bytes, call.plan, call.p2p
    channels, protocol = p.channels, p.protocol
    pipe = algorithms.Pipeline(fabric, spec, protocol, channels,
                               spec.nccl.tree_efficiency if p.algorithm == "tree" else 1.0,
                               spec.nccl.p2p_channel_bandwidth_GBps if p.algorithm == "p2p" else None)
    pipe.copy_GBps /= call.imbalance            # a ring's channels copy together as fast as the busiest allows
    if p.algorithm == "ring" and op in ("all_reduce", "all_gather", "reduce_scatter"):
        nsteps = 2 * (n - 1) if op == "all_reduce" else n - 1
        step = size / n
        local = {"all_gather": (0,), "reduce_scatter": (n - 2,), "all_reduce": (n - 1,)}.get(op, ())
        if p.protocol != "simple":              # the channels copy LL / LL128 lines, flags included
            pipe.copy_GBps *= spec.nccl.efficiency(p.protocol)
        if p.protocol == "simple":              # NCCL's chunk loops and slices, each with its own sync
            return algorithms.ring(pipe, n, nsteps, step, slices(spec, step / p.channels, p.protocol), local,
                                   groups=simple_ring_syncs(spec, op, step / p.channels),
                                   slice_sync_ns=spec.nccl.simple_slice_sync_ns)
        return algorithms.ring(pipe, n, nsteps, step, slices(spec, step / p.channels, p.protocol), local,
                               stream=p.protocol == "ll")
    if p.algorithm == "tree":
        return algorithms.tree(pipe, n, size, fine_slices(size))
    if op == "broadcast":                   # out of place, the root also copies into its own output
        return algorithms.chain(pipe, list(range(n)), size, fine_slices(size),
                                1.0 if call.in_place else ROOT_COPY_SEND_COST)
    if op == "reduce":
        return algorithms.chain(pipe, list(range(n - 1, -1, -1)), size, fine_slices(size))
    b = size / n if op == "all_to_all" else size               # send_recv, all_to_all: NCCL's p2p rounds
    rounds = p2p_rounds(op, n)                                 # round d: send to r + d, receive from r - d
    shares = p2p_channel_shares(spec, rounds, channels)
    self_warps = p2p_warps(1)[2] / p2p_warps(1)[1]            # a copy to self has the whole block's warps
    pairs = sorted((r, (r + d) % n, b, shares[d][0] * (self_warps if d == 0 else 1.0), shares[d][1])
                   for r in range(n) for d in rounds)
    return algorithms.p2p(pipe, pairs, slices(spec, pp.part_bytes, protocol), p2p_chunks(spec, pp),
                          channels * spec.nccl.p2p_receive_bandwidth_GBps)


def simulate(op: str, size_bytes: int, gpu="h200", gpus: int | None = None, algorithm: str | None = None,
             protocol: str | None = None, dtype_bytes: int = 4, in_place: bool = False) -> CollectiveResult:
    """Time one `op` of nccl-tests size `size_bytes` over `gpus` GPUs of `gpu` (a preset name, a
    .toml file or a spec; gpus defaults to spec.system.gpu_count), alone on a fresh fabric.
    `in_place`: NCCL's in-place call (send and receive buffer the same; nccl-tests and
    `validate measure-multi` measure out of place, the default). It changes broadcast only: its
    root then sends without copying into its own output (tuning.ROOT_COPY_SEND_COST). reduce,
    all_reduce and reduce_scatter run the same primitives either way (reduce measured the same,
    data/measurements/h200x2_broadcast_inplace.json); NCCL's in-place all_gather also skips its
    step-0 copy, which is not modelled (not measured)."""
    spec = resolve(gpu)
    op = check_op(op)
    n = int(gpus if gpus is not None else spec.system.gpu_count)
    if n < 2:
        raise ConfigError(f"{op} needs at least 2 GPUs: pass gpus=N or set system.gpu_count (got {n})")
    fabric = Fabric(spec, gpus=n)
    call = plan_on(fabric, op, size_bytes, spec, algorithm, protocol, dtype_bytes, in_place)
    fabric.env.run(until=start_pattern(call, spec, fabric))
    t_ns = call.fixed_ns + fabric.env.now
    algbw = call.bytes / t_ns                                  # bytes/ns == GB/s
    p = call.plan
    return CollectiveResult(op, n, call.bytes, t_ns / 1e3, algbw, algbw * busbw_factor(op, n), p.algorithm,
                            p.protocol, p.channels, spec.name, tuple(fabric.sent))


def parse_size(text: str) -> int:
    t = str(text).strip().upper().replace("IB", "").replace("B", "")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    try:
        if t and t[-1] in mult:
            return int(float(t[:-1]) * mult[t[-1]])
        return int(float(t))
    except ValueError:
        raise ConfigError(f"not a byte count: {text!r} (examples: 65536, 64K, 1M, 1G)") from None


def parse_sizes(text: str, factor: int = 2) -> list[int]:
    """'64K:1G' (powers of `factor` from 64 KiB to 1 GiB, nccl-tests' -b/-e/-f) or '1024,4096'."""
    text = str(text).strip()
    if ":" in text:
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise ConfigError(f"--sizes {text!r}: give MIN:MAX or MIN:MAX:FACTOR")
        lo, hi = parse_size(parts[0]), parse_size(parts[1])
        f = int(parts[2]) if len(parts) == 3 else factor
        if lo <= 0 or hi < lo or f < 2:
            raise ConfigError(f"--sizes {text!r}: need 0 < MIN <= MAX and FACTOR >= 2")
        out, s = [], lo
        while s <= hi:
            out.append(s)
            s *= f
        return out
    out = [parse_size(x) for x in text.split(",") if x.strip()]
    if not out or any(s <= 0 for s in out):
        raise ConfigError(f"--sizes {text!r}: no positive byte counts")
    return out


def sweep(op: str, sizes: list[int], gpu="h200", gpus: int | None = None, algorithm: str | None = None,
          protocol: str | None = None) -> list[CollectiveResult]:
    return [simulate(op, s, gpu, gpus, algorithm, protocol) for s in sizes]


__all__ = ["CallPlan", "CollectiveResult", "plan_call", "plan_on", "simulate", "start_pattern", "sweep",
           "parse_size", "parse_sizes"]
