"""The SIMT executor: runs a batch of thread blocks of one launch to completion.

A step executes one basic block for a group of warps whose reconvergence stacks have
that block on top, vectorized over all their lanes at once. The scheduler
(`scheduler.py`, `next_group`) picks the lowest-numbered block any runnable warp waits at,
so warps that follow the same path stay in one group and a whole batch often advances in
one numpy call per instruction. Any other order gives the same results for a program that
synchronises through barriers, but not every order lets a program that waits for another
warp finish (a spin-wait on a flag another warp sets, a lock another warp holds). Volta
and later guarantee forward progress between the warps of a kernel and between resident
blocks, so once a batch has run `FAIR_AFTER_STEPS` steps (more than any program of
`programs/` takes) the scheduler also lets every warp advance (starved warps first, warps
the watchdog saw waiting in a loop last, barriers released early: `scheduler.py`).
`step(warps=...)` lets a timing model drive single warps instead.

Run-on: while every warp of the batch runs each step together (a converged block or batch, no
watchdog, record or sanitizer, CTA barriers only, in the first `FAIR_AFTER_STEPS` steps),
`execute` goes on to the next block itself: after a terminator that leaves them all at one block
with the masks they had and no lane waiting (`stack_kernels.same_top`) the scheduler would pick
that block for all of them, and a CTA barrier every live lane reaches in the step completes as
they arrive (`barrier_kernels.arrive_all`: what arriving and the scheduler's release leave). The
blocks, counts and steps are the scheduler's; the Triton matmul default runs in one `execute`.

After the block's ops, its terminator updates the stacks (uniform or divergent
branch, exit, barrier wait); a barrier releases once every live warp of a block
waits at it, a grid barrier (cooperative groups' `this_grid().sync()`) once every
block of the launch waits at one, which needs the whole grid in one batch (a
cooperative launch: all blocks co-resident, `gpusim/frontend/cg.py`). A kernel is stopped
only when it can make no more progress (`watchdog.py`) or passes a step budget or time limit
its caller set (`budget.py`), with an error naming the lines, blocks and threads.

The batch's units: the load/store unit (`lsu.py`), the collectives and CTA barriers
(`collectives.py`), the cluster barrier (`cluster.py`), the special registers
(`specials.py`), the scheduler and the watchdog.

Does not model: time. `StepRecord`s (block, warps, masks, accesses: `step_record.py`) are
what a timing model consumes.
"""
from __future__ import annotations

import linecache

import numpy as np

from gpusim.errors import BarrierError, KernelError, MemoryAccessError
from gpusim.functional import barrier_kernels, budget, stack_kernels
from gpusim.functional.cluster import ClusterUnit
from gpusim.functional.collectives import Collectives, unpack_lanes
from gpusim.functional.counters import Counters
from gpusim.functional.decode import DecodedKernel
from gpusim.functional.geometry import Geometry
from gpusim.functional.lsu import LoadStoreUnit
from gpusim.functional.scheduler import FAIR_AFTER_STEPS, WarpScheduler
from gpusim.functional.specials import SpecialRegisters
from gpusim.functional.state import convert
from gpusim.functional.step_record import Access, SpanAccess, StepRecord
from gpusim.functional.warps import EXIT, starting_stacks
from gpusim.functional.watchdog import Watchdog
from isa.recursion import MAX_CALL_DEPTH

BOOL = np.dtype(np.bool_)
NO_BOOL = np.zeros(1, np.bool_)


