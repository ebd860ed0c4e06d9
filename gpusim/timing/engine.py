"""The timing engine: a SimPy model of the whole GPU for one kernel launch.

- A block scheduler hands thread blocks to SMs in launch order, as many per SM as
  occupancy allows (registers from ptxas, else PTX declarations; shared memory;
  threads; block slots), one `block_dispatch_cycles` apart, and the next one to an
  SM as soon as one of its blocks completes.
- Each SM is a SimPy process. It advances its warps (`sm.SM`) one quantum of
  `quantum_cycles` at a time, then sleeps until the next quantum in which it has
  something to do; an SM without resident blocks waits on an event until it gets
  one. Nothing polls idle hardware.
- L2 slices, the crossbar and HBM channels are shared bandwidth servers
  (`gpusim.timing.memory`) that the SMs book into, so contention between SMs shows.
- Sampled mode simulates a subset of the SMs with the shared memory system scaled to
  their share, over the share of blocks they would run, and at most `max_waves`
  waves of blocks, taken from across the grid as the round-robin block scheduler
  would hand them to those SMs (`sampled_blocks`); the remaining waves are
  extrapolated at the measured steady-state block rate (`extrapolation.py`).

Deterministic: SimPy orders events by (time, priority, insertion); nothing reads a clock.
"""
from __future__ import annotations

import dataclasses
import gc
import math
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import simpy

from gpusim.errors import ConfigError, LaunchError, UnsupportedKernel
from gpusim.timing import async_groups
from gpusim.timing.sampling.extrapolation import Extrapolation, SampleShape, sampled_blocks
from gpusim.timing.issue_stream import IssueStreams
from gpusim.timing.memory import MemorySystem
from gpusim.timing.memory.l1 import L1Cache
from gpusim.timing.sm import SM, STALL_REASONS
from gpusim.timing.static import issue_program, sass_classifier, unknown_sass, unknown_sass_message
from gpusim.timing.functional_streams import TraceSource, batch_independent
from gpusim.timing.resources import kernel_resources
from gpusim.timing.sampling.warming import shared_footprint
from gpusim.timing.record import CountingMemory, Recorder, RecordingSM, recording_for

STALL_METRIC = "smsp__pcsamp_warps_issue_stalled_{}"


FULL_COLLECTION_THRESHOLD = 1000      # gen1 collections between two full ones while a launch is timed (Python: 10)


@contextmanager
def rare_full_collections():
    """While a launch is built and timed, the garbage collector runs a full (generation 2) collection
    at most every FULL_COLLECTION_THRESHOLD gen1 collections instead of every 10. A launch
    allocates millions of objects that live for a block or a quantum and outlive the young
    collections; with Python's default each full collection rescans them all (in a sweep of
    small launches, one point in seven paid a full collection as long as the point itself).
    Young collections still free the cycles (warps and their blocks) as they die. The
    threshold is restored afterwards; results do not depend on it."""
    old = gc.get_threshold()
    gc.set_threshold(old[0], old[1], max(old[2], FULL_COLLECTION_THRESHOLD))
    try:
        yield
    finally:
        gc.set_threshold(*old)


def common_prefix(orders: list) -> list:
    """The longest list every one of `orders` starts with."""
    out = []
    for items in zip(*orders):
        if any(x != items[0] for x in items):
            break
        out.append(items[0])
    return out


HEARTBEAT_QUANTA = 256                 # quanta of one SM between two calls of TimingOptions.heartbeat


