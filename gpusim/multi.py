"""A simulated system of N GPUs: arrays on chosen GPUs, kernels (with peer access), peer
copies and NCCL collectives on a timeline where work on different GPUs overlaps.

    sysm = gpusim.System("h200", gpus=4)
    a = [sysm.to_device(np.ones(n, np.float32), gpu=g) for g in range(4)]
    k = [sysm.launch(scale, 64, 256, (a[g], 2.0), gpu=g) for g in range(4)]
    sysm.all_reduce(a, after=k)
    sysm.copy(a[1], a[0])                      # a peer copy on GPU 0's copy engine
    print(sysm.elapsed_us, sysm.timeline_table())

Each GPU has three in-order streams, as CUDA programs use them: "compute" (kernels),
"copy" (its copy engine) and "comm" (NCCL). An operation starts when its stream is free on
every GPU it runs on (a collective: all its GPUs; a peer copy: the source GPU, whose copy
engine moves it) and the operations named in `after` have ended; operations on different
streams or GPUs overlap.

The timeline is one SimPy simulation over one fabric (`gpusim.interconnect.Fabric`), run
when a time is first asked for and again after new work is added: copies
(`gpusim.interconnect.copy_engine`) and collectives (`gpusim.collectives`, each on its GPUs'
ranks of the fabric: `RankView`) move their chunks through the same NVLink ports, so two
transfers that overlap share the ports they both cross and each takes longer than alone
(`Op.standalone_us` is its time alone, `Op.time_us` its time here). A kernel's time alone
comes from the single-GPU timing model (with `peer_args` for arrays on other GPUs); its peer
traffic (`nvltx__bytes.sum`, `nvlrx__bytes.sum`) goes over the same ports, spread over its
time alone, and makes the kernel late by what it queues there
(`gpusim.interconnect.kernel_traffic`). On its GPU a kernel shares the SMs and the DRAM
(`gpusim.gpu_share`): a collective's channels each hold an SM, and a collective or a copy
uses DRAM bandwidth, so a kernel beside them runs on what they leave; collectives and
copies keep their speed beside a kernel (DEVIATIONS.md, row "concurrency").
Functional results are exact: arrays hold what the GPUs would hold. A launch on one GPU
with no other GPU involved is exactly `gpusim.launch`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import simpy

from gpusim import api
from gpusim.errors import ConfigError
from gpusim.specs.overrides import apply, resolve
from gpusim.timing.engine import TimingOptions

STREAMS = ("compute", "copy", "comm")


@dataclass
class DeviceArray:
    """A numpy array that lives in GPU `gpu`'s memory in the simulated system."""
    data: np.ndarray
    gpu: int
    system: "System" = field(repr=False)

    def copy_to_host(self) -> np.ndarray:
        return self.data.copy()

    @property
    def nbytes(self) -> int:
        return self.data.nbytes

    @property
    def shape(self):
        return self.data.shape


@dataclass(eq=False)
class Op:
    """One operation of a System's timeline. `standalone_us`: its time alone on an idle system;
    `start_us`, `end_us`, `time_us`: on the timeline, where overlapping transfers share ports."""
    name: str
    kind: str                     # kernel, copy, collective
    gpus: tuple[int, ...]
    stream: str
    standalone_us: float
    detail: dict = field(default_factory=dict)
    after: tuple = field(default=(), repr=False)
    system: "System" = field(default=None, repr=False)
    body: object = field(default=None, repr=False)      # (fabric, shares) -> SimPy process body
    stream_gpus: tuple = field(default=None, repr=False)  # the GPUs whose `stream` it occupies (default: gpus)

    @property
    def start_us(self) -> float:
        return self.system._times()[self][0]

    @property
    def end_us(self) -> float:
        return self.system._times()[self][1]

    @property
    def time_us(self) -> float:
        start, end = self.system._times()[self]
        return end - start


