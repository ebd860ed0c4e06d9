"""The SIMT executor: runs a batch of thread blocks of one launch to completion.

A step executes one basic block for a group of warps whose reconvergence stacks have
that block on top, vectorized over all their lanes at once. The default scheduler
picks the lowest-numbered block any runnable warp waits at, so warps that follow the
same path stay in one group and a whole batch often advances in one numpy call per
instruction. Any other order gives the same results (warps only interact through
barriers, atomics and memory, which the program must synchronise); `step(warps=...)`
lets a timing model drive single warps instead.

After the block's ops, its terminator updates the stacks (uniform or divergent
branch, exit, barrier wait); a barrier releases once every live warp of a block
waits at it, a grid barrier (cooperative groups' `this_grid().sync()`) once every
block of the launch waits at one, which needs the whole grid in one batch (a
cooperative launch: all blocks co-resident, `gpusim/frontend/cg.py`). A step budget stops runaway loops with an error naming the lines.

Does not model: time. `StepRecord`s (block, warps, masks, accesses) are what a timing
model consumes.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass, field

import numpy as np

from gpusim.errors import BarrierError, KernelError, MemoryAccessError
from gpusim.functional.collectives import Collectives, pack_lanes, unpack_lanes
from gpusim.functional.counters import Counters
from gpusim.functional.decode import DecodedKernel
from gpusim.functional.lsu import LoadStoreUnit
from gpusim.functional.state import BatchState, convert
from gpusim.functional.warps import EXIT, FULL_MASK, WarpStacks

DEFAULT_STEP_BUDGET = 2_000_000            # steps (one block for a group of warps) per batch before "did not finish"
WARP_STEPS_PER_STEP = 128                  # ... and warp-steps (warps x steps) per step of budget (budget.py)


@dataclass(frozen=True)
class Geometry:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]

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
        gx, gy, _ = self.grid
        return (linear % gx, (linear // gx) % gy, linear // (gx * gy))

    def thread_coords(self, linear: int) -> tuple[int, int, int]:
        bx, by, _ = self.block
        return (linear % bx, (linear // bx) % by, linear // (bx * by))


@dataclass
class Access:
    """The lanes and byte offsets of one memory instruction in a step (trace mode)."""
    instr: int
    space: str
    lanes: np.ndarray
    offsets: np.ndarray


@dataclass
class StepRecord:
    """What one step did: block `block` for `warps` (batch-local ids) with `masks`."""
    block: int
    warps: np.ndarray
    masks: np.ndarray
    accesses: list[Access] = field(default_factory=list)


class BatchExecutor:
    """Executes blocks `first_block .. first_block + nctas - 1` of a launch."""

    def __init__(self, dk: DecodedKernel, geometry: Geometry, first_block: int, nctas: int, memory,
                 params: dict[str, bytes], shared_bytes: int, local_bytes: int, counters: Counters,
                 kernel_name: str, sm_count: int = 1, step_budget: int | None = None,
                 shared_banks: tuple[int, int] = (32, 4)):
        self.dk = dk
        self.geo = geometry
        self.first_block = first_block
        self.nctas = nctas
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
        self.record: StepRecord | None = None
        self.san = None                      # gpusim.sanitizer.BatchHooks when a check= tool is on
        self.step_budget = DEFAULT_STEP_BUDGET if step_budget is None else step_budget
        self.steps = 0
        self.warp_steps = 0                  # sum over steps of the warps each ran (budget.py: also bounded)
        self.on_steps = None                 # callable(executor), every 1024 steps (progress while a batch runs)
        self.span_masks = np.zeros(0, np.uint32)
        self.span_w0 = 0
        self._lane_arrays: dict[str, np.ndarray] = {}
        self._barriers = {b.barrier.index: b.barrier for b in dk.blocks if b.barrier is not None}
        grid = sorted(i for i, b in self._barriers.items() if getattr(b, "scope", "cta") == "grid")
        self.grid_barriers = np.array(grid, np.int64) if grid else None   # this_grid().sync() sites, or None
        # Blocks that can only exit (nothing but ret/exit), plus EXIT itself in the last slot (index -1):
        # lanes parked there need not arrive at a barrier, as exited threads need not on hardware.
        self.exit_only = np.array([b.terminator == "exit" and not b.ops for b in dk.blocks] + [True])

    # ------------------------------------------------------------------ geometry
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
            gx, gy, _ = self.geo.grid
            l31 = (lane & 31).astype(np.uint64)
            one = np.uint64(1)
            vals = {
                "%tid.x": lambda: t % bx, "%tid.y": lambda: (t // bx) % by, "%tid.z": lambda: t // (bx * by),
                "%ctaid.x": lambda: self._ctas() % gx, "%ctaid.y": lambda: (self._ctas() // gx) % gy,
                "%ctaid.z": lambda: self._ctas() // (gx * gy),
                "%laneid": lambda: lane & 31, "%warpid": lambda: t >> 5,
                "%smid": lambda: self._ctas() % self.sm_count,
                "%lanemask_eq": lambda: one << l31,
                "%lanemask_lt": lambda: (one << l31) - one,
                "%lanemask_le": lambda: (one << (l31 + one)) - one,
                "%lanemask_ge": lambda: ~((one << l31) - one),
                "%lanemask_gt": lambda: ~((one << (l31 + one)) - one),
            }
            if name not in vals:
                raise KernelError("unsupported special register", kernel=self.kernel_name, detail=name)
            arr = self._lane_arrays[name] = np.asarray(vals[name]()).astype(np.uint32)
        return arr

    def _ctas(self) -> np.ndarray:
        lane = np.arange(self.nlanes, dtype=np.int64)
        return self.first_block + lane // (self.wpc * 32)

    def special(self, name: str, want: np.dtype):
        g = self.geo
        uniform = {
            "%ntid.x": g.block[0], "%ntid.y": g.block[1], "%ntid.z": g.block[2],
            "%nctaid.x": g.grid[0], "%nctaid.y": g.grid[1], "%nctaid.z": g.grid[2],
            "%nwarpid": 4 * 16, "%nsmid": self.sm_count, "%gridid": 1,
            "%clock": self.steps, "%clock64": self.steps, "%globaltimer": self.steps * 1000,
            "%globaltimer_lo": self.steps * 1000, "%globaltimer_hi": 0,
            "%dynamic_smem_size": self.lsu.shared_bytes, "%total_smem_size": self.lsu.shared_bytes,
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

    def trace_access(self, op, space, lanes, offsets) -> None:
        if self.record is not None:
            self.record.accesses.append(Access(op.index, space, lanes, offsets))

    def barrier_op(self, index: int):
        return self._barriers.get(index)

    # ------------------------------------------------------------------ stepping
    def blocked(self) -> np.ndarray:
        """Warps whose next entry to run holds lanes that wait at a barrier."""
        return (self.stacks.top_mask_all() & self.arrived) != 0

    def runnable(self) -> np.ndarray:
        return (self.stacks.depth > 0) & ~self.blocked()

    def next_group(self) -> tuple[int, np.ndarray] | None:
        """The scheduler's choice: the lowest block any runnable warp waits at."""
        while True:
            run = self.runnable()
            if run.any():
                top = self.stacks.top_pc()
                top = np.where(run, top, np.iinfo(np.int32).max)
                b = int(top.min())
                return b, np.flatnonzero(top == b)
            blocked = self.blocked()
            if not blocked.any():
                return None
            self.collectives.release(blocked, self.wait_at, self.arrived)

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
        for op in blk.ops:
            op.run(self)
        self.counters.add_block(b, len(g), int(np.bitwise_count(masks).sum()))
        self.steps += 1
        self.warp_steps += len(g)
        if self.steps > self.step_budget or self.warp_steps > WARP_STEPS_PER_STEP * self.step_budget:
            self.fail_budget(b)
        if self.on_steps is not None and not self.steps & 1023:
            self.on_steps(self)
        self._terminate(blk, g, masks)

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
    def _where(self, lane: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        block = self.first_block + lane // (self.wpc * 32)
        return self.geo.block_coords(block), self.geo.thread_coords(lane % (self.wpc * 32))

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
        from isa.recursion import MAX_CALL_DEPTH
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

    def fail_budget(self, b: int) -> None:
        from gpusim.functional.budget import budget_error
        raise budget_error(self, b)
