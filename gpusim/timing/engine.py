"""The timing engine: builds one launch's units and runs it.

`TimingEngine` reads the launch from its plan (`gpusim/launch_plan.py`), decides how much to
simulate (full or sampled mode; `_budget`: blocks, and the SASS instructions per warp beyond which
loop sampling starts), and builds the units, each an object with its own state in its own module:
- the issue program and streams (`static.py`, `issue_stream.py`) and the functional trace source
  (`functional_streams.py`) that runs the timed blocks' warps in the functional core;
- the block scheduler (`block_scheduler.py`): the GPU's CTA distributor, which hands thread blocks
  to SMs in launch order, as many per SM as occupancy allows (`resources.py`, `occupancy.py`), and
  the one SimPy part: each SM is a SimPy process that runs a quantum of `quantum_cycles` at a time;
- the SMs (`sm.py`), whose warp schedulers, scoreboard and pipes are a compiled loop
  (`issue_loop.py`, numba) within each quantum;
- the memory system (`timing/memory/`: L1s, L2 slices, crossbar, HBM channels), timestamp
  functions over fluid servers that the SMs book into, so contention between SMs shows;
- in sampled mode, the estimates (`timing/sampling/`): the whole GPU's L2 warmed with what the
  grid shares (`warming.py`), and `Extrapolation`: a subset of the SMs, with the shared memory
  system scaled to their share, runs the blocks the round-robin scheduler would deal them from
  across the grid (`sampled_blocks`, at most `max_waves` waves), and the rest is extrapolated at
  the measured steady-state block rate; in 'auto' mode a sample whose rate had not settled is
  timed again with four times the waves (`run`), on streams the trace source kept for it;
- the metrics builder (`metrics_builder.py`), which reads the finished units into the metrics
  under Nsight Compute's names.
`run` times the launch with the scheduler, lets the functional core finish the blocks it still
owes, and returns the builder's metrics.

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

from gpusim.errors import ConfigError, LaunchError, TimingDeadlock, UnsupportedKernel
from gpusim.timing.block_scheduler import BlockScheduler
from gpusim.timing.clock_domain import launch_spec
from gpusim.timing.functional_streams import TraceSource, batch_independent
from gpusim.timing.issue_stream import IssueStreams
from gpusim.timing.memory import MemorySystem
from gpusim.timing.memory.l1 import L1Cache
from gpusim.timing.metrics_builder import MetricsBuilder
from gpusim.timing.record import CountingMemory, Recorder, RecordingSM, recording_for
from gpusim.timing.resources import kernel_resources
from gpusim.timing.sampling.extrapolation import Extrapolation, SampleShape
from gpusim.timing.sampling.sample_blocks import sampled_blocks
from gpusim.timing.sampling.warming import shared_footprint
from gpusim.timing.sm import SM, STALL_REASONS
from gpusim.timing.static import issue_program, sass_classifier, unknown_sass, unknown_sass_message

FULL_COLLECTION_THRESHOLD = 1000      # gen1 collections between two full ones while a launch is timed (Python: 10)
UNPLACED_WARN_SHARE = 0.01           # warn where more of the executed accesses than this found no SASS to carry them
SETTLE_WAVES_FACTOR = 4              # 'auto': an unsettled sample is timed again with this many times its waves (`run`)
SETTLE_PCT = 10.0                    # ... where its extrapolated rate is this unsettled, in % of the time (`run`)


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


@dataclass(frozen=True)
class TimingOptions:
    mode: str = "auto"                 # 'full', 'sampled', or 'auto' (sampled above `auto_full_limit_blocks`)
    sample_sms: int = 8                # SMs simulated in sampled mode
    max_waves: int = 4                 # waves of blocks simulated per SM in sampled mode before extrapolating
    #                                    ('auto': SETTLE_WAVES_FACTOR times as many where the rate had not settled)
    quantum_cycles: int = 64           # SMs synchronise every quantum
    auto_full_limit_blocks: int | None = None  # 'auto': full simulation up to this many blocks (None: one per SM)
    functional: str = "full"           # sampled mode: 'full' also executes the unsimulated blocks (correct outputs);
    #                                    'sampled' skips them (outputs partial, much faster for huge launches)
    progress: object = None            # callable(done_blocks, total_blocks) or None
    heartbeat: object = None           # callable(done_blocks, total_blocks) every HEARTBEAT_QUANTA quanta of an SM
    #                                    (block_scheduler.py; the caller's time limit within a long block), or None
    instruction_budget: int | None = 3_000_000   # SASS warp instructions timed in detail; beyond it loop sampling
    #                                    (issue_stream.py) leaves iterations out and extrapolates them; None: off
    functional_budget: int | None = 60_000_000   # sampled mode: PTX warp instructions executed for the sampled
    #                                    blocks; heavier blocks get fewer waves (at least one); None: max_waves
    denser_sample_factor: int = 1      # 'auto': a sample blind to its L2 reuse whose full simulation is past the
    #                                    budgets takes up to this many times the SMs (1: off; extrapolation.py
    #                                    `denser_sms`: DRAM bytes far closer, durations not yet, 2-3x the time)
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
        if self.sample_sms < 1 or self.max_waves < 1 or self.quantum_cycles < 1 or self.denser_sample_factor < 1:
            raise ConfigError("sample_sms, max_waves, quantum_cycles and denser_sample_factor must be >= 1")
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
    """What the SMs write as they run: stall cycles by reason per SASS instruction, each timed
    block's start and end cycle and the bytes its accesses moved between its SM's L1 and the L2
    (read by the extrapolation and the metrics builder)."""

    def __init__(self, n_instr: int):
        self.stall = np.zeros((len(STALL_REASONS), n_instr))     # [reason, SASS instruction]: cycles
        self.block_end: dict[int, float] = {}
        self.block_start: dict[int, float] = {}
        self.block_l2_bytes: dict[int, float] = {}                # bytes a block's accesses moved between L1 and L2

    def block_traffic(self, block: int, nbytes: float) -> None:
        self.block_l2_bytes[block] = self.block_l2_bytes.get(block, 0.0) + nbytes

    def block_done(self, block: int, start: float, end: float) -> None:
        self.block_start[block] = start
        self.block_end[block] = end


class TimingEngine:
    """One launch's units, built from its plan, and its run (module docstring): `scheduler`
    (block_scheduler.BlockScheduler), `sms`, `memory`, `trace`, `issue`, `extrapolation`,
    `metrics_builder`; after `run`, `per_instruction_stalls` and, when recording, `recording`."""

    def __init__(self, prepared, options: TimingOptions = TimingOptions(), source=TraceSource):
        """Time `prepared`, a launch's functional core (`gpusim.functional.prepared.PreparedLaunch`):
        the engine reads the launch from its `plan` (`gpusim.launch_plan.LaunchPlan`: spec,
        geometry, compiled and decoded kernel, SASS, arrays, peer ranges) and hands `prepared`
        itself only to the trace source, which runs its blocks (`batch`).
        `source` makes the functional trace source (TraceSource's signature): gpusim.sweep
        passes one that records the streams, or replays recorded ones. In 'auto' mode a sample
        that cannot see a reuse distance its L2 hit rate depends on (extrapolation.py,
        `reuse_note`) is given up for full simulation where that is affordable, else, with
        `denser_sample_factor` above 1, for a denser sample (`Extrapolation.denser_sms`)."""
        self.footprint = None
        self.fallback = ""
        self.settled = ""                  # `run`: what settling an unsettled sample did (timing__sampling_settled)
        with rare_full_collections():          # building allocates the L1s' sets and the first blocks' streams
            self._build(prepared, options, source)
            note = self.extrapolation.reuse_note(ran=False)
            if note and options.mode == "auto" and isinstance(self.trace, TraceSource):
                trace = self.trace                 # its blocks already ran: the next run goes on from them
                if self.extrapolation.full_affordable():
                    self.footprint = None
                    self._build(prepared, dataclasses.replace(options, mode="full"),
                                lambda *a, **k: trace.reuse(*a, **k))
                    self.fallback = note + ": simulated in full instead"
                elif sms := self.extrapolation.denser_sms(options.denser_sample_factor):
                    before = self.sms_simulated
                    self.footprint = None
                    self._build(prepared, dataclasses.replace(options, sample_sms=sms),
                                lambda *a, **k: trace.reuse(*a, from_start=True, **k))
                    self.fallback = f"{note}: sampled {self.sms_simulated} SMs instead of {before}"
            self.settle_order = self._settle_order(options) if options.mode == "auto" and \
                isinstance(self.trace, TraceSource) else None
            if self.settle_order is not None:
                self.trace.keep_for(self.settle_order)

    def _build(self, prepared, options: TimingOptions, source, order=None) -> None:
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
        # the clock the kernel runs at (the tensor clock where it issues tensor instructions): every
        # unit below converts nanoseconds to cycles at it (clock_domain.py)
        self.spec = spec = launch_spec(spec, smap.listing.instructions)
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
        self.blocks_simulated = self._budget(options, mode, wave, None if order is None else len(order))
        if order is None:
            order = sampled_blocks(geo.nblocks, self.blocks_simulated, n_sm, self.sms_simulated, bps)
        self.blocks_simulated = len(order)
        if gather:
            self.trace.gather(order)
        self.gathered = list(order) if gather else []     # timed blocks executed in batches anyway
        # which block goes to which SM when: the one SimPy part (block_scheduler.py)
        self.scheduler = BlockScheduler(order, bps, spec.launch.block_dispatch_cycles, self.trace,
                                        options.quantum_cycles, options.progress, options.heartbeat)
        self.memory = MemorySystem(spec, sm_fraction=frac,
                                   share_blocks_per_simulated=self.blocks_share / max(self.blocks_simulated, 1),
                                   peer_ranges=plan.peer_ranges)
        if options.l2_dirty_bytes_at_launch:
            self.memory.l2.preload_dirty(options.l2_dirty_bytes_at_launch)
        shared_per_sm = bps * self.res.shared_bytes_per_block
        l1_data = spec.sm.l1_shared_total_bytes - spec.sm.carveout_bytes(shared_per_sm)   # the driver's carve-out
        self.sms = [SM(i, spec, program, L1Cache(spec, l1_data, self.memory, i), self.stats,
                       self.scheduler.cta_done) for i in range(self.sms_simulated)]
        merge = self.memory.l2.merge
        if merge.enabled:                                 # reads merge among the first wave's blocks (gpc_merge.py)
            merge.first_wave_blocks = spec.sm_count * bps
            for sm in self.sms:
                sm.merge = merge
        self.recording = None
        if options.record is not None:
            self._record(options.record, l1_data)
        self.bps = bps
        if mode == "sampled" and self.sms_simulated < n_sm:
            self._warm_shared(frac)
        # what the sample extrapolates, and how far to trust it (sampling/extrapolation.py)
        self.extrapolation = Extrapolation(
            spec, SampleShape(mode, geo.nblocks, geo.warps_per_block, self.sms_simulated, self.blocks_share,
                              self.blocks_simulated, bps, wave, self.block_ptx_work, options.functional_budget,
                              self._bulk_sectors_per_block()),
            self.stats, self.sms, self.memory, self.issue, self.footprint)
        # the finished units read into Nsight-named metrics (metrics_builder.py)
        self.metrics_builder = MetricsBuilder(
            spec, self.extrapolation.shape, self.stats, self.sms, self.memory, self.issue, self.extrapolation,
            program, len(plan.decoded.infos), self.res, unknown,
            options.background_dram_write_bytes_per_s, options.background_l2_write_sectors_per_s)

    def _warm_shared(self, frac: float) -> None:
        """Sampled mode: the arrays every part of the grid touches stay in the whole GPU's L2,
        not in the simulated SMs' share of it (sampling/warming.py), estimated from the
        first run of timed blocks."""
        l2 = self.memory.l2
        first = [self.trace.peek(b) for b in range(min(self.scheduler.runs.get(0, 0), self.trace.run_stop or 0))]
        whole_lines = l2.capacity_lines / frac
        distinct = whole_lines / (1.0 + (l2.partitions - 1) / l2.partitions)   # a far line's copy takes room too
        # the timed blocks from across the grid (batched with the first run where gathered, so
        # peeking at them costs no extra execution): how far apart blocks that share a line come
        spread = [(b, self.trace.peek(b)) for b in self.gathered]
        fp = shared_footprint(self.plan.arrays, first, self.plan.geometry.nblocks,
                              l2.sectors_per_line, distinct, wave_blocks=self.spec.sm_count * self.bps,
                              spread=spread, resolution_blocks=self.spec.sm_count)
        if fp is not None:
            self.footprint = fp
            self.memory.warm_shared(fp)
            nblocks, position = self.plan.geometry.nblocks, self.memory.block_position
            for sm in self.sms:
                sm.locate = lambda block: position(block / nblocks)

    def _record(self, window, l1_data: int) -> None:
        """Recording on (record.py): the chosen SMs become RecordingSMs, every L1 talks to the
        memory system through a CountingMemory (the L2 / HBM byte counters over time)."""
        self.recording = recording_for(self.plan, window, self.sms_simulated, self.spec.cycle_ns)
        self._recorder = recorder = Recorder(self.recording)
        for i in range(self.sms_simulated):
            lower = CountingMemory(self.memory, recorder)
            if i in window.sms:
                sm = RecordingSM(i, self.spec, self.program, L1Cache(self.spec, l1_data, lower, i),
                                 self.stats, self.scheduler.cta_done)
                sm.attach(recorder, lower)
                self.sms[i] = sm
            else:
                self.sms[i].l1.lower = lower

    def _bulk_sectors_per_block(self) -> float:
        """Global sectors the bulk and tensor copies of the blocks executed so far moved, per block
        (the functional core's TMA counters; 0 for a kernel without such copies, or a replayed
        trace that executed none)."""
        c = self.p.counters.per_instr
        sectors = sum(int(c[k].sum()) for k in ("tma_ld_sectors", "tma_st_sectors") if k in c)
        done = int(self.trace.done.sum())
        return sectors / done if sectors and done else 0.0

    def _budget(self, opt: TimingOptions, mode: str, wave: int, blocks: int | None = None) -> int:
        """Blocks to simulate, and the SASS budget per warp (loop sampling), from the work of
        the first block's warps: sampled mode simulates at most `max_waves` waves, fewer
        (at least one) when their functional execution would exceed `functional_budget`;
        `blocks`, where given (a settled sample's, `run`), instead."""
        first = self.trace.peek(0)
        ptx_len = [b.last - b.first for b in self.plan.decoded.blocks]
        ptx_work = self.block_ptx_work = sum(ptx_len[v[0]] for st in first for v in st.visits)
        cost = self.issue.cost
        sass_work = sum(cost.get(v[0], 0) for st in first for v in st.visits)
        if blocks is None:
            blocks = self.blocks_share
            if mode == "sampled":
                waves = opt.max_waves
                if opt.functional_budget is not None and ptx_work:
                    waves = min(waves, max(1, opt.functional_budget // (ptx_work * wave)))
                blocks = min(blocks, waves * wave)
        if opt.instruction_budget is not None and sass_work * blocks > opt.instruction_budget:
            self.issue.warp_budget = max(1, opt.instruction_budget // (blocks * self.plan.geometry.warps_per_block))
            self.issue.round_blocks = max(1, self.spec.sm_count * self.res.occupancy.blocks_per_sm)
        return blocks

    # ------------------------------------------------------------------ run
    def run(self) -> dict:
        """Time the launch: the block scheduler runs every timed block on the SMs, the functional
        core finishes the blocks it still owes, and the metrics builder reads the finished units.
        In 'auto' mode a sample whose extrapolated block rate had not settled
        (`Extrapolation.unsettled_pct` above SETTLE_PCT: a rate from waves still in their start
        transient, or waves in step) is timed again with SETTLE_WAVES_FACTOR times its waves
        (`_settle_order`), on streams the trace source kept for it, so no block executes twice."""
        with rare_full_collections():
            self._time()
            if self.settle_order is not None:
                unsettled = self.extrapolation.unsettled_pct()
                if unsettled > SETTLE_PCT:
                    before, trace, order = self.blocks_simulated, self.trace, self.settle_order
                    self.footprint = None
                    self._build(self.p, self.opt, lambda *a, **k: trace.reuse(*a, from_start=True, **k), order)
                    self.settle_order = None
                    self.settled = (f"the block rate of {before} timed blocks had not settled ({unsettled:.0f}% of "
                                    f"the time): timed {self.blocks_simulated} instead")
                    self._time()
                self.trace.keep_for([])            # the kept streams are used or not needed: dropped
            return self._run()

    def _settle_order(self, opt: TimingOptions) -> list | None:
        """The blocks a settled sample times (`run`): the simulated SMs' blocks of SETTLE_WAVES_FACTOR
        times the waves, as many as a SETTLE_WAVES_FACTOR-th of the functional budget executes
        (the trace source keeps their streams until the first run has shown whether they are
        needed); None where the sample extrapolates nothing, records, or would time no more."""
        if self.mode != "sampled" or self.blocks_simulated >= self.blocks_share or opt.record is not None:
            return None
        waves = opt.max_waves * SETTLE_WAVES_FACTOR
        work = self.block_ptx_work * self.wave_blocks
        if opt.functional_budget is not None and work:
            waves = min(waves, opt.functional_budget // SETTLE_WAVES_FACTOR // work)
        blocks = min(self.blocks_share, waves * self.wave_blocks)
        if blocks <= self.blocks_simulated:
            return None
        return list(sampled_blocks(self.plan.geometry.nblocks, blocks, self.spec.sm_count, self.sms_simulated,
                                   self.bps))

    def _time(self) -> None:
        """Run the timed blocks on the SMs (the block scheduler)."""
        try:
            self.scheduler.run(self.sms)
        except TimingDeadlock as e:         # the block scheduler knows SMs and warps; the message names the kernel
            raise TimingDeadlock(f"kernel {self.plan.name}: {e}") from None

    def _run(self) -> dict:
        complete = True
        if self.trace.next_block < self.plan.geometry.nblocks:
            if self.opt.functional == "full" or self.mode == "full":
                self.trace.finish_functional()
            else:
                complete = False
        m, self.per_instruction_stalls = self.metrics_builder.build(self.fallback)
        m["timing__outputs_complete"] = complete
        m["timing__sampling_settled"] = self.settled
        issue = self.issue
        if issue.dropped_mbarrier or issue.dropped > UNPLACED_WARN_SHARE * max(issue.kept[1], 1):
            # accesses (loads, stores, copies, mbarrier operations) that no issued SASS instruction
            # carried: the model did not time them (an mbarrier wait that did not wait); a few
            # scalar shared stores ptxas merged out of reach are left to the metric alone
            warnings.warn(f"kernel {self.plan.name}: {issue.dropped} memory or mbarrier operation(s) of the executed "
                          f"PTX ({issue.dropped_mbarrier} on mbarriers) found no issued SASS instruction to carry them "
                          "and were not timed (gpusim__sass_unplaced_accesses.sum): the predicted time may be short",
                          RuntimeWarning, stacklevel=3)
        smap = self.plan.sass
        if smap.unrolled_unhandled:
            dk = self.plan.decoded
            where = ", ".join(f"line {dk.infos[dk.blocks[h].first].line} ({k} copies)"
                              for h, k in sorted(smap.unrolled_unhandled.items()))
            warnings.warn(f"kernel {self.plan.name}: ptxas unrolled a loop of several PTX blocks with a branch inside "
                          f"at {where}; gpusim issues its unrolled SASS once an iteration, so that loop's "
                          "instructions and time are overstated up to that many times (docs/mechanisms_24.md section 31)",
                          RuntimeWarning, stacklevel=3)
        if self.recording is not None:
            self._recorder.finish(math.ceil(max(self.stats.block_end.values(), default=0.0)))
            self.recording.sm_issued = {i: self.sms[i].issued for i in self.opt.record.sms}
        return m
