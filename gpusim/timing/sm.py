"""One streaming multiprocessor: sub-partition warp schedulers, register scoreboard,
pipelines, the shared-memory data path, CTA barriers, and its L1.

Resident warps are split over the SM's sub-partitions (SMSPs) by warp index. Each
cycle, each SMSP's scheduler picks one warp (policy from `gpusim.timing.policies`)
whose next instruction's source registers are ready (scoreboard), whose pipeline
can accept it (issue interval per op class) and which is not waiting at a barrier,
and issues it. Results become ready after the pipeline latency (fixed-latency
ops), after the shared-memory data path serves its wavefronts (one per cycle, a
conflicted access takes one per conflict), or when the L1 / L2 / HBM path returns
the sectors (global, local, atomics). Every cycle a resident warp does not issue is
attributed to one Nsight Compute warp state on the instruction it waits to issue:
`long_scoreboard` (L1TEX result), `short_scoreboard` (MIO: shared memory, shuffles),
`wait` (fixed latency), `barrier`, `math_pipe_throttle` / `mio_throttle` /
`lg_throttle` (its pipeline busy), `not_selected` (another warp issued),
and `selected` for the issue cycle.

For speed the SM advances with its own event loop (next cycle at which any SMSP can
issue), not one SimPy event per instruction; the block scheduler (`block_scheduler.py`,
the one SimPy part) runs each SM as a SimPy process in quanta so shared memory-system
units see requests in time order up to one quantum of skew. The loop itself is compiled
(`issue_loop.py`, on this SM's arrays, shared memory and the caches included); it returns
here for what needs Python objects:
a global / local / atomic access's ready time (`_memory`: the L1 / L2 / HBM model),
loop-sampling markers and a warp's last visit (`_next_visit`), barriers and block
completion (its `Residency` unit, `residency.py`), a Python warp-scheduling policy.

Warps issue the SASS that ptxas made of the PTX they executed (`issue_stream.py`,
`frontend/sass/mapping.py`), fetched through the instruction and constant caches
(`fetch.py`). The SM owns its units: the residency of blocks and warps with CTA barriers
and block completion (`residency.py`), the front end (`fetch.py`), the TMA unit (`tma.py`)
and the mbarriers (`mbarrier.py`); it seats each resident warp in a row of its arrays.

Does not model: register bank conflicts and operand collectors, dual issue,
warp-level divergence costs beyond the executed instruction stream (DEVIATIONS.md).

Sources: Volta/Ampere/Hopper whitepapers (4 SMSPs per SM, 1 warp instruction per
SMSP per cycle); Nsight Compute "Kernel Profiling Guide", warp scheduler states;
Jia et al. 2018 and Luo et al. 2024 microbenchmarks (latencies, via the presets).
"""
from __future__ import annotations

import math
import numpy as np

from gpusim.timing import issue_loop as L
from gpusim.timing import policies
from gpusim.timing.fetch import FrontEnd
from gpusim.timing.issue_stream import LOOP
from gpusim.timing.mbarrier import MbarrierUnit
from gpusim.timing.payloads import CpAsyncPayload, MbarrierAccess
from gpusim.timing.residency import CTA, Residency, Warp
from gpusim.timing.static import PIPE_NAMES, SHARED
from gpusim.timing.tma import CopyPayload, TMAUnit
from gpusim.timing.visit_pool import VisitPool
from isa.memory_map import CONST_WINDOW_BASE

INF = math.inf
STALL_REASONS = L.STALL_REASONS
POLICY_CODES = {"gto": L.P_GTO, "oldest": L.P_OLDEST}      # compiled; any other policy is called from Python


