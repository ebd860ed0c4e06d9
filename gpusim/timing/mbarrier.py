"""The mbarriers of one SM's resident blocks as the timing model sees them: each warp's
`SYNCS` instruction (what ptxas makes of `mbarrier.*`) carries the operation the functional
core did (`payloads.MbarrierAccess`), and this unit replays it in the SM's time.

An mbarrier (per block and shared-memory offset) counts the arrivals still missing from its
current phase and the transaction bytes still expected (`expect_tx` adds, a bulk copy's
`complete_tx` subtracts when its bytes land, `tma.py`). The phase completes once both are
zero, at the latest of its last arrival and its last bytes' landing; then the pending count
starts again from the `init` count and the phase parity flips.
A wait (`try_wait.parity P` / `test_wait`, `SYNCS.PHASECHK`) writes its predicate when the phase
of parity P has completed: at once if it has, or when it does; the warp stalls on that
predicate as on a long-scoreboard result (its retry loop ptxas compiles is issued as the
functional core ran it, each retry passing at once). The instructions after the wait that do
not read the predicate go on.

If every live warp of a block waits on an mbarrier (or at a CTA barrier) with no copy in
flight, nothing the model knows can complete the phase (checked when a warp starts such a
wait, stops at the CTA barrier or finishes): it is completed then (counted in
`forced`, reported as `gpusim__mbarrier_forced_completions.sum`) rather than leave the block
hanging. A correct kernel needs it only where loop sampling (issue_stream.py) left out loop
iterations of some warps whose arrivals another warp's wait counts on: a producer warp of a
TMA pipeline waiting for its consumers' arrivals while they, their loops shortened, wait at
the block's barrier after it (cuda_tma_wgmma at 8192^3: without the check at the barrier
the block never finished).

An `init` keeps the waits already registered on the barrier: the SASS walk may issue a wait
before its block's `init` when the SASS map puts the barrier between them (`__syncthreads()`
after the init) in the block before the init's (ptxas 13.0's layout of
programs/hopper_kernels/tma_wgmma_gemm with three stages: the other warps passed the barrier,
waited, and the init dropped their waits, so the launch never ended); the waits then end with the
init's first phase.

Not modelled: the try_wait suspend-time hint, cluster-scope (remote) arrivals (refused by the
functional core), `inval` (forgets the object).

Sources: PTX ISA 9.0, "mbarrier" (phases, pending arrival count, tx-count, phase completion,
try_wait.parity); the SASS of mbarrier operations on sm_90a (`SYNCS.EXCH.64` init,
`SYNCS.ARRIVE.TRANS64[.A1T0]` arrive / expect_tx, `SYNCS.PHASECHK.TRANS64.TRYWAIT` wait).
"""
from __future__ import annotations

import math

INF = math.inf


class _Barrier:
    __slots__ = ("expected", "pending", "tx", "last", "phase", "completed_at", "waiters")

    def __init__(self, expected: int = 0):
        self.expected = expected
        self.pending = expected
        self.tx = 0
        self.last = -INF                  # latest arrival or bytes landing of the current phase
        self.phase = 0                    # phases completed
        self.completed_at = -INF          # when the last one completed
        self.waiters: list = []           # (warp, register slots) waiting for the current phase


class MbarrierUnit:
    """`op(warp, instr, t, access)` -> when the instruction's result is ready (INF: the warp
    waits for a phase not complete yet; `sm.SM` is told when it is, through `release`)."""

    def __init__(self, release):
        self.release = release            # release(warp, slots, t): the SM writes the wait's predicate
        self.bars: dict = {}              # (block, offset) -> _Barrier
        self.forced = 0

    def op(self, w, s, t: float, a, latency: float) -> float:
        key = (w.cta.block, a.address)
        b = self.bars.get(key)
        if b is None:
            b = self.bars[key] = _Barrier()
        done = t + latency
        what = a.what
        if what == "init":
            fresh = self.bars[key] = _Barrier(a.count)
            fresh.waiters = b.waiters                     # waits the walk issued before the init stay waits
            return done
        if what == "inval":
            self.bars.pop(key, None)
            return done
        if what in ("try_wait", "test_wait"):
            if (b.phase & 1) != a.parity:                 # the phase of this parity has completed
                return max(done, b.completed_at)
            if what == "test_wait":                       # does not wait: the functional retry loop does
                return done
            b.waiters.append((w, s.dsts))
            phase = b.phase
            self._check_stuck(w.cta, t, w)
            return max(done, b.completed_at) if b.phase != phase else INF
        if what in ("expect_tx", "arrive_expect_tx"):
            b.tx += a.tx
        if what in ("arrive", "arrive_expect_tx"):
            b.pending -= a.count
            b.last = max(b.last, t)
        self._complete_if_due(b)
        return done

    def complete_tx(self, w, a, landed: float) -> None:
        """A bulk copy's `a.tx` bytes land in `w`'s block's mbarrier at `a.address` at `landed`."""
        b = self.bars.get((w.cta.block, a.address))
        if b is None:
            b = self.bars[(w.cta.block, a.address)] = _Barrier()
        b.tx -= a.tx
        b.last = max(b.last, landed)
        self._complete_if_due(b)

    def _complete_if_due(self, b: _Barrier) -> None:
        if b.pending <= 0 and b.tx <= 0 and (b.expected or b.waiters or b.pending < 0):
            self._complete(b, b.last)

    def _complete(self, b: _Barrier, t: float, issuing=None) -> None:
        b.phase += 1
        b.completed_at = t
        b.pending, b.tx, b.last = b.expected, 0, -INF
        waiters, b.waiters = b.waiters, []
        for w, slots in waiters:
            if w is not issuing:                          # the warp being issued gets it as its result
                self.release(w, slots, t)

    def _check_stuck(self, cta, t: float, issuing=None) -> None:
        """Complete the phases waited on when every live warp of `cta` waits (module docstring)."""
        waiting = {id(w) for b in self.bars.values() for w, _ in b.waiters if w.cta is cta}
        live = [w for w in cta.warps if w.vi < len(w.stream.visits)]
        if all(id(w) in waiting or w.at_barrier for w in live):
            for (block, _), b in list(self.bars.items()):
                if block == cta.block and b.waiters:
                    self.forced += 1
                    self._complete(b, max(t, b.last), issuing)

    def warp_waits(self, cta, t: float) -> None:
        """A warp of `cta` finished or stopped at its CTA barrier: every live warp may now be
        waiting, on an mbarrier or at that barrier."""
        if cta.live and any(b.waiters for (block, _), b in self.bars.items() if block == cta.block):
            self._check_stuck(cta, t)

    def block_done(self, block: int) -> None:
        for key in [k for k in self.bars if k[0] == block]:
            del self.bars[key]
