"""A launch made ready to execute: its plan (`gpusim/launch_plan.py`: compiled, decoded,
checked once), the device memory the plan filled, counters.

`PreparedLaunch` is the seam between the functional core and whoever drives it:
`gpusim.launch` runs every batch to completion; a timing model (or a teaching tool)
creates batches of the blocks it wants resident and steps their warps one basic
block at a time, reading back `StepRecord`s / `InstrEvent`s (op class, active mask,
per-lane addresses, source line) without giving up the vectorized fast path.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusim.functional.counters import Counters, metric_values
from gpusim.functional.decode import DecodedKernel, InstrInfo
from gpusim.functional.executor import BatchExecutor
from gpusim.functional.step_record import Access, StepRecord
from gpusim.functional.memory import DeviceMemory
from gpusim.functional import parallel
from gpusim.frontend.source import KernelSource, Marshalled
from gpusim.errors import UnsupportedKernel
from gpusim.launch_plan import LaunchPlan
from gpusim.result import Result, SassCounts
from gpusim.frontend.sass.opcodes import classify
from gpusim.frontend.sass.predication import pred_on_threads

# id(plan) -> (plan, its last launch's `Counters.snapshot`, metrics, SASS counts): a plan's launches
# (`gpusim.launch_template` gives a kernel launched alike the same plan) that count alike share them
_FINISHED: dict = {}


@dataclass(frozen=True)
class InstrEvent:
    """One executed instruction of a step: what it is and which lanes ran it."""
    info: InstrInfo                 # op class (`unit`, `kind`), mnemonic, source line, memory space
    warps: np.ndarray               # batch-local warp ids
    masks: np.ndarray               # active lane mask per warp (uint32)
    accesses: tuple[Access, ...]    # memory instructions: lanes and byte offsets, per space touched


def expand(dk: DecodedKernel, rec: StepRecord) -> list[InstrEvent]:
    """The instructions of a step in program order, each with its accesses."""
    blk = dk.blocks[rec.block]
    by_instr: dict[int, list[Access]] = {}
    for a in rec.accesses:
        by_instr.setdefault(a.instr, []).append(a)
    return [InstrEvent(dk.infos[i], rec.warps, rec.masks, tuple(by_instr.get(i, ())))
            for i in range(blk.first, blk.last)]


class PreparedLaunch:
    """The functional core's side of one launch: its plan (`gpusim.launch_plan.LaunchPlan`:
    the checked launch, compiled and decoded), the device memory the plan filled, the counters,
    and what goes back to the caller (the marshalled arguments' host copies; `source`, the
    kernel's language, whose runtime acts after the launch). `gpusim.prepare` makes one."""

    def __init__(self, plan: LaunchPlan, memory: DeviceMemory, marshalled: Marshalled, source: KernelSource,
                 args: tuple):
        self.plan = plan
        self.source = source
        self.args = tuple(args)
        self.memory = memory
        self.marshalled = marshalled
        self.counters = Counters(len(plan.decoded.infos), len(plan.decoded.blocks))
        self.sanitizer = None                 # gpusim.sanitizer.Sanitizer: hooks every batch when set
        self.step_budget: int | None = None   # the caller's max_steps per batch (budget.py), or None
        self.deadline = None                  # budget.Deadline: the caller's wall-clock limit, or None
        self.detect = True                    # stop batches that can make no more progress (watchdog.py)
        self.on_steps = None                  # callable(executor) every 1024 steps of a batch (progress), or None
        self.value_free: frozenset[int] = frozenset()   # prediction only: tensor results left unwritten (relevance.py)
        self.workers = (1, "not run yet")     # (processes of the functional run, why that many): run_all

    # the plan's names, as the functional core and its drivers read them
    spec = property(lambda self: self.plan.spec)
    name = property(lambda self: self.plan.name)
    grid = property(lambda self: self.plan.grid)
    block = property(lambda self: self.plan.block)
    geometry = property(lambda self: self.plan.geometry)
    compiled = property(lambda self: self.plan.compiled)
    layout = property(lambda self: self.plan.layout)
    decoded = property(lambda self: self.plan.decoded)
    core = property(lambda self: self.plan.core)
    shared_bytes = property(lambda self: self.plan.shared_bytes)
    block_shared_bytes = property(lambda self: self.plan.block_shared_bytes)
    cooperative = property(lambda self: self.plan.cooperative)
    peer_ranges = property(lambda self: self.plan.peer_ranges)
    recursive = property(lambda self: self.plan.recursive)
    sass = property(lambda self: self.plan.sass)
    sass_error = property(lambda self: self.plan.sass_error)

    def batch(self, first_block: int, nblocks: int, *, max_steps: int | None = None,
              blocks: np.ndarray | None = None) -> BatchExecutor:
        """An executor for blocks first_block .. first_block + nblocks - 1 (linear ids), or for
        `blocks` (increasing linear ids, first_block the first, nblocks of them) when given:
        blocks from across the grid run as one batch (`gpusim.timing.functional_streams`). With
        thread-block clusters, whole clusters (the blocks of a cluster run together)."""
        cs = self.geometry.cluster_size
        if cs > 1 and (first_block % cs or nblocks % cs or blocks is not None):
            raise UnsupportedKernel(f"kernel {self.name}: blocks {first_block}..{first_block + nblocks - 1} split a "
                                    f"thread-block cluster of {cs} blocks; the blocks of a cluster must run together")
        x = BatchExecutor(self.decoded, self.geometry, first_block, nblocks, self.memory, self.plan.params,
                          self.block_shared_bytes, self.layout.local_bytes, self.counters, self.name,
                          sm_count=getattr(self.spec, "sm_count", 1),
                          step_budget=self.step_budget if max_steps is None else max_steps,
                          shared_banks=(self.spec.sm.shared_banks, self.spec.sm.shared_bank_width_bytes),
                          deadline=self.deadline, detect=self.detect, block_ids=blocks)
        x.on_steps = self.on_steps
        x.value_free = self.value_free
        if self.sanitizer is not None:
            self.sanitizer.attach(x)
        return x

    def run_batch(self, first_block: int, nblocks: int, max_steps: int | None = None) -> None:
        """Execute blocks first_block .. first_block + nblocks - 1 to their end (`batch`), the
        executor closed after (`BatchExecutor.run(close=True)`: its memory freed at once)."""
        self.batch(first_block, nblocks, max_steps=max_steps).run(close=True)

    def blocks_per_batch(self, batch_lanes: int) -> int:
        """Blocks executed together: about `batch_lanes` lanes' worth, or the whole grid for a
        cooperative kernel (its grid barrier needs every block resident)."""
        geo = self.geometry
        if self.cooperative:
            return geo.nblocks
        n = max(1, min(geo.nblocks, batch_lanes // (geo.warps_per_block * 32)))
        cs = geo.cluster_size
        return max(cs, n // cs * cs)              # whole clusters (their blocks are co-scheduled)

    def run_all(self, batch_lanes: int, max_steps: int | None = None, workers: int | None = 1,
                on_blocks=None) -> None:
        """Execute every block, in batches of about `batch_lanes` lanes, on `workers`
        processes (None: `parallel.default_workers()`; see `gpusim.functional.parallel`
        for when a launch stays on one core). `self.workers` records (workers, why);
        `on_blocks(done)` hears of each batch done on several workers."""
        geo = self.geometry
        per_batch = self.blocks_per_batch(batch_lanes)
        n, why = parallel.plan(self, -(-geo.nblocks // per_batch), workers)
        self.workers = (n, why)
        if n > 1:
            parallel.run(self, per_batch, n, max_steps, on_blocks)
            return
        with np.errstate(all="ignore"):
            for first in range(0, geo.nblocks, per_batch):
                self.run_batch(first, min(per_batch, geo.nblocks - first), max_steps=max_steps)

    def finish(self, counter_scale: float = 1.0, outputs: bool = True) -> Result:
        """Copy results back into the caller's arrays and assemble the Result.
        `counter_scale` > 1 when only a sample of the blocks was executed (sampled timing
        with sampled functional execution): counts are extrapolated to the whole launch.
        `outputs=False` (a prediction-only launch) leaves the caller's arrays as they were."""
        if outputs:
            self.marshalled.copy_back(self.memory)
            self.source.after_launch(self)                  # the language's runtime (Numba: NRT stats, exceptions)
        dk = self.decoded
        snap = self.counters.snapshot() if counter_scale == 1.0 else None
        memo = _FINISHED.get(id(self.plan))
        if snap is not None and memo is not None and memo[0] is self.plan and memo[1] == snap:
            metrics, sass, table = dict(memo[2]), memo[3], dict(memo[4])   # the plan's last launch counted alike
        else:
            table = self.counters.instruction_table(*dk.counter_maps)
            if counter_scale != 1.0:
                table = {k: v * counter_scale for k, v in table.items()}
            metrics, sass = self._metrics(table, counter_scale)
            if snap is not None:
                for a in list(table.values()) + ([] if sass is None else
                                                 [sass.inst, sass.thread_inst, sass.thread_inst_pred_on]):
                    a.flags.writeable = False         # (shared by the results of launches that counted alike)
                if len(_FINISHED) > 256:
                    _FINISHED.clear()
                _FINISHED[id(self.plan)] = (self.plan, snap, dict(metrics), sass, dict(table))
        return Result(kernel=self.name, gpu=self.spec.name, grid=self.grid, block=self.block,
                      shared_bytes=self.shared_bytes, metrics=metrics, source_file=self.compiled.source_file,
                      table=table, infos=dk.infos, ptx=self.compiled.ptx, sass=sass)

    def _metrics(self, table: dict, counter_scale: float) -> tuple[dict, SassCounts | None]:
        """The launch's metrics from its counters' `table` (and its SASS counts)."""
        metrics = metric_values(table, totals=self.counters.totals() if counter_scale == 1.0 else None)
        metrics["launch__grid_size"] = self.geometry.nblocks
        metrics["launch__block_size"] = self.geometry.threads_per_block
        sass = self.sass_counts(counter_scale)
        metrics["gpusim__ptx_inst_executed.sum"] = metrics["smsp__inst_executed.sum"]
        metrics["gpusim__ptx_thread_inst_executed.sum"] = metrics["smsp__thread_inst_executed.sum"]
        if sass is not None:
            metrics.update(sass.metrics())
        metrics["gpusim__instruction_level"] = "sass" if sass is not None else "ptx"
        return metrics, sass

    def sass_counts(self, counter_scale: float = 1.0) -> SassCounts | None:
        """Executed SASS warp and thread instructions per SASS instruction, from the PTX
        blocks the functional core ran (None without the SASS tools, or for a kernel with
        recursive device functions: its counters stay PTX-level)."""
        if self.recursive:
            return None
        smap = self.sass
        if smap is None:
            return None
        c = self.counters
        inst, thr = smap.instruction_counts(c.block_warps * counter_scale, c.block_threads * counter_scale,
                                            c.loop_back * counter_scale)
        on = pred_on_threads(smap, self.decoded, thr, c.block_warps * counter_scale, c.block_threads * counter_scale,
                             c.loop_back * counter_scale, c.taken_threads * counter_scale)
        ins = smap.listing.instructions
        cc = self.compiled.cc
        classes = smap.counter_classes.get(cc)
        if classes is None:             # static per kernel: classified once, not per launch
            classes = smap.counter_classes[cc] = tuple(classify(x, cc).counters for x in ins)
        return SassCounts(ins, np.rint(inst), np.rint(thr), classes, np.rint(on))