class SM:
    """See module docstring. `program`: the kernel's `static.IssueProgram`; `stats.stall`:
    an array [STALL_REASONS, SASS instruction]; `on_cta_done(sm, block, t)` is called when a
    block finishes."""

    def __init__(self, sm_id: int, spec, program, l1, stats, on_cta_done):
        self.id = sm_id
        self.spec = spec
        sm = spec.sm
        self.table = table = program.table
        self._flat = table.flat                    # row -> StaticInstr
        self.l1 = l1
        self.tma = TMAUnit(spec, sm_id, getattr(l1, "lower", None))
        self.mbarriers = MbarrierUnit(self._mbarrier_release)
        self.stats = stats
        self.on_cta_done = on_cta_done
        self.nsp = nsp = sm.sub_partitions
        self.pick = policies.get(sm.warp_scheduler)
        self.locate = None                          # sampled mode, shared footprint: locate(block) per access
        self.merge = None                           # the GPC read merging (memory/gpc_merge.py): told each access's block
        self.front = FrontEnd(spec, table)
        self.residency = Residency(sm_id, sm)
        cap = max(sm.max_warps_per_sm, 1)
        self._warps: list = [None] * cap           # array row -> Warp
        self._free_rows = list(range(cap - 1, -1, -1))
        self._departed: list = [None] * nsp        # a sub-partition's last issued warp, gone (for Python policies)
        self.WF = np.zeros((cap, L.WF_COLS))
        self.WI = np.zeros((cap, L.WI_COLS), dtype=np.int64)
        self.SPF = np.zeros((nsp, L.S_PIPE + len(PIPE_NAMES)))
        self.SPF[:, L.S_NEXT] = INF                # no warp of it can issue before this cycle, unless the SM's
        #                                            clock has passed it (a lower bound of its warps' candidates)
        self.SPI = np.zeros((nsp, L.S_W + cap), dtype=np.int64)
        self.SPI[:, L.S_LAST] = -1
        self.F = np.zeros(L.F_INTERVAL + len(PIPE_NAMES) + len(table.intervals))
        self.F[L.F_WFSTEP] = max(sm.shared_wavefront_cycles, 1)
        self.F[L.F_SHLAT] = sm.shared_latency_cycles
        self.F[L.F_WFCYC] = sm.shared_wavefront_latency_cycles
        self.cas_round_cycles = sm.shared_cas_round_cycles
        self.barrier_behind_shared = sm.barrier_behind_shared
        # the tensor pipe has no interval of its own: each instruction brings one (tensor_pipe.py)
        self.F[L.F_INTERVAL:] = [getattr(sm.pipes, p).issue_interval_cycles if p != "tensor" else 0.0
                                 for p in PIPE_NAMES] + list(table.intervals)
        self.I = np.zeros(L.I_SIZE, dtype=np.int64)
        self.I[L.I_NSP] = nsp
        self.I[L.I_POLICY] = POLICY_CODES.get(sm.warp_scheduler, L.P_PYTHON)
        self.BUF = np.zeros(cap, dtype=np.int64)
        self.visits = VisitPool(table.seg_shared)    # its warps' visits and their shared wavefronts (VP, SHP)
        self._pack()
        self.loop_start = INF                      # loop sampling: first LOOP marker, last SKIP marker,
        self.loop_end = -INF                       # SASS instructions kept and left out (issue_stream.py)
        self.loop_kept = 0.0
        self.loop_skipped = 0.0
        self.loop_mark = (-1.0, 0)                 # (time, instructions issued) at the latest warmed-up LOOP marker
        self.loop_open = False                     # a window from that mark awaits its first SKIP
        self.loop_windows: list = []               # each window's (instructions issued, cycles): sampling/loop_rate.py

    def _pack(self) -> None:
        """The arrays `issue_loop.run` takes (again after one of them was replaced)."""
        self._arrays = (self.table.ti, self.table.tx, self.table.ts, self.WF, self.WI, self.SPF, self.SPI, self.F,
                        self.I, self.front.icache.a, self.front.ccache.a, self.stats.stall, self.BUF, self.visits.VP,
                        self.visits.SHP)

    @property
    def t(self) -> float:
        """The SM's clock: every cycle before it is done."""
        return self.F.item(L.F_T)

    @property
    def shared_wavefronts(self) -> int:
        """Shared-memory wavefronts served."""
        return self.I.item(L.I_WAVEFRONTS)

    @property
    def issued(self) -> int:
        """Warp instructions issued (all sub-partitions)."""
        return int(self.SPI[:, L.S_ISSUED].sum())

    @property
    def warp_cycles(self) -> float:
        """Integral of resident warps over time (`Residency`)."""
        return self.residency.warp_cycles

    @property
    def active_cycles(self) -> float:
        """Cycles with at least one resident warp (`Residency`)."""
        return self.residency.active_cycles

    def has_work(self) -> bool:
        """Whether a block is resident."""
        return self.residency.has_work()

    # ------------------------------------------------------------------ residency
    def add_cta(self, block: int, streams, t0: float) -> None:
        """Block `block` arrives at `t0` (not before the SM's clock) with its warps' streams:
        admitted by the residency unit, each warp seated in a row of the arrays."""
        t0 = max(t0, self.t)
        cta = self.residency.admit(block, streams, t0)
        for w in cta.warps:
            self._seat(w, t0)
        for w in list(cta.warps):
            if w.vi >= len(w.stream.visits):
                self._warp_done(w, t0)

    def _seat(self, w: Warp, t0: float) -> None:
        """`w` takes a free row of the arrays, its visits go into the pools and it enters its
        first segment, its first instruction held until `t0` (`dispatch_stall`)."""
        if not self._free_rows:
            self._grow()
        k = self._free_rows.pop()
        w.k, w.f, w.i, w.flat = k, self.WF[k], self.WI[k], self._flat
        pool = self.visits
        v0, vn = pool.load(w, self._warps, self.WI)   # may compact the pools: only over the warps already in rows
        if pool.VP is not self._arrays[13] or pool.SHP is not self._arrays[14]:
            self._pack()                  # the compaction replaced them
        self._warps[k] = w                # (row k still holds the visit range of its last warp)
        L.add_warp(k, w.sp, float(t0), v0, vn, self.WF, self.WI, self.SPF, self.SPI)
        self._next_visit(w, t0)

    def _grow(self) -> None:
        """Twice the warp rows (more resident warps than `max_warps_per_sm`)."""
        cap = len(self._warps)
        self.WF = np.concatenate([self.WF, np.zeros_like(self.WF)])
        self.WI = np.concatenate([self.WI, np.zeros_like(self.WI)])
        self.SPI = np.concatenate([self.SPI, np.zeros((self.nsp, cap), dtype=np.int64)], axis=1)
        self.BUF = np.zeros(2 * cap, dtype=np.int64)
        self._warps += [None] * cap
        self._free_rows = list(range(2 * cap - 1, cap - 1, -1)) + self._free_rows
        for k, w in enumerate(self._warps):
            if w is not None:
                w.f, w.i = self.WF[k], self.WI[k]
        self._pack()

    def _arrive(self, w: Warp, t: float) -> None:
        """`w` issued a CTA barrier at `t`; if that leaves its block's other warps all waiting on
        mbarriers, their phases are completed (mbarrier.py: stuck blocks). `sm.barrier_behind_shared`:
        the arrival reaches the barrier unit once its sub-partition's earlier shared accesses have had
        the path (`S_SHFREE`, its queue), which then waits until the unit has taken the arrival."""
        if self.barrier_behind_shared:
            q = self.SPF.item(w.sp, L.S_SHFREE)
            if q > t:
                t = q
        done = self.residency.arrive(w, t)
        if self.barrier_behind_shared and self.residency.arrivals_free > self.SPF.item(w.sp, L.S_SHFREE):
            self.SPF[w.sp, L.S_SHFREE] = self.residency.arrivals_free
        if done:
            self._release(w.cta, t)
        else:
            self.mbarriers.warp_waits(w.cta, t)

    def _release(self, cta: CTA, t: float) -> None:
        """The barrier of `cta` completed at `t`: its warps are prepared for their release."""
        for w in self.residency.release(cta, t):
            self._prepare(w, w.last_issue + 1)

    def _warp_done(self, w: Warp, t: float) -> None:
        """`w` finished at `t`: its row is freed (the warp keeps a copy of its final row: its block's
        mbarrier unit asks whether it is done after the row has gone to a later warp); its block may
        pass its barrier, or be done."""
        k = w.k
        if self.SPI.item(w.sp, L.S_LAST) == k:     # policies may still ask for it (lrr: its slot)
            self._departed[w.sp] = w
        L.remove_warp(k, w.sp, self.SPI)
        self._warps[k] = None
        self._free_rows.append(k)
        w.f, w.i = w.f.copy(), w.i.copy()          # its final state, its own: the row goes to a later warp
        cta = w.cta
        if self.residency.leave(w):
            self._release(cta, t)
        self.mbarriers.warp_waits(cta, t)
        if cta.live == 0:
            self.mbarriers.block_done(cta.block)
            self.residency.remove(cta, t)
            self.stats.block_done(cta.block, cta.start, t)
            self.on_cta_done(self, cta.block, t)

    # ------------------------------------------------------------------ stepping
    def waiting(self) -> list[tuple[int, int, str]]:
        """(block, SASS instruction, Nsight warp state) of each resident warp: what it waits at."""
        return sorted({(w.cta.block, w.cur.index, w.reason) for w in self._warps if w is not None})

    def next_time(self) -> float:
        """The earliest cycle at which one of its warps may issue (exact: the engine wakes
        the SM at the quantum holding it)."""
        return L.next_time(self.WF, self.SPI, self.nsp)

    def advance(self, until: float) -> None:
        """Issue everything that can issue before cycle `until`: cycle after cycle at which
        a warp may issue, each sub-partition (in order) whose `next` has come issues one of
        its ready warps (the policy's pick; warps whose pipe is busy wait for it). The
        compiled loop runs until something needs Python (module docstring)."""
        run = L.run
        until = float(until)
        F, I, warps = self.F, self.I, self._warps
        while True:
            ev = run(until, *self._arrays)
            if ev == L.EV_DONE:
                return
            w = warps[I.item(L.I_EVW)] if ev != L.EV_PICK else None
            t = F.item(L.F_TCUR)
            if ev == L.EV_MEM:
                s = self._flat[I.item(L.I_EVJ)]
                moved = self.l1.xbar_bytes
                F[L.F_PENDING] = self._memory(s, w, t, F.item(L.F_PENDING))
                moved = self.l1.xbar_bytes - moved
                if moved:                          # the block's L2 traffic (sampling/phases.py)
                    self.stats.block_traffic(w.cta.block, moved)
                if s.const_load and self.front.ccache.a is not self._arrays[10]:
                    self._pack()
            elif ev == L.EV_VISIT:
                self._next_visit(w, t + 1)
                if w.vi >= len(w.stream.visits):
                    self._warp_done(w, t + 1)
                    I[L.I_WDONE] = 1
            elif ev == L.EV_BARRIER:
                self._arrive(w, t)                 # may release the block's warps, which prepares them
            elif ev == L.EV_PICK:
                k = I.item(L.I_K)
                ready = [warps[x] for x in self.BUF[:I.item(L.I_NREADY)].tolist()]
                last = self.SPI.item(k, L.S_LAST)
                I[L.I_EVW] = self.pick(ready, warps[last] if last >= 0 else
                                       (self._departed[k] if last == -2 else None)).k
            else:                                  # EV_ISSUE
                self._before_issue(I.item(L.I_K), w, t)

    def _before_issue(self, sp: int, w: Warp, t: float) -> None:
        """Called before each issue when `I[I_HOOK]` is set (record.RecordingSM)."""

    def _cas_loop(self, t: float, rounds: int) -> float:
        """A shared compare-and-swap loop (LDS, FADD, ATOMS.CAST.SPIN, a branch back) of
        `rounds` rounds (access_payloads._cas_rounds) issued once: each round an LDS and an ATOMS wavefront
        (the counter) holding the shared data path `shared_cas_round_cycles`, its result after
        the last round's."""
        end = L.path_book(self.F, t, rounds * self.cas_round_cycles)
        self.I[L.I_WAVEFRONTS] += 2 * rounds
        return end + self.F[L.F_SHLAT]

    def _memory(self, s, w: Warp, t: float, fixed_ready: float) -> float:
        mem = w.mem
        payload = mem.get(s.index) if mem else None
        if payload is None:
            return fixed_ready                      # no active lane accessed memory
        if self.merge is not None:                  # whose reads may merge: the block's wave decides
            self.merge.block = w.cta.block
        if s.const_load:                            # indexed constant load: through the constant cache
            cc = self.front.ccache
            done = fixed_ready
            for line in set(((int(x) << 5) - CONST_WINDOW_BASE + (3 << 32)) >> cc.line_shift
                            for x in payload.tolist()):
                done = max(done, cc.ready(t, line) + fixed_ready - t)
            return done
        if s.async_copy:                            # LDGSTS: when its bytes are in shared memory (its group's part)
            tensor = self.spec.tensor
            if isinstance(payload, CpAsyncPayload):     # its fill's wavefronts on the shared-memory data path
                ready = self.l1.copy_in(t, payload.sectors, allocate=not s.bypass_l1, repeated=payload.repeated,
                                        requests=payload.wavefronts) + tensor.cp_async_fill_cycles
                if payload.wavefronts and tensor.cp_async_fill_wavefront_cycles > 0:
                    done = L.shared_fill(self.F, self.I, float(t), payload.wavefronts,
                                         tensor.cp_async_fill_wavefront_cycles)
                    ready = max(ready, done)
                return ready
            return self.l1.copy_in(t, payload, allocate=not s.bypass_l1) + tensor.cp_async_fill_cycles
        if s.mbarrier:
            if isinstance(payload, MbarrierAccess):
                return self.mbarriers.op(w, s, t, payload, fixed_ready - t)
            return fixed_ready
        if s.tma:                                   # the SM's TMA unit; its bytes complete an mbarrier, if named
            cp = payload if isinstance(payload, CopyPayload) else \
                CopyPayload(None, payload) if isinstance(payload, MbarrierAccess) else CopyPayload(payload)
            done = self.tma.copy(t, cp.sectors, store=isinstance(cp.sectors, tuple))
            if cp.mbarrier is not None:
                self.mbarriers.complete_tx(w, cp.mbarrier, done)
            return fixed_ready
        if s.result == SHARED:
            if s.cas_loop and isinstance(payload, int):
                return self._cas_loop(float(t), payload)
            return L.shared_access(self.F, self.I, self.SPF, w.sp, float(t), payload if isinstance(payload, int) else 1)
        if self.locate is not None:                 # the L2 asks where in the grid this block is (sampling/warming.py)
            self.locate(w.cta.block)
        if s.is_atomic:
            sectors, passes = payload
            if s.aggregated:                        # the leader lane's one combined operation: one pass a sector
                passes = None
            return self.l1.atomic(t, sectors, not s.dsts, passes, s.float_atomic)
        if s.is_local and w.local_delta:            # its SM slot's frame
            d = w.local_delta
            payload = (payload[0] + d,) + tuple(payload[1:]) if s.is_store else payload + d
        if s.is_store:
            self.l1.store(t, payload[0], s.is_local, byte_masks=payload[1], send=payload[2] if len(payload) > 2 else None)
            return fixed_ready
        return self.l1.load(t, payload, s.is_local, bypass=s.bypass_l1)

    def _mbarrier_release(self, w: Warp, slots, t: float) -> None:
        """The phase warp `w` waits for completed at `t`: its wait's predicate is ready then."""
        for slot in slots:
            w.f[slot] = t
        if w.vi < len(w.stream.visits) and not w.at_barrier:
            w.ready_at = t                          # its hold was the wait (prepare kept the unknown time)
            w.reason = "long_scoreboard"
            self._prepare(w, w.last_issue + 1)

    def _prepare(self, w: Warp, t_min: float) -> None:
        """When w's next instruction may issue as far as its own state goes: after the
        previous issue, after an external hold (barrier release, dispatch) and after its
        source and destination registers are ready. Records the binding reason."""
        L.prepare(w.k, float(t_min), self.table.ti, self.table.tx, self.WF, self.WI, self.SPF,
                  self.front.icache.a, self.front.ccache.a)

    def _next_visit(self, w: Warp, t: float) -> None:
        """w moves to its next visit: loop-sampling markers are noted on the way, a segment
        entered (issue_loop.enter); none left: w.vi == len(its visits)."""
        wi = w.i
        v0, vn = wi.item(L.W_V0), wi.item(L.W_VN)
        v = wi.item(L.W_V) + 1
        visits = w.stream.visits
        while v < vn and visits[v - v0][0] < 0:    # loop-sampling markers (issue_stream.py)
            kind, counts, _ = visits[v - v0]
            issued = self.issued
            if kind == LOOP:
                self.loop_start = min(self.loop_start, t)
                if counts or self.loop_mark[0] < 0:  # past the warm-up: the latest such mark opens a window
                    self.loop_mark = (t, issued)
                    self.loop_open = True
            else:                               # SKIP: iterations left out (the engine stretches the loop time)
                if self.loop_open and t > self.loop_mark[0] + 64:
                    # a window of the loop's steady state: latest warmed-up entry to the first SKIP
                    # after it; the rate is over every window of the run, not the first wave's
                    # alone (its blocks start together and wait on memory in step)
                    self.loop_windows.append((issued - self.loop_mark[1], t - self.loop_mark[0]))
                    self.loop_open = False
                self.loop_end = max(self.loop_end, t)
                self.loop_kept += counts[0]
                self.loop_skipped += counts[1]
            v += 1
        wi[L.W_V] = v
        if v < vn:
            L.enter(w.k, v, self.table.ts, self.WI, self.visits.VP)
            if v == v0:
                self._prepare(w, t)
