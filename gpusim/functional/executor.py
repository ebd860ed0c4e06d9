"""The SIMT executor: runs a batch of thread blocks of one launch to completion.

A step executes one basic block for a group of warps whose reconvergence stacks have
that block on top, vectorized over all their lanes at once. The scheduler (`next_group`)
picks the lowest-numbered block any runnable warp waits at, so warps that follow the
same path stay in one group and a whole batch often advances in one numpy call per
instruction. Any other order gives the same results for a program that synchronises
through barriers, but not every order lets a program that waits for another warp finish
(a spin-wait on a flag another warp sets, a lock another warp holds). Volta and later
guarantee forward progress between the warps of a kernel and between resident blocks, so
once a batch has run `FAIR_AFTER_STEPS` steps (more than any program of `programs/` takes)
the scheduler also lets every warp advance:
- a warp runnable for `STARVE_STEPS` steps without running goes next (with every runnable
  warp at its block);
- warps in a loop the watchdog saw a warp repeat in (`watchdog.py`: waiting for something)
  go after the others;
- every `STARVE_STEPS` steps, and whenever only such waiting warps can run, the blocks all of
  whose unfinished warps wait at a barrier are released at once (before, a barrier releases
  when nothing else can run).
`step(warps=...)` lets a timing model drive single warps instead.

After the block's ops, its terminator updates the stacks (uniform or divergent
branch, exit, barrier wait); a barrier releases once every live warp of a block
waits at it, a grid barrier (cooperative groups' `this_grid().sync()`) once every
block of the launch waits at one, which needs the whole grid in one batch (a
cooperative launch: all blocks co-resident, `gpusim/frontend/cg.py`). A kernel is stopped
only when it can make no more progress (`watchdog.py`) or passes a step budget or time limit
its caller set (`budget.py`), with an error naming the lines, blocks and threads.

Does not model: time. `StepRecord`s (block, warps, masks, accesses) are what a timing
model consumes.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass, field

import numpy as np

from gpusim.errors import BarrierError, KernelError, MemoryAccessError
from gpusim.functional import budget
from gpusim.functional.cluster import ClusterUnit, cluster_lane_values, cluster_uniform_values
from gpusim.functional.collectives import Collectives, pack_lanes, unpack_lanes
from gpusim.functional.counters import Counters
from gpusim.functional.decode import DecodedKernel
from gpusim.functional.lsu import LoadStoreUnit
from gpusim.functional.state import BatchState, convert
from gpusim.functional.warps import EXIT, FULL_MASK, WarpStacks
from gpusim.functional.watchdog import OBSERVE_AFTER_STEPS, Watchdog
from isa.recursion import MAX_CALL_DEPTH

FAIR_AFTER_STEPS = OBSERVE_AFTER_STEPS     # steps of a batch before the scheduler is fair (module doc)
STARVE_STEPS = 256                         # a warp runnable this many steps without running goes next


@dataclass(frozen=True)
class Geometry:
    """A launch's shape. With thread-block clusters (`cluster` != (1, 1, 1)) a block's linear id
    counts in cluster order: the blocks of cluster c are c * cluster_size .. + cluster_size - 1,
    rank r = x + y cx + z cx cy within it, clusters numbered x-fastest over the grid of clusters;
    so the blocks of a cluster are consecutive and a batch of whole clusters holds them all."""
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    cluster: tuple[int, int, int] = (1, 1, 1)
    cluster_explicit: bool = False          # launched with clusters (%is_explicit_cluster)

    @property
    def cluster_size(self) -> int:
        return self.cluster[0] * self.cluster[1] * self.cluster[2]

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // 32)

    @property
    def nblocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def block_coords(self, linear: int) -> tuple[int, int, int]:
        x, y, z = self.ctaid_arrays(np.array([linear], np.int64))
        return (int(x[0]), int(y[0]), int(z[0]))

    def ctaid_arrays(self, linear: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """%ctaid.x, .y, .z of the blocks of linear ids `linear` (class docstring)."""
        gx, gy, _ = self.grid
        if self.cluster == (1, 1, 1):
            return linear % gx, (linear // gx) % gy, linear // (gx * gy)
        cx, cy, cz = self.cluster
        c, r = linear // self.cluster_size, linear % self.cluster_size
        nx, ny = gx // cx, gy // cy
        return ((c % nx) * cx + r % cx, ((c // nx) % ny) * cy + (r // cx) % cy, (c // (nx * ny)) * cz + r // (cx * cy))

    def thread_coords(self, linear: int) -> tuple[int, int, int]:
        bx, by, _ = self.block
        return (linear % bx, (linear // bx) % by, linear // (bx * by))


@dataclass
class Access:
    """The lanes and byte offsets of one memory instruction in a step (trace mode). `nbytes`
    and `is_store`: bytes per lane and direction where the instruction's `InstrInfo` does not
    give them (tensor-core and async-copy instructions: ldmatrix rows, cp.async sides, wmma
    fragments); 0 / None otherwise. Space 'mbarrier': an mbarrier operation, `values`
    (operation, per-lane argument arrays)."""
    instr: int
    space: str
    lanes: np.ndarray
    offsets: np.ndarray
    nbytes: int = 0
    is_store: bool | None = None
    phase_lanes: int = 32                    # lanes served together (ldmatrix: 8 row addresses per phase)
    values: object = None
    wavefronts: tuple | None = None      # shared, where already counted: (first batch warp w0, wavefronts
    #                                      of warps w0, w0 + 1, ..., -1 where the warp has no active lane)


class SpanAccess:
    """An `Access` of the compiled load/store unit, kept as it computed it: the byte offset
    of every lane of the step's span (-1: inactive) from batch lane `lo`; `lanes` and
    `offsets` are built when first read (the trace reads `wavefronts` of a shared access
    and nothing else). An ordinary load or store: `Access`'s defaults for the rest."""
    __slots__ = ("instr", "space", "wavefronts", "_offs", "_lo", "_lanes", "_offsets")
    nbytes, is_store, phase_lanes, values = 0, None, 32, None

    def __init__(self, instr: int, space: str, offs: np.ndarray, lo: int, wavefronts: tuple | None = None):
        self.instr, self.space, self.wavefronts = instr, space, wavefronts
        self._offs, self._lo, self._lanes, self._offsets = offs, lo, None, None

    def _build(self) -> None:
        act = self._offs >= 0
        self._lanes = np.flatnonzero(act) + self._lo
        self._offsets = self._offs[act].astype(np.uint64)

    @property
    def lanes(self) -> np.ndarray:
        if self._lanes is None:
            self._build()
        return self._lanes

    @property
    def offsets(self) -> np.ndarray:
        if self._offsets is None:
            self._build()
        return self._offsets