@dataclass(frozen=True)
class TimingOptions:
    mode: str = "auto"                 # 'full', 'sampled', or 'auto' (sampled above `auto_full_limit_blocks`)
    sample_sms: int = 8                # SMs simulated in sampled mode
    max_waves: int = 4                 # waves of blocks simulated per SM in sampled mode before extrapolating
    quantum_cycles: int = 64           # SMs synchronise every quantum
    auto_full_limit_blocks: int | None = None  # 'auto': full simulation up to this many blocks (None: one per SM)
    functional: str = "full"           # sampled mode: 'full' also executes the unsimulated blocks (correct outputs);
    #                                    'sampled' skips them (outputs partial, much faster for huge launches)
    progress: object = None            # callable(done_blocks, total_blocks) or None
    heartbeat: object = None           # callable(done_blocks, total_blocks) every HEARTBEAT_QUANTA quanta of an SM
                                       # (the caller's time limit within a long block), or None
    instruction_budget: int | None = 3_000_000   # SASS warp instructions timed in detail; beyond it loop sampling
    #                                    (issue_stream.py) leaves iterations out and extrapolates them; None: off
    functional_budget: int | None = 60_000_000   # sampled mode: PTX warp instructions executed for the sampled
    #                                    blocks; heavier blocks get fewer waves (at least one); None: max_waves
    record: object = None              # a record.TraceWindow: record issues, stalls, memory requests of those
    #                                    SMs and cycles (Result.extra['recording']); None: off, nothing recorded
    l2_dirty_bytes_at_launch: int = 0  # dirty bytes the L2 holds when the kernel starts, at addresses the kernel
    #                                    does not use, written back as its traffic evicts them (what a previous
    #                                    kernel or a profiler leaves: validate compare sets ncu's replay residue)
    background_dram_write_bytes_per_s: float = 0.0    # DRAM writes from outside the kernel while it runs, and
    background_l2_write_sectors_per_s: float = 0.0    # the L2 write sectors they make: counted, not timed
    #                                    (validate compare sets what ncu measures beside a spinning thread)
    unknown_sass: str = "error"        # a SASS opcode the table lacks: 'error' refuses the kernel; 'warn' times it as
    #                                    a generic ALU instruction, warns and counts it (gpusim__sass_estimated_inst.sum)

    def __post_init__(self) -> None:
        if self.unknown_sass not in ("error", "warn"):
            raise ConfigError(f"unknown_sass must be 'error' or 'warn', got {self.unknown_sass!r}")
        if self.mode not in ("auto", "full", "sampled"):
            raise ConfigError(f"timing mode must be 'auto', 'full' or 'sampled', got {self.mode!r}")
        if self.functional not in ("full", "sampled"):
            raise ConfigError(f"functional must be 'full' or 'sampled', got {self.functional!r}")
        if self.sample_sms < 1 or self.max_waves < 1 or self.quantum_cycles < 1:
            raise ConfigError("sample_sms, max_waves and quantum_cycles must be >= 1")
        for name in ("instruction_budget", "functional_budget"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, int) and v > 0):
                raise ConfigError(f"{name} must be a positive integer or None, got {v!r}")
        if not (isinstance(self.l2_dirty_bytes_at_launch, int) and self.l2_dirty_bytes_at_launch >= 0):
            raise ConfigError(f"l2_dirty_bytes_at_launch must be an integer >= 0, got {self.l2_dirty_bytes_at_launch!r}")
        for name in ("background_dram_write_bytes_per_s", "background_l2_write_sectors_per_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf"):
                raise ConfigError(f"{name} must be a number >= 0, got {v!r}")


class TimingStats:
    def __init__(self, n_instr: int):
        self.stall = np.zeros((len(STALL_REASONS), n_instr))     # [reason, SASS instruction]: cycles
        self.block_end: dict[int, float] = {}
        self.block_start: dict[int, float] = {}

    def block_done(self, block: int, start: float, end: float) -> None:
        self.block_start[block] = start
        self.block_end[block] = end


