"""The block scheduler: the GPU's CTA distributor, and the one SimPy part of a single-GPU launch.

It hands a launch's timed blocks (`order`, in launch order, or the sampled blocks from across
the grid: `sampling/sample_blocks.py`'s `sampled_blocks`) to the SMs:
- the initial wave round-robin over the SMs, `blocks_per_sm` each (the occupancy limit);
- then the next block to an SM as soon as one of its blocks completes (the SM calls
  `cta_done`, its `on_cta_done` port);
- at most one new block per SM every `dispatch_cycles` (`spec.launch.block_dispatch_cycles`, a
  rate measured with many one-warp blocks), so tiny blocks are dispatch-bound.
A block's warp streams come from the functional trace source (`functional_streams.py`), which
is told to jump (`seek`) where a sampled run of consecutive blocks starts further into the grid.

Each SM is a SimPy process here. It advances its warps (`sm.SM.advance`, the compiled issue
loop of `issue_loop.py`) one quantum of `quantum_cycles` at a time, then sleeps until the next
quantum in which it has something to do; an SM without resident blocks waits on an event until
the scheduler gives it one. Nothing polls idle hardware. The quanta are what keep the SMs'
requests to the shared memory units (L2 slices, crossbar, HBM: timestamp functions over fluid
servers, `timing/memory/`) in time order, up to one quantum of skew.

Does not model: the GPC / TPC hierarchy (clusters are refused by `gpusim.api`), priorities
between concurrent kernels (`gpusim/gpu_share.py` shares SMs between a kernel and collectives).

Deterministic: SimPy orders events by (time, priority, insertion); nothing reads a clock.
"""
from __future__ import annotations

import math

import simpy

from gpusim.errors import TimingDeadlock
from gpusim.timing.functional_streams import consecutive_runs

HEARTBEAT_QUANTA = 256                 # quanta of one SM between two calls of TimingOptions.heartbeat


class BlockScheduler:
    """Which timed block goes to which SM when (module docstring): a unit of `TimingEngine`,
    built with the launch's block order before the SMs, which report finished blocks to
    `cta_done`. Its state: the next block to hand out, the blocks done, the SimPy environment
    (`now`: the simulated cycle), each SM's next dispatch slot and the event an idle SM waits on."""

    def __init__(self, order, blocks_per_sm: int, dispatch_cycles: float, trace, quantum_cycles: int,
                 progress=None, heartbeat=None):
        self.order = order                     # the timed blocks, in the order they are handed out
        self.total_blocks = len(order)
        self.runs = consecutive_runs(order)    # where the trace source has to seek
        self.blocks_per_sm = blocks_per_sm
        self.dispatch_cycles = dispatch_cycles
        self.trace = trace                     # functional_streams.TraceSource (or a sweep's recording / replay)
        self.quantum_cycles = quantum_cycles
        self.progress = progress               # TimingOptions.progress: callable(done_blocks, total_blocks) or None
        self.heartbeat = heartbeat             # TimingOptions.heartbeat: the same, every HEARTBEAT_QUANTA quanta
        self.next_block = 0                    # index into `order` of the next block to hand out
        self.done_blocks = 0
        self.env = simpy.Environment()
        self._wake: dict[int, simpy.Event] = {}          # SM id -> the event it sleeps on without blocks
        self._next_dispatch: dict[int, float] = {}       # SM id -> the earliest cycle it takes a new block
        self._failure: Exception | None = None

    @property
    def now(self) -> float:
        """The simulated cycle the SMs have reached."""
        return self.env.now

    def run(self, sms) -> None:
        """Time the launch on `sms`: deal the initial wave, run every SM's process until all
        the blocks are done, and raise an error one of them raised as itself (`_sm_process`)."""
        for _ in range(self.blocks_per_sm):             # initial wave: round-robin over the SMs
            for sm in sms:
                self._dispatch(sm, 0.0)
        self._failure = None
        for sm in sms:
            self.env.process(self._sm_process(sm))
        self.env.run()
        if self._failure is not None:
            raise self._failure

    def cta_done(self, sm, block: int, t: float) -> None:
        """An SM's block finished at `t`: count it and give that SM the next block."""
        self.done_blocks += 1
        if self.progress is not None:
            self.progress(self.done_blocks, self.total_blocks)
        self._dispatch(sm, t)

    def _dispatch(self, sm, t: float) -> bool:
        """Start the next block on `sm` at `t`, or as soon after as the SM can accept one
        (one every `dispatch_cycles`); wake the SM if it sleeps without blocks."""
        if self.next_block >= self.total_blocks:
            return False
        b = self.order[self.next_block]
        self.next_block += 1
        if b in self.runs and b not in self.trace.ready:
            self.trace.seek(b, self.runs[b])        # a sampled run of blocks further into the grid
        t = max(t, self._next_dispatch.get(sm.id, 0.0))
        self._next_dispatch[sm.id] = t + self.dispatch_cycles
        sm.add_cta(b, self.trace.block(b), t)
        ev = self._wake.pop(sm.id, None)
        if ev is not None and not ev.triggered:
            ev.succeed()
        return True

    def _sm_process(self, sm):
        """One SM's SimPy process. An error raised while it runs (a kernel error of a block
        loaded on the way, the caller's time limit) is kept and the simulation stopped: SimPy
        would re-raise a copy built as `type(e)(*e.args)`, which gpusim's errors with keyword
        fields do not survive; `run` raises the error itself."""
        try:
            yield from self._sm_steps(sm)
        except Exception as e:
            self._failure = e
            raise simpy.core.StopSimulation(None) from None

    def _sm_steps(self, sm):
        env = self.env
        q = self.quantum_cycles
        beat, beats = self.heartbeat, 0
        while True:
            if not sm.has_work():
                if self.next_block >= self.total_blocks:
                    return
                ev = env.event()
                self._wake[sm.id] = ev
                yield ev
                continue
            until = env.now + q
            sm.advance(until)
            beats += 1
            if beat is not None and beats % HEARTBEAT_QUANTA == 0:
                beat(self.done_blocks, self.total_blocks)
            if not sm.has_work():
                continue
            nt = sm.next_time()
            if nt == math.inf:                  # resident warps, none able to issue ever again
                raise TimingDeadlock(_deadlock_message(sm, env.now))
            target = max(until, math.floor(nt / q) * q)
            yield env.timeout(target - env.now)


def _deadlock_message(sm, t: float) -> str:
    """Which warps wait, at which SASS instruction, for the deadlock error."""
    waits = sm.waiting()
    shown = ", ".join(f"block {b} at SASS instruction {i} ({r})" for b, i, r in waits[:6])
    return (f"the timing model cannot go on at cycle {t:.0f} on SM {sm.id}: no resident warp can issue again "
            f"({shown}{', ...' if len(waits) > 6 else ''}); a defect of gpusim's timing, not of the kernel "
            "(its functional run finished): please report it with the kernel")