@dataclass
class StepRecord:
    """What one step did: block `block` for `warps` (batch-local ids) with `masks`."""
    block: int
    warps: np.ndarray
    masks: np.ndarray
    accesses: list[Access] = field(default_factory=list)


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
        self.state = BatchState(self.nlanes, dk.reg_dtypes)
        tpb = geometry.threads_per_block
        last = tpb - 32 * (self.wpc - 1)
        per_block = np.full(self.wpc, FULL_MASK, np.uint32)
        per_block[-1] = np.uint32((1 << last) - 1) if last < 32 else FULL_MASK
        self.launched = np.tile(per_block, nctas)
        self.stacks = WarpStacks(self.launched.copy(), entry_pc=0)
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
        self.detect = detect                 # watch for lack of progress (watchdog.py) once the batch runs long
        self.watch: Watchdog | None = None
        self.waiting_pc = np.zeros(len(dk.blocks) + 1, bool)   # blocks of loops warps were seen repeating in
        self.waited = np.zeros(self.nwarps, np.int64)   # steps each warp was runnable without running (fairness)
        self._released_at = 0
        self._watch_again = 0
        self.span_masks = np.zeros(0, np.uint32)
        self.span_w0 = 0
        self._lane_arrays: dict[str, np.ndarray] = {}
        self._barriers = {b.barrier.index: b.barrier for b in dk.blocks if b.barrier is not None}
        grid = sorted(i for i, b in self._barriers.items() if getattr(b, "scope", "cta") == "grid")
        self.grid_barriers = np.array(grid, np.int64) if grid else None   # this_grid().sync() sites, or None
        cw = sorted(i for i, b in self._barriers.items() if getattr(b, "scope", "cta") == "cluster")
        self.cluster_waits = np.array(cw, np.int64) if cw else None      # barrier.cluster.wait sites, or None
        self.cluster: ClusterUnit | None = None     # the cluster barrier, once a thread arrives at one
        # Blocks that can only exit (nothing but ret/exit), plus EXIT itself in the last slot (index -1):
        # lanes parked there need not arrive at a barrier, as exited threads need not on hardware.
        self.exit_only = np.array([b.terminator == "exit" and not b.ops for b in dk.blocks] + [True])

    # ------------------------------------------------------------------ geometry
    def cluster_unit(self) -> ClusterUnit:
        if self.cluster is None:
            self.cluster = ClusterUnit(self)
        return self.cluster

    def cta_slot(self, lanes: np.ndarray) -> np.ndarray:
        return lanes // (self.wpc * 32)

    def span_warps(self) -> np.ndarray:
        return np.arange(self.span_w0, self.span_w0 + len(self.span_masks))

    def _lanes(self, name: str) -> np.ndarray:
        """The per-lane special register `name` over the batch (uint32), computed on first use."""
        arr = self._lane_arrays.get(name)
        if arr is None:
            lane = np.arange(self.nlanes, dtype=np.int64)
            t = lane % (self.wpc * 32)
            bx, by, _ = self.geo.block
            l31 = (lane & 31).astype(np.uint64)
            one = np.uint64(1)
            vals = {
                "%tid.x": lambda: t % bx, "%tid.y": lambda: (t // bx) % by, "%tid.z": lambda: t // (bx * by),
                "%ctaid.x": lambda: self.geo.ctaid_arrays(self._ctas())[0],
                "%ctaid.y": lambda: self.geo.ctaid_arrays(self._ctas())[1],
                "%ctaid.z": lambda: self.geo.ctaid_arrays(self._ctas())[2],
                "%laneid": lambda: lane & 31, "%warpid": lambda: t >> 5,
                "%smid": lambda: self._ctas() % self.sm_count,
                "%lanemask_eq": lambda: one << l31,
                "%lanemask_lt": lambda: (one << l31) - one,
                "%lanemask_le": lambda: (one << (l31 + one)) - one,
                "%lanemask_ge": lambda: ~((one << l31) - one),
                "%lanemask_gt": lambda: ~((one << (l31 + one)) - one),
            }
            if name not in vals:
                vals.update(cluster_lane_values(self.geo, self._ctas))
                vals.update({k: (lambda v=v: np.full(self.nlanes, v)) for k, v in cluster_uniform_values(self.geo).items()})
            if name not in vals:
                raise KernelError("unsupported special register", kernel=self.kernel_name, detail=name)
            arr = self._lane_arrays[name] = np.asarray(vals[name]()).astype(np.uint32)
        return arr

    def _ctas(self) -> np.ndarray:
        lane = np.arange(self.nlanes, dtype=np.int64)
        return self.block_ids[lane // (self.wpc * 32)]

    def special(self, name: str, want: np.dtype):
        g = self.geo
        uniform = {
            "%ntid.x": g.block[0], "%ntid.y": g.block[1], "%ntid.z": g.block[2],
            "%nctaid.x": g.grid[0], "%nctaid.y": g.grid[1], "%nctaid.z": g.grid[2],
            "%nwarpid": 4 * 16, "%nsmid": self.sm_count, "%gridid": 1,
            "%clock": self.steps, "%clock64": self.steps, "%globaltimer": self.steps * 1000,
            "%globaltimer_lo": self.steps * 1000, "%globaltimer_hi": 0,
            "%dynamic_smem_size": self.lsu.shared_bytes, "%total_smem_size": self.lsu.shared_bytes,
            **cluster_uniform_values(g),
        }
        if name in uniform:
            return want.type(uniform[name]) if want.kind != "f" else want.type(uniform[name])
        st = self.state
        v = self._lanes(name)[st.lo:st.hi]
        return v if v.dtype == want else convert(v, want)

    # ------------------------------------------------------------------ lane helpers for units
    def write_lanes(self, slot: int, lanes: np.ndarray, vals: np.ndarray) -> None:
        st = self.state
        rd = st.reg_dtypes[slot]
        if vals.dtype != rd:
            vals = convert(vals, rd)
        if len(lanes) == st.nlanes and st.whole:
            st.regs[slot] = vals
            return
        cur = st.regs[slot]
        if type(cur) is not np.ndarray:
            cur = np.full(st.nlanes, cur, rd)
            st.regs[slot] = cur
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
        return (self.stacks.top_mask_all() & self.arrived) != 0

    def runnable(self) -> np.ndarray:
        return (self.stacks.depth > 0) & ~self.blocked()

    def next_group(self) -> tuple[int, np.ndarray] | None:
        """The scheduler's choice (module docstring): a block and every runnable warp waiting at it."""
        while True:
            run = self.runnable()
            if run.any():
                top = self.stacks.top_pc()
                if self.steps < FAIR_AFTER_STEPS:
                    b = int(np.where(run, top, np.iinfo(np.int32).max).min())
                else:
                    b = self._fair_block(run, top)
                    if b is None:                        # released a block's barrier: look again
                        continue
                g = np.flatnonzero(run & (top == b))
                self.waited[g] = 0
                return b, g
            blocked = self.blocked()
            if not blocked.any():
                return None
            self.collectives.release(blocked, self.wait_at, self.arrived)

    def _fair_block(self, run: np.ndarray, top: np.ndarray) -> int | None:
        """The lowest block of the warps not waiting in a repeating loop, unless a runnable
        warp has starved for STARVE_STEPS (its block then); None after releasing barriers."""
        self.waited[run] += 1
        waiting = run & self.waiting_pc[top]
        busy = run & ~waiting
        if (not busy.any() or self.steps - self._released_at >= STARVE_STEPS) and self._release_ready():
            return None
        starved = run & (self.waited > STARVE_STEPS)
        if starved.any():
            return int(top[int(np.argmax(np.where(starved, self.waited, -1)))])
        pick = busy if busy.any() else run
        return int(np.where(pick, top, np.iinfo(np.int32).max).min())

    def _release_ready(self) -> bool:
        """Release the barrier of every block whose unfinished warps all wait at it with all their
        live threads (blocks at a grid barrier wait for the whole grid); whether any was."""
        self._released_at = self.steps
        blocked = self.blocked()
        if not blocked.any():
            return False
        w = np.flatnonzero(blocked)
        if self.grid_barriers is not None:
            w = w[~np.isin(self.wait_at[w], self.grid_barriers)]
        if self.cluster_waits is not None:                  # released by their cluster's phase (cluster.py)
            w = w[~np.isin(self.wait_at[w], self.cluster_waits)]
            if not len(w):
                return False
        whole = (self.arrived[w] | self.stacks.lanes_at(w, self.exit_only)) == self.stacks.live_mask(w, self.launched)
        cta = w // self.wpc
        alive = np.bincount(np.flatnonzero(self.stacks.depth > 0) // self.wpc, minlength=self.nctas)
        ready = np.bincount(cta[whole], minlength=self.nctas)
        first = np.full(self.nctas, -1, np.int64)
        first[cta[::-1]] = self.wait_at[w][::-1]
        one = np.ones(self.nctas, bool)
        one[cta[self.wait_at[w] != first[cta]]] = False     # one barrier per block (else: the full release's error)
        done = (ready == alive) & (alive > 0) & one
        sel = w[whole & done[cta]]
        if not len(sel):
            return False
        mask = np.zeros(self.nwarps, bool)
        mask[sel] = True
        self.collectives.release(mask, self.wait_at, self.arrived)
        return True

    def run(self) -> None:
        while True:
            nxt = self.next_group()
            if nxt is None:
                return
            self.execute(*nxt)

    def step(self, warps: np.ndarray | None = None) -> StepRecord | None:
        """Execute one block for `warps` (all must have the same block on top and be
        runnable), or for the scheduler's choice; return what happened."""
        if warps is None:
            nxt = self.next_group()
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
        blk = self.dk.blocks[b]
        stacks = self.stacks
        masks = stacks.top_mask(g)
        w0 = int(g[0])
        nspan = int(g[-1]) - w0 + 1
        if nspan == len(g):
            span_masks = masks
        else:
            span_masks = np.zeros(nspan, np.uint32)
            span_masks[g - w0] = masks
        self.span_masks = span_masks
        self.span_w0 = w0
        full = nspan == len(g) and bool((masks == FULL_MASK).all())
        self.state.span(w0 * 32, (w0 + nspan) * 32, None if full else unpack_lanes(span_masks))
        watch = self.watch
        own = False
        if watch is not None:
            own = self.record is None            # the watchdog reads the step's accesses
            if own:
                self.record = StepRecord(b, g, masks)
            watch.before(b, g, masks)
        for op in blk.ops:
            op.run(self)
        self.counters.add_block(b, len(g), int(np.bitwise_count(masks).sum()))
        self.steps += 1
        self.warp_steps += len(g)
        if self.step_budget is not None and (self.steps > self.step_budget or
                                             self.warp_steps > budget.WARP_STEPS_PER_STEP * self.step_budget):
            raise budget.budget_error(self, b)
        if not self.steps % budget.CHECK_EVERY_STEPS:
            self._every_few_steps(b)
        self._terminate(blk, g, masks)
        if watch is not None:
            rec = self.record
            if own:
                self.record = None
            watch.after(b, g, blk, rec)
            if watch.gave_up:                   # walking more memory than it can watch: progressing
                self.watch = None
                self._watch_again = 2 * self.steps

    def _every_few_steps(self, b: int) -> None:
        """Progress, the time limit, and the watchdog's start (module docstring, budget.py)."""
        if self.on_steps is not None and not self.steps & 1023:
            self.on_steps(self)
        if self.deadline is not None and self.deadline.passed():
            raise budget.time_limit_error(self.kernel_name, self.deadline.seconds, self, b)
        if self.watch is None and self.detect and self.steps >= max(OBSERVE_AFTER_STEPS, self._watch_again):
            self.watch = Watchdog(self)

    def _terminate(self, blk, g, masks) -> None:
        stacks = self.stacks
        t = blk.terminator
        if t == "cond_branch" or t == "cond_exit":
            s, neg = blk.guard
            p = self.state.read(s, np.dtype(np.bool_))
            if type(p) is not np.ndarray:
                p = np.full(self.state.hi - self.state.lo, bool(p))
            if neg:
                p = ~p
            bits = pack_lanes(p)[g - self.span_w0] & masks
            self.counters.add_taken(blk.index, int(np.bitwise_count(bits).sum()))
            if t == "cond_branch":
                if blk.succs[0] == blk.index:              # a one-block loop's back edge
                    self.counters.add_loop_back(blk.index, int(np.count_nonzero(bits)))
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
                self._arrive(blk.barrier.index, g, masks)
                return
        else:
            raise AssertionError(f"unknown terminator {t}")
        stacks.settle(g)

    def _arrive(self, index: int, g: np.ndarray, masks: np.ndarray) -> None:
        """Lanes `masks` of warps `g` reach barrier `index` and wait there."""
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