class TimingEngine:
    def __init__(self, prepared, options: TimingOptions = TimingOptions(), source=TraceSource):
        """Time `prepared`, a launch's functional core (`gpusim.functional.prepared.PreparedLaunch`):
        the engine reads the launch from its `plan` (`gpusim.launch_plan.LaunchPlan`: spec,
        geometry, compiled and decoded kernel, SASS, arrays, peer ranges) and hands `prepared`
        itself only to the trace source, which runs its blocks (`batch`).
        `source` makes the functional trace source (TraceSource's signature): gpusim.sweep
        passes one that records the streams, or replays recorded ones. In 'auto' mode a sample
        that cannot see a reuse distance its L2 hit rate depends on (extrapolation.py,
        `reuse_note`) is given up for full simulation where that is affordable."""
        self.footprint = None
        self.fallback = ""
        with rare_full_collections():          # building allocates the L1s' sets and the first blocks' streams
            self._build(prepared, options, source)
            note = self.extrapolation.reuse_note(ran=False)
            if note and options.mode == "auto" and source is TraceSource and self.extrapolation.full_affordable():
                trace = self.trace                 # its blocks already ran: the full run goes on from them
                self.footprint = None
                self._build(prepared, dataclasses.replace(options, mode="full"), lambda *a, **k: trace.reuse(*a, **k))
                self.fallback = note + ": simulated in full instead"

    def _build(self, prepared, options: TimingOptions, source) -> None:
        self.p = prepared                      # the functional core: the trace source runs its blocks
        self.plan = plan = prepared.plan       # the launch, as planned once (gpusim/launch_plan.py)
        self.spec = spec = plan.spec
        self.opt = options
        geo = plan.geometry
        self.res = kernel_resources(plan)
        bps = self.res.occupancy.blocks_per_sm
        if bps == 0:
            raise LaunchError(f"kernel {plan.name}: a block needs more resources than one SM has "
                              f"({self.res.occupancy.limiter} limit: {self.res.describe()})")
        n_sm = spec.sm_count
        mode = options.mode
        if mode == "auto":
            limit = options.auto_full_limit_blocks if options.auto_full_limit_blocks is not None else n_sm
            mode = "full" if geo.nblocks <= limit else "sampled"
        self.mode = mode
        self.sms_simulated = n_sm if mode == "full" else min(n_sm, options.sample_sms)
        frac = self.sms_simulated / n_sm
        self.blocks_share = geo.nblocks if mode == "full" else max(1, math.ceil(geo.nblocks * frac))
        wave = self.sms_simulated * bps
        self.wave_blocks = wave
        smap = plan.sass
        if smap is None:
            raise ConfigError(f"kernel {plan.name}: timing needs the kernel's SASS from NVIDIA's ptxas and "
                              f"nvdisasm: {' '.join(plan.sass_error.split())}")
        self.unknown_sass = unknown = unknown_sass(smap.listing.instructions, spec.compute_capability)
        if unknown:
            text = unknown_sass_message(plan.name, smap.listing.instructions, unknown, spec.compute_capability)
            if options.unknown_sass == "error":
                raise UnsupportedKernel(text)
            warnings.warn(text, RuntimeWarning, stacklevel=2)
        self.program = program = issue_program(smap, plan.decoded, sass_classifier(spec), spec)
        self.issue = IssueStreams(smap, program)
        self.block_static = program.segments
        self.stats = TimingStats(program.n_sass)
        self.trace = source(prepared, chunk_blocks=min(max(wave, 1), max(1, (1 << 15) // (geo.warps_per_block * 32))),
                                 issue=self.issue, execute_skipped=mode == "full" or options.functional == "full")
        # sampled runs of blocks from across the grid execute together (fewer, larger batches) where
        # a block's streams do not depend on its batch: first the first chunk the budget looks at
        # and the blocks timed whatever it decides, then the rest of the timed blocks
        gather = mode == "sampled" and self.sms_simulated < n_sm and options.functional == "sampled" and \
            batch_independent(prepared)
        if mode == "sampled" and self.sms_simulated < n_sm:
            self.trace.run_stop = min(self.sms_simulated, geo.nblocks)    # the first run of timed blocks
            if gather:
                waves = range(1, options.max_waves + 1) if options.functional_budget is not None else \
                    [options.max_waves]
                timed = common_prefix([sampled_blocks(geo.nblocks, min(self.blocks_share, w * wave), n_sm,
                                                      self.sms_simulated, bps) for w in waves])
                first = range(min(self.trace.chunk, self.trace.run_stop))
                self.trace.gather(sorted(set(first) | set(timed)))
        self.blocks_simulated = self._budget(options, mode, wave)
        self.block_order = order = sampled_blocks(geo.nblocks, self.blocks_simulated, n_sm, self.sms_simulated, bps)
        self.blocks_simulated = len(order)
        if gather:
            self.trace.gather(order)
        # first block of each run of consecutive timed blocks -> its length
        self._runs = {0: len(order)} if isinstance(order, range) and len(order) else {}
        if not isinstance(order, range):
            for i, b in enumerate(order):
                if i == 0 or b != order[i - 1] + 1:
                    start = b
                    self._runs[start] = 0
                self._runs[start] += 1
        self.memory = MemorySystem(spec, sm_fraction=frac,
                                   share_blocks_per_simulated=self.blocks_share / max(self.blocks_simulated, 1),
                                   peer_ranges=plan.peer_ranges)
        if options.l2_dirty_bytes_at_launch:
            self.memory.l2.preload_dirty(options.l2_dirty_bytes_at_launch)
        shared_per_sm = bps * self.res.shared_bytes_per_block
        l1_data = spec.sm.l1_shared_total_bytes - spec.sm.carveout_bytes(shared_per_sm)   # the driver's carve-out
        self.sms = [SM(i, spec, program, L1Cache(spec, l1_data, self.memory, i), self.stats,
                       self._cta_done) for i in range(self.sms_simulated)]
        self.recording = None
        if options.record is not None:
            self._record(options.record, l1_data)
        self.bps = bps
        if mode == "sampled" and self.sms_simulated < n_sm:
            self._warm_shared(frac)
        # what the sample extrapolates, and how far to trust it (sampling/extrapolation.py)
        self.extrapolation = Extrapolation(
            spec, SampleShape(mode, geo.nblocks, geo.warps_per_block, self.sms_simulated, self.blocks_share,
                              self.blocks_simulated, bps, wave, self.block_ptx_work, options.functional_budget),
            self.stats, self.sms, self.memory, self.issue, self.footprint)
        self.next_block = 0
        self.done_blocks = 0
        self.env = simpy.Environment()
        self._wake: dict[int, simpy.Event] = {}
        self._next_dispatch: dict[int, float] = {}

    def _warm_shared(self, frac: float) -> None:
        """Sampled mode: the arrays every part of the grid touches stay in the whole GPU's L2,
        not in the simulated SMs' share of it (sampling/warming.py), estimated from the
        first run of timed blocks."""
        l2 = self.memory.l2
        first = [self.trace.peek(b) for b in range(min(self._runs.get(0, 0), self.trace.run_stop or 0))]
        whole_lines = l2.capacity_lines / frac
        distinct = whole_lines / (1.0 + (l2.partitions - 1) / l2.partitions)   # a far line's copy takes room too
        fp = shared_footprint(self.plan.arrays, first, self.plan.geometry.nblocks,
                              l2.sectors_per_line, distinct, wave_blocks=self.spec.sm_count * self.bps)
        if fp is not None:
            self.footprint = fp
            self.memory.warm_shared(fp)
            nblocks, position = self.plan.geometry.nblocks, self.memory.block_position
            for sm in self.sms:
                sm.locate = lambda block: position(block / nblocks)

    def _record(self, window, l1_data: int) -> None:
        """Recording on (record.py): the chosen SMs become RecordingSMs, every L1 talks to the
        memory system through a CountingMemory (the L2 / HBM byte counters over time)."""
        self.recording = recording_for(self.plan, window, self.sms_simulated)
        self._recorder = recorder = Recorder(self.recording)
        for i in range(self.sms_simulated):
            lower = CountingMemory(self.memory, recorder)
            if i in window.sms:
                sm = RecordingSM(i, self.spec, self.program, L1Cache(self.spec, l1_data, lower, i),
                                 self.stats, self._cta_done)
                sm.attach(recorder, lower)
                self.sms[i] = sm
            else:
                self.sms[i].l1.lower = lower

    def _budget(self, opt: TimingOptions, mode: str, wave: int) -> int:
        """Blocks to simulate, and the SASS budget per warp (loop sampling), from the work of
        the first block's warps: sampled mode simulates at most `max_waves` waves, fewer
        (at least one) when their functional execution would exceed `functional_budget`."""
        first = self.trace.peek(0)
        ptx_len = [b.last - b.first for b in self.plan.decoded.blocks]
        ptx_work = self.block_ptx_work = sum(ptx_len[v[0]] for st in first for v in st.visits)
        cost = self.issue.cost
        sass_work = sum(cost.get(v[0], 0) for st in first for v in st.visits)
        blocks = self.blocks_share
        if mode == "sampled":
            waves = opt.max_waves
            if opt.functional_budget is not None and ptx_work:
                waves = min(waves, max(1, opt.functional_budget // (ptx_work * wave)))
            blocks = min(blocks, waves * wave)
        if opt.instruction_budget is not None and sass_work * blocks > opt.instruction_budget:
            self.issue.warp_budget = max(1, opt.instruction_budget // (blocks * self.plan.geometry.warps_per_block))
        return blocks

    # ------------------------------------------------------------------ block scheduler
    def _dispatch(self, sm: SM, t: float) -> bool:
        """Start the next block on `sm` at `t`, or as soon after as the SM can accept one:
        an SM takes at most one new block every `block_dispatch_cycles` (a rate, measured
        with many one-warp blocks), so tiny blocks are dispatch-bound."""
        if self.next_block >= self.blocks_simulated:
            return False
        b = self.block_order[self.next_block]
        self.next_block += 1
        if b in self._runs and b not in self.trace.ready:
            self.trace.seek(b, self._runs[b])       # a sampled run of blocks further into the grid
        t = max(t, self._next_dispatch.get(sm.id, 0.0))
        self._next_dispatch[sm.id] = t + self.spec.launch.block_dispatch_cycles
        sm.add_cta(b, self.trace.block(b), t)
        ev = self._wake.pop(sm.id, None)
        if ev is not None and not ev.triggered:
            ev.succeed()
        return True

    def _cta_done(self, sm: SM, block: int, t: float) -> None:
        self.done_blocks += 1
        if self.opt.progress is not None:
            self.opt.progress(self.done_blocks, self.blocks_simulated)
        self._dispatch(sm, t)

    def _sm_process(self, sm: SM):
        """One SM's SimPy process. An error raised while it runs (a kernel error of a block
        loaded on the way, the caller's time limit) is kept and the simulation stopped: SimPy
        would re-raise a copy built as `type(e)(*e.args)`, which gpusim's errors with keyword
        fields do not survive; `_run` raises the error itself."""
        try:
            yield from self._sm_steps(sm)
        except Exception as e:
            self._failure = e
            raise simpy.core.StopSimulation(None) from None

    def _sm_steps(self, sm: SM):
        env = self.env
        q = self.opt.quantum_cycles
        beat, beats = self.opt.heartbeat, 0
        while True:
            if not sm.has_work():
                if self.next_block >= self.blocks_simulated:
                    return
                ev = env.event()
                self._wake[sm.id] = ev
                yield ev
                continue
            until = env.now + q
            sm.advance(until)
            beats += 1
            if beat is not None and beats % HEARTBEAT_QUANTA == 0:
                beat(self.done_blocks, self.blocks_simulated)
            if not sm.has_work():
                continue
            nt = sm.next_time()
            target = until if nt == math.inf else max(until, math.floor(nt / q) * q)
            yield env.timeout(target - env.now)

    # ------------------------------------------------------------------ run
    def run(self) -> dict:
        with rare_full_collections():
            return self._run()

    def _run(self) -> dict:
        for k in range(self.bps):                          # initial wave: round-robin over the SMs
            for sm in self.sms:
                self._dispatch(sm, 0.0)
        self._failure = None
        for sm in self.sms:
            self.env.process(self._sm_process(sm))
        self.env.run()
        if self._failure is not None:
            raise self._failure
        complete = True
        if self.trace.next_block < self.plan.geometry.nblocks:
            if self.opt.functional == "full" or self.mode == "full":
                self.trace.finish_functional()
            else:
                complete = False
        m = self._metrics()
        m["timing__outputs_complete"] = complete
        if self.recording is not None:
            self._recorder.finish(math.ceil(max(self.stats.block_end.values(), default=0.0)))
            self.recording.sm_issued = {i: self.sms[i].issued for i in self.opt.record.sms}
        return m

    def _metrics(self) -> dict:
        spec = self.spec
        extra = self.extrapolation
        cycles = extra.cycles()
        # counts scale from the simulated blocks to the whole launch
        scale = self.plan.geometry.nblocks / max(self.blocks_simulated, 1)
        kept, skipped = self.issue.kept, self.issue.skipped
        inst_scale = scale * (kept[0] + skipped[0]) / kept[0] if kept[0] else scale   # loop sampling left out
        mem = self.memory.counters()
        m = {k: v * scale * self.issue.traffic_scale(k) for k, v in mem.items() if not k.endswith(".pct")}
        self._count_skipped_writebacks(m, scale)
        residue = self.memory.l2.residue_written_bytes()    # whole-GPU bytes already (TimingOptions)
        if residue:
            m["dram__bytes_write.sum"] = m.get("dram__bytes_write.sum", 0.0) + residue
            m["dram__sectors_write.sum"] = m.get("dram__sectors_write.sum", 0.0) + residue / spec.l2.sector_bytes
        m.update({k: v for k, v in mem.items() if k.endswith(".pct")})
        m.update(self._l1_counters(scale))
        m["sm__cycles_elapsed.max"] = cycles
        m["gpu__time_duration.sum"] = cycles * spec.cycle_ns + spec.launch.kernel_fixed_ns
        self._count_background_writes(m, m["gpu__time_duration.sum"] * 1e-9)
        warp_cycles = sum(sm.warp_cycles for sm in self.sms)
        active = sum(sm.active_cycles for sm in self.sms)
        m["sm__warps_active.avg.pct_of_peak_sustained_active"] = \
            100.0 * warp_cycles / active / spec.sm.max_warps_per_sm if active else 0.0
        stalls = {r: self.stats.stall[i].tolist() for i, r in enumerate(STALL_REASONS)
                  if r != "gmma" or self._has_wgmma()}          # Nsight's gmma: kernels that issue wgmma
        for r, arr in stalls.items():
            m[STALL_METRIC.format(r)] = sum(arr) * inst_scale
        issued = sum(sm.issued for sm in self.sms)
        m["timing__mode"] = self.mode
        m["timing__sms_simulated"] = self.sms_simulated
        m["timing__blocks_simulated"] = self.blocks_simulated
        m["launch__occupancy_limit_blocks"] = self.bps
        m["launch__registers_per_thread"] = self.res.registers_per_thread
        m["sm__maximum_warps_per_active_cycle_pct"] = self.res.occupancy.occupancy_pct
        m["timing__bound"], m["timing__utilization"] = self._bound(cycles, issued, scale)
        n_ptx = len(self.plan.decoded.infos)
        owner = self.program.owner
        self.per_instruction_stalls = {r: np.bincount(owner, weights=np.array(a) * inst_scale, minlength=n_ptx)
                                       for r, a in stalls.items()}
        m["gpusim__sass_unplaced_accesses.sum"] = self.issue.dropped * scale
        forced = sum(sm.mbarriers.forced for sm in self.sms)
        if forced:                               # mbarrier phases the model had to complete (mbarrier.py)
            m["gpusim__mbarrier_forced_completions.sum"] = forced * scale
        if self.unknown_sass:                    # warp instructions timed as generic (unknown_sass='warn')
            m["gpusim__sass_estimated_inst.sum"] = float(sum(stalls["selected"][i] for i in self.unknown_sass)) * inst_scale
        m["timing__loop_sampled_fraction"] = kept[0] / (kept[0] + skipped[0]) if kept[0] + skipped[0] else 1.0
        m["timing__sampling_error_pct"], m["timing__sampling_dram_error_pct"] = extra.errors(cycles, m)
        note = extra.reuse_note(dram_bytes=m.get("dram__bytes_read.sum", 0.0) + m.get("dram__bytes_write.sum", 0.0),
                                time_ns=m["gpu__time_duration.sum"])
        m["timing__sampling_note"] = self.fallback or (note and note + "; the error estimates cover either way "
                                                       "(mode='full' simulates every block)")
        return m

    def _has_wgmma(self) -> bool:
        """Whether the kernel's SASS has a warpgroup MMA (its waits are the `gmma` stall reason)."""
        return any(x.group_join == async_groups.WGMMA for x in self.program.table.flat)

    def _l1_counters(self, scale: float) -> dict:
        """The simulated SMs' L1 lookups and L1 <-> L2 bytes, scaled to the launch like the
        memory system's, with the hit rates of the sums (the requests and sectors themselves
        are the functional core's exact counts, already in the metrics). A load sector whose
        fill is already on its way (it joins the in-flight miss) counts as a lookup hit, as
        Nsight counts it (the tag is there): on the committed H200 data this gives
        matmul_naive 87.5%, stencil_1d 21.4%, softmax_rows 72.0% global load hits, equal to
        the measured ones (as misses: 25.0%, 3.8%, 62.9%)."""
        l1 = L1Cache.sum_counters([sm.l1.counters() for sm in self.sms])
        for space in ("global", "local"):
            joined = l1.get(f"gpusim__l1_mshr_merged_sectors_pipe_lsu_mem_{space}_op_ld.sum", 0.0)
            l1[f"l1tex__t_sectors_pipe_lsu_mem_{space}_op_ld_lookup_hit.sum"] += joined
            l1[f"l1tex__t_sectors_pipe_lsu_mem_{space}_op_ld_lookup_miss.sum"] -= joined
        out = {k: v * scale * self.issue.traffic_scale(k) for k, v in l1.items()
               if k.endswith(("_lookup_hit.sum", "_lookup_miss.sum")) or k.startswith("l1tex__m_")}
        hit = sum(v for k, v in out.items() if k.endswith("_lookup_hit.sum"))
        miss = sum(v for k, v in out.items() if k.endswith("_lookup_miss.sum"))
        out["l1tex__t_sector_hit_rate.pct"] = 100.0 * hit / (hit + miss) if hit + miss else 0.0
        h = out.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum", 0.0)
        x = out.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum", 0.0)
        out["l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct"] = 100.0 * h / (h + x) if h + x else 0.0
        return out

    def _count_skipped_writebacks(self, m: dict, scale: float) -> None:
        """Loop sampling: the dirty lines the left-out iterations' loads and stores would have
        evicted are written back (sampling/standins.py), in the counters only."""
        kept = self.issue.kept_kinds[0] + self.issue.kept_kinds[1]
        left_out = self.issue.skipped_kinds[0] + self.issue.skipped_kinds[1]
        if not kept or not left_out:
            return
        written, partial = self.memory.l2.skipped_traffic_writebacks((kept + left_out) / kept)
        if not written:
            return
        sb = self.spec.l2.sector_bytes
        for side, n in (("write", written * self.issue.traffic_scale("dram__bytes_write.sum")),
                        ("read", partial * self.issue.traffic_scale("dram__bytes_read.sum"))):
            m[f"dram__sectors_{side}.sum"] = max(0.0, m.get(f"dram__sectors_{side}.sum", 0.0) + n * scale)
            m[f"dram__bytes_{side}.sum"] = max(0.0, m.get(f"dram__bytes_{side}.sum", 0.0) + n * scale * sb)

    def _count_background_writes(self, m: dict, seconds: float) -> None:
        """Writes from outside the kernel while it runs (`TimingOptions.background_*`), counted."""
        dram = self.opt.background_dram_write_bytes_per_s * seconds
        if dram:
            m["dram__bytes_write.sum"] = m.get("dram__bytes_write.sum", 0.0) + dram
            m["dram__sectors_write.sum"] = m.get("dram__sectors_write.sum", 0.0) + dram / self.spec.l2.sector_bytes
        l2 = self.opt.background_l2_write_sectors_per_s * seconds
        if l2:
            for k in ("lts__t_sectors_op_write.sum", "lts__t_sectors.sum"):
                m[k] = m.get(k, 0.0) + l2

    def _bound(self, cycles: float, issued: int, scale: float) -> tuple[str, dict]:
        spec = self.spec
        if cycles <= 0:
            return "latency", {}
        frac = self.sms_simulated / spec.sm_count
        sim_cycles = max(self.stats.block_end.values()) if self.stats.block_end else cycles
        mem = self.memory.counters()
        util = {
            "compute": issued / (sim_cycles * self.sms_simulated * spec.sm.sub_partitions),
            "shared_memory": sum(sm.shared_wavefronts for sm in self.sms) / (sim_cycles * self.sms_simulated),
            "l2_bandwidth": mem.get("lts__t_sectors.sum", 0.0) * spec.l2.sector_bytes /
            (sim_cycles * spec.l2.slices * spec.l2.bandwidth_bytes_per_cycle_per_slice * frac),
            "hbm_bandwidth": (mem.get("dram__bytes_read.sum", 0.0) + mem.get("dram__bytes_write.sum", 0.0)) /
            (sim_cycles * spec.hbm_bytes_per_cycle * frac),
        }
        port = self.memory.peer
        if port is not None:                   # peer access: the busier direction of the NVLink port(s)
            util["nvlink_bandwidth"] = max(mem.get("nvltx__bytes.sum", 0.0), mem.get("nvlrx__bytes.sum", 0.0)) / \
                (sim_cycles * port.bytes_per_cycle * port.ports)
        util = {k: round(min(v, 1.0), 4) for k, v in util.items()}
        top = max(util, key=util.get)
        return (top if util[top] >= 0.6 else "latency"), util