class BatchExecutor:
    """Executes blocks `first_block .. first_block + nctas - 1` of a launch, or the blocks
    `block_ids` (linear ids, one per block slot, increasing) when given."""

    def __init__(self, dk: DecodedKernel, geometry: Geometry, first_block: int, nctas: int, memory,
                 params: dict[str, bytes], shared_bytes: int, local_bytes: int, counters: Counters,
                 kernel_name: str, sm_count: int = 1, step_budget: int | None = None,
                 shared_banks: tuple[int, int] = (32, 4), deadline: budget.Deadline | None = None,
                 detect: bool = True, block_ids: np.ndarray | None = None):
        self.dk = dk
        self.geo = geometry
        self.first_block = first_block
        self.nctas = nctas
        self.block_ids = (np.arange(first_block, first_block + nctas, dtype=np.int64) if block_ids is None
                          else np.asarray(block_ids, np.int64))
        self.wpc = geometry.warps_per_block
        self.nwarps = nctas * self.wpc
        self.nlanes = self.nwarps * 32
        self.kernel_name = kernel_name
        self.sm_count = sm_count
        self.counters = counters
        # from the kernel's pool (state.StatePool): a state of this batch's lanes and blocks, which the
        # per-lane special registers it keeps depend on; given back by `close`
        self.state = dk.states.take(self.nlanes, dk.reg_dtypes, (geometry, self.block_ids.tobytes(), sm_count))
        self.launched, self.stacks = starting_stacks(self.wpc, geometry.threads_per_block, nctas)
        self.wait_at = np.full(self.nwarps, -1, np.int64)     # barrier instruction each warp's lanes wait at
        self.arrived = np.zeros(self.nwarps, np.uint32)      # lanes of each warp that wait at that barrier
        self.lsu = (dk.lsu_class or LoadStoreUnit)(self, memory, params, shared_bytes, local_bytes, shared_banks)
        self.collectives = Collectives(self)
        self.async_copies = None             # gpusim.functional.async_ops.AsyncCopies once a cp.async runs
        self.record: StepRecord | None = None
        self.san = None                      # gpusim.sanitizer.BatchHooks when a check= tool is on
        self.step_budget = step_budget       # the caller's max_steps, or None (budget.py)
        self.deadline = deadline             # the caller's wall-clock limit, or None
        self.steps = 0
        self.warp_steps = 0                  # sum over steps of the warps each ran (budget.py: also bounded)
        self.on_steps = None                 # callable(executor), every 1024 steps (progress while a batch runs)
        self.value_free: frozenset[int] = frozenset()   # tensor instructions whose results no one needs (relevance.py)
        self.op_memo: dict = dk.op_memo      # what ops work out once and key themselves (decode.DecodedKernel)
        self.row_runs: dict = {}             # per row op, its runs in this batch (fastpath/kept_placement.stage)
        self.wgmma_warps = None              # (steps, span masks, warps) of the step's last unguarded wgmma
        self.detect = detect                 # watch for lack of progress (watchdog.py) once the batch runs long
        self.watch: Watchdog | None = None
        self.scheduler = WarpScheduler(self, len(dk.blocks))
        self._watch_again = 0
        self.span_masks = np.zeros(0, np.uint32)
        self.span_w0 = 0
        self.specials = SpecialRegisters(self, self.state.special_lanes)
        self.special = self.specials.read          # special(name, want): what decode's fetchers call
        # the kernel's barriers by instruction, its this_grid().sync() and barrier.cluster.wait sites (or
        # None), its exit-only blocks (`DecodedKernel.barrier_sites`: found once a kernel)
        self._barriers, self.grid_barriers, self.cluster_waits, self.exit_only = dk.barrier_sites
        self.cluster: ClusterUnit | None = None     # the cluster barrier, once a thread arrives at one

    def close(self) -> None:
        """Drop the units that refer back to this executor once its caller is done with it, so that reference
        counting frees the batch and its register file at once (kept with a sanitizer: its hooks hold it)."""
        if self.san is not None:
            return
        self.lsu = self.collectives = self.async_copies = self.scheduler = None
        self.specials = self.special = self.cluster = self.watch = None
        if self.state is not None:                   # its registers to the kernel's next batch (state.StatePool)
            self.dk.states.give(self.state)
            self.state = None

    # ------------------------------------------------------------------ geometry
    def cluster_unit(self) -> ClusterUnit:
        if self.cluster is None:
            self.cluster = ClusterUnit(self)
        return self.cluster

    def cta_slot(self, lanes: np.ndarray) -> np.ndarray:
        return lanes // (self.wpc * 32)

    def span_warps(self) -> np.ndarray:
        return np.arange(self.span_w0, self.span_w0 + len(self.span_masks))

    # ------------------------------------------------------------------ lane helpers for units
    def write_lanes(self, slot: int, lanes: np.ndarray, vals: np.ndarray) -> None:
        st = self.state
        rd = st.reg_dtypes[slot]
        if vals.dtype != rd:
            vals = convert(vals, rd)
        if len(lanes) == st.nlanes and st.whole:
            st.write(slot, vals)                         # every lane (a pooled state: into its own array)
            return
        cur = st.regs[slot]
        if type(cur) is not np.ndarray:
            cur = st.regs[slot] = st.array_for(slot, cur)
        cur[lanes] = vals

    def write_warps(self, slot: int, warps: np.ndarray, vals: np.ndarray, lane_ok: np.ndarray) -> None:
        lanes = (warps[:, None] * 32 + np.arange(32)).ravel()
        self.write_lanes(slot, lanes[lane_ok], vals[lane_ok])

    def lane_values(self, v, lanes: np.ndarray) -> np.ndarray:
        if type(v) is np.ndarray:
            return v[lanes - self.state.lo]
        return np.full(len(lanes), v)

    def trace_access(self, op, space, lanes, offsets, nbytes: int = 0, is_store: bool | None = None,
                     phase_lanes: int = 32) -> None:
        if self.record is not None:
            self.record.accesses.append(Access(op.index, space, lanes, offsets, nbytes, is_store, phase_lanes))

    def trace_span_access(self, op, space, offs: np.ndarray, wavefronts=None) -> None:
        """trace_access of the compiled load/store unit: offs over the span (-1: inactive lane)."""
        if self.record is not None:
            self.record.accesses.append(SpanAccess(op.index, space, offs, self.state.lo, wavefronts))

    def trace_mbarrier(self, op, lanes, offsets, what: str, args: list) -> None:
        """An mbarrier operation `what` ('init', 'arrive', 'expect_tx', 'arrive_expect_tx',
        'try_wait', 'test_wait', 'inval'; a bulk copy's 'complete_tx') of `lanes` on the mbarriers
        at shared `offsets`, with its per-lane arguments: what the timing model's mbarriers need
        (gpusim/timing/functional_streams.py, mbarrier.py)."""
        if self.record is not None:
            self.record.accesses.append(Access(op.index, "mbarrier", lanes, offsets, values=(what, args)))

    def barrier_op(self, index: int):
        return self._barriers.get(index)

    # ------------------------------------------------------------------ stepping
    def blocked(self) -> np.ndarray:
        """Warps whose next entry to run holds lanes that wait at a barrier."""
        out = np.empty(self.nwarps, bool)
        barrier_kernels.blocked(self.stacks.depth, self.stacks.mask, self.arrived, out)
        return out

    def runnable(self) -> np.ndarray:
        return (self.stacks.depth > 0) & ~self.blocked()

    def run(self, close: bool = False) -> None:
        """Steps until no warp can; `close`: then `close` (a caller wanting only memory and counters)."""
        while (nxt := self.scheduler.next_group()) is not None:
            self.execute(*nxt)
        if close:
            self.close()

    def step(self, warps: np.ndarray | None = None) -> StepRecord | None:
        """Execute one block for `warps` (all must have the same block on top and be
        runnable), or for the scheduler's choice; return what happened."""
        if warps is None:
            nxt = self.scheduler.next_group()
            if nxt is None:
                return None
            b, g = nxt
        else:
            g = np.asarray(warps, np.int64)
            if not self.runnable()[g].all():
                raise ValueError("step(): some warps are finished or waiting at a barrier")
            tops = self.stacks.top_pc()[g]
            if (tops != tops[0]).any():
                raise ValueError("step(): the warps are at different blocks")
            b = int(tops[0])
        self.record = StepRecord(b, g, self.stacks.top_mask(g).copy())
        try:
            self.execute(b, g)
            return self.record
        finally:
            self.record = None

    def execute(self, b: int, g: np.ndarray) -> None:
        """Run block `b` for warps `g`, and on (`same_top`) while they are every warp of the batch,
        converged: each next block the scheduler would give them all, without asking it (module
        docstring: run-on)."""
        stacks = self.stacks
        w0 = int(g[0])
        nspan = int(g[-1]) - w0 + 1
        masks = np.empty(len(g), np.uint32)
        span_masks = masks if nspan == len(g) else np.empty(nspan, np.uint32)
        full, threads = stack_kernels.step_masks(stacks.mask, stacks.depth, g, span_masks, masks)
        self.span_masks = span_masks
        self.span_w0 = w0
        if full:
            self.state.span(w0 * 32, (w0 + nspan) * 32, None)
        else:
            self.state.span(w0 * 32, (w0 + nspan) * 32, unpack_lanes(span_masks), span_masks)
        run_on = len(g) == self.nwarps and self.record is None and self.scheduler._simple_release()
        while True:
            self._block(b, g, masks, threads, run_on)
            if not run_on or self.watch is not None or self.steps >= FAIR_AFTER_STEPS:
                return
            b = stack_kernels.same_top(stacks.depth, stacks.pc, stacks.mask, self.arrived, g, masks)
            if b < 0:
                return

    def _block(self, b: int, g: np.ndarray, masks: np.ndarray, threads: int, whole: bool) -> None:
        """Block `b` (or the chain it starts) run by warps `g` with lane masks `masks` (`threads`
        lanes; the state's span set), counted, and its terminator (`whole`: `execute`'s run-on)."""
        blk = self.dk.blocks[b]
        stacks = self.stacks
        watch = self.watch
        own = False
        if watch is not None:
            own = self.record is None            # the watchdog reads the step's accesses
            if own:
                self.record = StepRecord(b, g, masks)
            watch.before(b, g, masks)
        chain = blk.chain
        if chain and watch is None and self.record is None and self.san is None and \
                (len(g) == self.nwarps or len(g) == np.count_nonzero(stacks.depth)):
            for op in blk.chain_ops:            # every live warp, straight on through the chain (decode.chains)
                op.run(self)
            budget.count_chain(self, blk.chain_blocks, g, threads)     # (decode.chains: every block of it)
            blk = self.dk.blocks[chain[-1]]
        else:
            for op in blk.ops:
                op.run(self)
            budget.count_step(self, b, g, threads)
        self._terminate(blk, g, masks, whole and watch is None)
        if watch is not None:
            rec = self.record
            if own:
                self.record = None
            watch.after(b, g, blk, rec)
            if watch.gave_up:                   # walking more memory than it can watch: progressing
                self.watch = None
                self._watch_again = 2 * self.steps

    def _terminate(self, blk, g, masks, whole: bool = False) -> None:
        """Block `blk`'s terminator for warps `g` (`masks`); `whole`: they are every warp of the batch
        (no watchdog, no record, CTA barriers only), so a CTA barrier every live lane reaches completes
        as they arrive."""
        stacks = self.stacks
        t = blk.terminator
        if t == "cond_branch" or t == "cond_exit":
            s, neg = blk.guard
            p = self.state.read(s, BOOL)
            bits = np.empty(len(g), np.uint32)
            if type(p) is np.ndarray:
                threads, warps = stack_kernels.taken_masks(p, False, False, bool(neg), g, self.span_w0, masks, bits)
            else:
                threads, warps = stack_kernels.taken_masks(NO_BOOL, True, bool(p), bool(neg), g, self.span_w0, masks,
                                                           bits)
            self.counters.add_taken(blk.index, threads)
            if t == "cond_branch":
                if blk.succs[0] <= blk.index:              # a loop's back edge, counted at its header
                    self.counters.add_loop_back(blk.succs[0], warps)
                stacks.branch(g, masks, bits, blk.succs[0], blk.succs[1], blk.ipdom)
            else:
                stacks.exit_lanes(g, bits)
                stacks.goto(g, blk.succs[0])
        elif t == "exit":
            stacks.exit_lanes(g, masks)
        elif t in ("branch", "fallthrough", "barrier"):
            stacks.goto(g, blk.succs[0] if blk.succs else EXIT)
            if blk.barrier is not None and blk.barrier.scope == "cluster":
                wait = self.cluster_unit().wait(blk.barrier.index, g, masks)
                if len(wait):
                    sel = np.isin(g, wait)
                    self._arrive(blk.barrier.index, g[sel], masks[sel])
                    g = g[~sel]
                stacks.settle(g)
                return
            if blk.barrier is not None:
                if whole and g.dtype == np.int64 and \
                        barrier_kernels.arrive_all(self.wait_at, g, masks, blk.barrier.index, stacks.pc, stacks.rpc,
                                                   stacks.mask, stacks.depth, self.launched, stacks.exited,
                                                   self.arrived):
                    return                              # (what the scheduler's release would have done next)
                self._arrive(blk.barrier.index, g, masks)
                return
        else:
            raise AssertionError(f"unknown terminator {t}")
        stacks.settle(g)

    def _arrive(self, index: int, g: np.ndarray, masks: np.ndarray) -> None:
        """Lanes `masks` of warps `g` reach barrier `index` and wait there."""
        st = self.stacks
        if g.dtype == np.int64:                          # one compiled pass (barrier_kernels.arrive)
            code = barrier_kernels.arrive(self.arrived, self.wait_at, g, masks, index, st.pc, st.rpc, st.mask,
                                        st.depth, self.launched, st.exited)
            if code != 1:
                if code == 2:
                    short = np.flatnonzero(st.live_mask(g, self.launched) & ~self.arrived[g])
                    st.yield_to_sibling(g[short], self.arrived)
                return
        other = (self.arrived[g] != 0) & (self.wait_at[g] != index)
        if other.any():
            w = int(g[np.flatnonzero(other)[0]])
            self.fail_barrier(w, index, None, "threads of one warp wait at two different barriers (PTX instructions "
                              f"{int(self.wait_at[w])} and {index}); __syncthreads must be reached by all threads "
                              "of the block at the same call")
        self.arrived[g] |= masks
        self.wait_at[g] = index
        self.stacks.settle(g)
        short = np.flatnonzero(self.stacks.live_mask(g, self.launched) & ~self.arrived[g])
        if len(short):
            self.stacks.yield_to_sibling(g[short], self.arrived)

    # ------------------------------------------------------------------ errors
    def lane_coords(self, lane: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(block, thread) coordinates of batch lane `lane`."""
        block = int(self.block_ids[lane // (self.wpc * 32)])
        return self.geo.block_coords(block), self.geo.thread_coords(lane % (self.wpc * 32))

    _where = lane_coords

    def block_source(self, block: int) -> str:
        """The source line where basic block `block` starts, or its PTX block number."""
        blk = self.dk.blocks[block]
        return self.source(blk.first) if blk.last > blk.first else f"PTX block {block}"

    def source(self, index: int) -> str:
        info = self.dk.infos[index]
        if not info.line:
            return f"PTX line {info.ptx_line}"
        text = linecache.getline(info.file, info.line).strip()
        return f"{info.file}:{info.line} ({text})" if text else f"{info.file}:{info.line}"

    def fail_access(self, op, lane: int, addr: int, space: str, detail: str, kind: str = "out-of-bounds address") -> None:
        block, thread = self._where(lane)
        if self.san is not None:
            self.san.fault("memcheck", "misaligned" if kind.startswith("misaligned") else "out-of-bounds", op.index,
                           lane, space, addr, detail)
        raise MemoryAccessError(f"{kind} in {space} memory", kernel=self.kernel_name, source=self.source(op.index),
                                block=block, thread=thread, detail=f"address {addr:#x} ({op.info.access_bytes}-byte "
                                f"{'store' if op.info.is_store else 'load'} by {op.info.mnemonic}): {detail}")

    def fail_collective(self, op, warp: int, lane: int, detail: str) -> None:
        block, thread = self._where(warp * 32 + lane)
        if self.san is not None:
            self.san.fault("synccheck", "non-converged lane in membermask", op.index, warp * 32 + lane, detail=detail)
        raise BarrierError("non-converged warp collective", kernel=self.kernel_name, source=self.source(op.index),
                           block=block, thread=thread, detail=detail)

    def fail_barrier(self, warp: int, index: int, lane: int | None, detail: str) -> None:
        block, thread = self._where(warp * 32 + (lane or 0))
        if lane is not None:
            detail = f"thread {thread} is live but not at the barrier; {detail}"
        if self.san is not None:
            self.san.fault("synccheck", "divergent barrier", index, warp * 32 + (lane or 0), detail=detail)
        raise BarrierError("barrier deadlock", kernel=self.kernel_name, source=self.source(index),
                           block=block, thread=None, detail=detail)

    def fail_trap(self, index: int) -> None:
        st = self.state
        lane = st.lo if st.m is None else st.lo + int(np.flatnonzero(st.m)[0])
        block, thread = self._where(lane)
        raise KernelError("trap (assertion or exception raised in the kernel)", kernel=self.kernel_name,
                          source=self.source(index), block=block, thread=thread)

    def fail_stack_overflow(self, index: int, g) -> None:
        """A call of a recursive device function found the thread's call stack full (isa.recursion)."""
        st = self.state
        m = st.m if st.m is not None else np.ones(st.hi - st.lo, bool)
        if type(g) is np.ndarray:
            m = m & g
        lane = st.lo + int(np.flatnonzero(m)[0])
        block, thread = self._where(lane)
        raise KernelError("call stack overflow", kernel=self.kernel_name, source=self.source(index),
                          block=block, thread=thread,
                          detail=f"recursive device-function calls nested deeper than {MAX_CALL_DEPTH} "
                                 "(gpusim's call-depth limit, isa.recursion.MAX_CALL_DEPTH; a GPU's limit is "
                                 "cudaLimitStackSize bytes of stack per thread)")

    def fail_no_progress(self, dog, warps: np.ndarray) -> None:
        raise budget.no_progress_error(self, dog, warps)

    def fail_wraparound(self, drift, warps: np.ndarray) -> None:
        raise budget.wraparound_error(self, drift, warps)
