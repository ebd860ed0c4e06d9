"""The warp scheduler of one batch of the functional core: which basic block runs next, and
for which warps (`next_group`; the order and why: `executor.py`'s module docstring).

Until a batch has run `FAIR_AFTER_STEPS` steps it picks the lowest-numbered block any
runnable warp waits at (warps on one path stay in one group). After that it is fair: a warp
runnable for `STARVE_STEPS` steps without running goes next; warps in a loop the watchdog
saw a warp repeat in (`waiting_pc`, set by `watchdog.py`) go after the others; every
`STARVE_STEPS` steps, and whenever only such waiting warps can run, the blocks all of whose
unfinished warps wait at a barrier are released at once. When no warp can run, the
collectives release a barrier (or report why none can be).

Its own state: the steps each warp was runnable without running, the loops warps wait in,
and when it last released barriers; it reads the executor's stacks and barrier waits.
"""
from __future__ import annotations

import numpy as np

from gpusim.functional import barrier_kernels
from gpusim.functional.watchdog import OBSERVE_AFTER_STEPS

FAIR_AFTER_STEPS = OBSERVE_AFTER_STEPS     # steps of a batch before the scheduler is fair (module doc)
STARVE_STEPS = 256                         # a warp runnable this many steps without running goes next


class WarpScheduler:
    """`x`: the batch's executor; `nblocks`: its kernel's basic blocks."""

    def __init__(self, x, nblocks: int):
        self.x = x
        self.waiting_pc = np.zeros(nblocks + 1, bool)   # blocks of loops warps were seen repeating in
        self.waited = np.zeros(x.nwarps, np.int64)      # steps each warp was runnable without running
        self._released_at = 0
        self._blocked = np.empty(x.nwarps, bool)         # scratch of `lowest_or_release`
        self._key = np.empty(x.nctas, np.int64)
        self._simple = None

    def _simple_release(self) -> bool:
        """Whether nothing but CTA barriers is in play (`Collectives.release`'s compiled case)."""
        x = self.x
        if self._simple is None:
            self._simple = x.cluster_waits is None and x.grid_barriers is None and not x.collectives._reductions()
        return self._simple and x.san is None

    def next_group(self) -> tuple[int, np.ndarray] | None:
        """The scheduler's choice (module docstring): a block and every runnable warp waiting at it."""
        x = self.x
        while True:
            if x.steps < FAIR_AFTER_STEPS:               # the lowest block (one compiled pass over the stacks,
                s = x.stacks                             # releasing CTA barriers where no warp can run)
                out = np.empty(len(s.depth), np.int64)
                b, k = barrier_kernels.lowest_or_release(s.depth, s.pc, s.mask, x.arrived, out, self._blocked,
                                                         x.wait_at, x.exit_only, x.launched, s.exited, x.wpc,
                                                         self._key, self._simple_release())
                if k > 0:
                    g = out[:k]
                    self.waited[g] = 0
                    return int(b), g
                if k == 0:
                    return None
            else:
                run = x.runnable()
                if run.any():
                    top = x.stacks.top_pc()
                    b = self._fair(run, top)
                    if b is None:                        # released a block's barrier: look again
                        continue
                    g = np.flatnonzero(run & (top == b))
                    self.waited[g] = 0
                    return b, g
            blocked = x.blocked()
            if not blocked.any():
                return None
            x.collectives.release(blocked, x.wait_at, x.arrived)

    def _fair(self, run: np.ndarray, top: np.ndarray) -> int | None:
        """The lowest block of the warps not waiting in a repeating loop, unless a runnable
        warp has starved for STARVE_STEPS (its block then); None after releasing barriers."""
        x = self.x
        self.waited[run] += 1
        waiting = run & self.waiting_pc[top]
        busy = run & ~waiting
        if (not busy.any() or x.steps - self._released_at >= STARVE_STEPS) and self._release_ready():
            return None
        starved = run & (self.waited > STARVE_STEPS)
        if starved.any():
            return int(top[int(np.argmax(np.where(starved, self.waited, -1)))])
        pick = busy if busy.any() else run
        return int(np.where(pick, top, np.iinfo(np.int32).max).min())

    def _release_ready(self) -> bool:
        """Release the barrier of every block whose unfinished warps all wait at it with all their
        live threads (blocks at a grid barrier wait for the whole grid); whether any was."""
        x = self.x
        self._released_at = x.steps
        blocked = x.blocked()
        if not blocked.any():
            return False
        w = np.flatnonzero(blocked)
        if x.grid_barriers is not None:
            w = w[~np.isin(x.wait_at[w], x.grid_barriers)]
        if x.cluster_waits is not None:                  # released by their cluster's phase (cluster.py)
            w = w[~np.isin(x.wait_at[w], x.cluster_waits)]
            if not len(w):
                return False
        whole = (x.arrived[w] | x.stacks.lanes_at(w, x.exit_only)) == x.stacks.live_mask(w, x.launched)
        cta = w // x.wpc
        alive = np.bincount(np.flatnonzero(x.stacks.depth > 0) // x.wpc, minlength=x.nctas)
        ready = np.bincount(cta[whole], minlength=x.nctas)
        first = np.full(x.nctas, -1, np.int64)
        first[cta[::-1]] = x.wait_at[w][::-1]
        one = np.ones(x.nctas, bool)
        one[cta[x.wait_at[w] != first[cta]]] = False     # one barrier per block (else: the full release's error)
        done = (ready == alive) & (alive > 0) & one
        sel = w[whole & done[cta]]
        if not len(sel):
            return False
        mask = np.zeros(x.nwarps, bool)
        mask[sel] = True
        x.collectives.release(mask, x.wait_at, x.arrived)
        return True