class System:
    def __init__(self, gpu="h200", gpus: int | None = None):
        spec = resolve(gpu)
        n = int(gpus if gpus is not None else spec.system.gpu_count)
        if n < 1:
            raise ConfigError(f"System needs at least one GPU, got gpus={gpus!r}")
        if n != spec.system.gpu_count:
            spec = apply(spec, {"system.gpu_count": n})
        self.spec, self.n = spec, n
        self.timeline: list[Op] = []
        self._solved: dict | None = None
        self._counters: dict | None = None

    # ---- placement -------------------------------------------------------------------
    def _gpu(self, gpu) -> int:
        if not (isinstance(gpu, (int, np.integer)) and 0 <= int(gpu) < self.n):
            raise ConfigError(f"GPU {gpu!r} is not in this system of {self.n} GPUs (0..{self.n - 1})")
        return int(gpu)

    def to_device(self, array, gpu: int = 0) -> DeviceArray:
        return DeviceArray(np.array(array, copy=True), self._gpu(gpu), self)

    def device_array(self, shape, dtype=np.float32, gpu: int = 0) -> DeviceArray:
        return DeviceArray(np.zeros(shape, dtype), self._gpu(gpu), self)

    # ---- scheduling ------------------------------------------------------------------
    def _schedule(self, name, kind, gpus, stream, standalone_us, after, detail, body=None, stream_gpus=None) -> Op:
        """Add an operation; `body(fabric, shares)` is its SimPy process body on the shared fabric
        and the GPUs' `GPUShare`s (default: busy for `standalone_us`); it waits for `stream` on
        `stream_gpus` (default `gpus`)."""
        after = tuple(after or ())
        for a in after:
            if not isinstance(a, Op) or a.system is not self:
                raise ConfigError(f"{name}: after= takes operations of this System, got {a!r}")
        if body is None:
            def body(fabric, shares, ns=standalone_us * 1e3):  # busy on its stream, nothing shared
                yield fabric.env.timeout(ns)
        op = Op(name, kind, tuple(gpus), stream, standalone_us, detail, after, self, body,
                tuple(gpus if stream_gpus is None else stream_gpus))
        self.timeline.append(op)
        self._solved = None
        return op

    def _times(self) -> dict:
        """Every operation's (start_us, end_us): one simulation of the whole timeline."""
        if self._solved is None:
            # lazy: the multi-GPU fabric and collectives (~0.2 s), when a System runs
            from gpusim.gpu_share import GPUShare
            # lazy: the multi-GPU fabric and collectives (~0.2 s), when a System runs
            from gpusim.interconnect.fabric import Fabric
            fabric = Fabric(self.spec, gpus=max(self.n, 2))
            env = fabric.env
            shares = [GPUShare(env, self.spec.sm_count, self.spec.hbm.bandwidth_GBps) for _ in range(self.n)]
            times, done, last = {}, {}, {}

            def run(op, deps):
                if deps:
                    yield simpy.AllOf(env, deps)
                start = env.now
                yield env.process(op.body(fabric, shares))
                times[op] = (start / 1e3, env.now / 1e3)

            for op in self.timeline:                       # in the order the program issued them
                deps = [last[(g, op.stream)] for g in op.stream_gpus if (g, op.stream) in last]
                done[op] = env.process(run(op, deps + [done[a] for a in op.after]))
                for g in op.stream_gpus:
                    last[(g, op.stream)] = done[op]
            env.run()
            stuck = [op.name for op in self.timeline if op not in times]
            if stuck:
                raise RuntimeError(f"System timeline: {stuck} never finished (a simulation error, please report)")
            self._solved, self._counters = times, fabric.counters()
        return self._solved

    @property
    def elapsed_us(self) -> float:
        return max((end for _, end in self._times().values()), default=0.0)

    def counters(self) -> dict[str, list[float]]:
        """Bytes each GPU sent and received over its links on the timeline (nvltx__bytes.sum,
        nvlrx__bytes.sum): copies, collectives and peer-access kernels."""
        self._times()
        return self._counters

    # ---- kernels ---------------------------------------------------------------------
    def launch(self, kernel, grid, block, args, gpu: int = 0, shared_bytes: int = 0, after=None, timing=True,
               timing_options=None, name: str | None = None, time_like: Op | None = None,
               execute: bool = True) -> Op:
        """Run `kernel[grid, block](*args)` on GPU `gpu`. DeviceArrays on other GPUs are
        accessed over the links (peer access). `time_like=op` reuses the time of an
        identical earlier launch (same kernel, shapes and placement on identical GPUs)
        instead of simulating it again; the functional run still happens unless
        `execute=False` (with `time_like`: the timeline only, the arrays are not computed)."""
        g = self._gpu(gpu)
        plain, peer = [], {}
        for i, a in enumerate(args):
            if isinstance(a, DeviceArray):
                if a.system is not self:
                    raise ConfigError(f"argument {i} of {getattr(kernel, '__name__', kernel)} is an array of "
                                      f"another System")
                plain.append(a.data)
                if a.gpu != g:
                    # the timing model runs the kernel on GPU 0 of the system: relabel so the peer is never 0
                    peer[i] = a.gpu if a.gpu != 0 else g
            else:
                plain.append(a)
        kname = name or getattr(kernel, "__name__", None) or getattr(getattr(kernel, "py_func", None), "__name__",
                                                                     "kernel")
        do_time = timing and time_like is None
        if not execute and time_like is None:
            raise ConfigError("launch(execute=False) needs time_like=: there is no time without a run")
        r = None
        if execute:
            r = api.launch(kernel, grid, block, plain, gpu=self.spec, timing=do_time, shared_bytes=shared_bytes,
                           timing_options=(timing_options or TimingOptions(mode="auto"))  # every block executed
                           if do_time else None, peer_args=peer or None)
        if time_like is not None:
            dur, link_bytes = time_like.standalone_us, time_like.detail.get("link_bytes", (0.0, 0.0))
        elif timing:
            dur = float(r.metrics["gpu__time_duration.sum"]) / 1e3
            link_bytes = (r.metrics.get("nvltx__bytes.sum", 0.0), r.metrics.get("nvlrx__bytes.sum", 0.0))
        else:
            dur, link_bytes = 0.0, (0.0, 0.0)
        detail = {"peer_args": peer, "link_bytes": link_bytes}
        if r is not None:
            detail["result"] = r
        traffic = []
        if peer and dur > 0:                # its NVLink traffic shares the ports with copies and collectives
            # lazy: the multi-GPU fabric and collectives (~0.2 s), when a System runs
            from gpusim.interconnect.kernel_traffic import flows
            weights: dict[int, float] = {}
            for i in peer:
                weights[args[i].gpu] = weights.get(args[i].gpu, 0.0) + args[i].nbytes
            traffic = flows(g, weights, *link_bytes)
        sms_used, dram_GBps = (time_like.detail["sms_used"], time_like.detail["dram_GBps"]) if time_like is not None \
            else self._kernel_needs(r, grid, dur)
        detail.update(sms_used=sms_used, dram_GBps=dram_GBps)

        def body(fabric, shares):           # its SMs and DRAM shared with collectives and copies on GPU g
            # lazy: the multi-GPU fabric and collectives (~0.2 s), when a System runs
            from gpusim.gpu_share import kernel_work
            # lazy: the multi-GPU fabric and collectives (~0.2 s), when a System runs
            from gpusim.interconnect.kernel_traffic import kernel_process
            work = kernel_work(shares[g], dur * 1e3, sms_used, dram_GBps)
            if traffic:
                yield from kernel_process(fabric, dur * 1e3, traffic, work)
            else:
                yield from work

        return self._schedule(kname, "kernel", [g], "compute", dur, after, detail, body)

    def _kernel_needs(self, r, grid, dur_us: float) -> tuple[int, float]:
        """SMs a kernel keeps busy alone (its blocks, at most every SM) and its DRAM rate alone."""
        blocks = int(np.prod(grid)) if np.iterable(grid) else int(grid)
        if r is None or dur_us <= 0:
            return min(self.spec.sm_count, blocks), 0.0
        m = r.metrics
        return min(self.spec.sm_count, blocks), \
            (m.get("dram__bytes_read.sum", 0.0) + m.get("dram__bytes_write.sum", 0.0)) / (dur_us * 1e3)

    # ---- copies ----------------------------------------------------------------------
    def copy(self, dst: DeviceArray, src: DeviceArray, after=None) -> Op:
        """cudaMemcpyPeerAsync(dst, src) on the source GPU's copy engine."""
        # lazy: the multi-GPU fabric and collectives (~0.2 s), when a System runs
        from gpusim.interconnect.copy_engine import copy_process, peer_copies
        if dst.data.nbytes != src.data.nbytes:
            raise ConfigError(f"copy: destination has {dst.data.nbytes} bytes, source {src.data.nbytes}")
        dst.data[...] = src.data.reshape(dst.data.shape) if dst.data.dtype == src.data.dtype else \
            src.data.view(dst.data.dtype).reshape(dst.data.shape)
        if dst.gpu == src.gpu:
            dur = 2 * src.nbytes / (self.spec.hbm.bandwidth_GBps * 1e3)     # read + write in device memory
            return self._schedule("copy", "copy", [src.gpu], "copy", dur, after, {"bytes": src.nbytes})
        alone = peer_copies(self.spec, [(src.gpu, dst.gpu, src.nbytes)], gpus=self.n)["time_us"]
        return self._schedule(f"copy {src.gpu}->{dst.gpu}", "copy", [src.gpu, dst.gpu], "copy", alone, after,
                              {"bytes": src.nbytes}, self._holding_body(
                                  {src.gpu: 0, dst.gpu: 0}, src.nbytes / (alone * 1e3),
                                  lambda fabric: copy_process(fabric, src.gpu, dst.gpu, src.nbytes)), [src.gpu])

    # ---- collectives -----------------------------------------------------------------
    def _collective(self, op: str, arrays: list[DeviceArray], outputs, after, root: int = 0, **nccl) -> Op:
        # lazy: the multi-GPU fabric and collectives (~0.2 s), when a System runs
        from gpusim.collectives import functional, simulate
        # lazy: the multi-GPU fabric and collectives (~0.2 s), when a System runs
        from gpusim.collectives.run import plan_on, start_pattern
        # lazy: the multi-GPU fabric and collectives (~0.2 s), when a System runs
        from gpusim.interconnect.fabric import Fabric, RankView
        gpus = [a.gpu for a in arrays]
        if len(set(gpus)) != len(gpus) or len(gpus) < 2:
            raise ConfigError(f"{op}: give one array on each of at least 2 distinct GPUs, got GPUs {gpus}")
        results = functional.run(op, [a.data for a in arrays], root=root)
        targets = outputs if outputs is not None else arrays
        for t, res in zip(targets, results):
            if t.data.size != res.size:
                raise ConfigError(f"{op}: output on GPU {t.gpu} holds {t.data.size} elements; the result has "
                                  f"{res.size} (pass outputs= of that size)")
            t.data[...] = res.reshape(t.data.shape)
        size = arrays[0].nbytes * (len(arrays) if op == "all_gather" else 1)
        nccl.setdefault("in_place", outputs is None)   # results written over the inputs: NCCL's in-place call
        c = simulate(op, size, self.spec, len(arrays), **nccl)
        call = plan_on(RankView(Fabric(self.spec, gpus=self.n), gpus), op, size, self.spec, **nccl)

        ranks = gpus[root:] + gpus[:root]        # the model's chains start (broadcast) or end (reduce) at rank 0

        def pattern(fabric):
            yield fabric.env.timeout(call.fixed_ns)
            yield start_pattern(call, self.spec, RankView(fabric, ranks))

        link_bytes = sum(c.link_bytes_sent) / len(gpus)                # a GPU's mean, each way
        dram_GBps = self.spec.nccl.dram_bytes_per_link_byte * link_bytes / (c.time_us * 1e3)
        blocks = _channel_blocks(self.spec, call)
        return self._schedule(op, "collective", gpus, "comm", c.time_us, after, {"result": c, "sms": blocks},
                              self._holding_body({g: blocks for g in gpus}, dram_GBps, pattern))

    @staticmethod
    def _holding_body(sms: dict, dram_GBps: float, body):
        """`body(fabric)` while holding `sms[g]` SMs and `dram_GBps` of DRAM on each GPU g."""
        def held(fabric, shares):
            tokens = [object() for _ in sms]
            for t, (g, k) in zip(tokens, sms.items()):
                shares[g].enter(t, k, dram_GBps)
            yield fabric.env.process(body(fabric))
            for t, g in zip(tokens, sms):
                shares[g].leave(t)
        return held

    def all_reduce(self, arrays, after=None, **nccl) -> Op:
        return self._collective("all_reduce", arrays, None, after, **nccl)

    def all_gather(self, arrays, outputs, after=None, **nccl) -> Op:
        return self._collective("all_gather", arrays, outputs, after, **nccl)

    def reduce_scatter(self, arrays, outputs, after=None, **nccl) -> Op:
        return self._collective("reduce_scatter", arrays, outputs, after, **nccl)

    def broadcast(self, arrays, root: int = 0, after=None, **nccl) -> Op:
        """In place, as NCCL's ncclBroadcast with sendbuff == recvbuff: the root copies nothing."""
        return self._collective("broadcast", arrays, None, after, root=root, **nccl)

    def reduce(self, arrays, root: int = 0, after=None, **nccl) -> Op:
        return self._collective("reduce", arrays, None, after, root=root, **nccl)

    def all_to_all(self, arrays, outputs=None, after=None, **nccl) -> Op:
        return self._collective("all_to_all", arrays, outputs, after, **nccl)

    # ---- reporting -------------------------------------------------------------------
    def timeline_table(self) -> str:
        from gpusim.report.fmt import table  # lazy: the report package, only when the timeline is printed
        times = self._times()
        rows = [[op.name, op.kind, ",".join(map(str, op.gpus)), op.stream, f"{times[op][0]:.2f}",
                 f"{times[op][1]:.2f}", f"{times[op][1] - times[op][0]:.2f}", f"{op.standalone_us:.2f}"]
                for op in sorted(self.timeline, key=lambda o: (times[o][0], o.gpus))]
        return "\n".join(table(["operation", "kind", "GPUs", "stream", "start (us)", "end (us)", "time (us)",
                                "alone (us)"], rows, "lllrrrrr"))


def _channel_blocks(spec, call) -> int:
    """Thread blocks (SMs) a collective's kernel runs on each GPU: one per channel; a p2p call's
    rounds each on their own channels (tuning.p2p_round_channels), together at most NCCL's p2p
    channels."""
    # lazy: the multi-GPU fabric and collectives (~0.2 s), when a System runs
    from gpusim.collectives.tuning import p2p_round_channels, p2p_rounds
    p = call.plan
    if p.algorithm != "p2p":
        return int(p.channels)
    return len({ch for d in p2p_rounds(call.op, call.gpus) for ch in p2p_round_channels(spec, d, p.channels)})
