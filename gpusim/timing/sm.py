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
issue), not one SimPy event per instruction; the SimPy engine (`engine.py`) runs the
SMs in quanta so shared memory-system units see requests in time order up to one
quantum of skew.

Warps issue the SASS that ptxas made of the PTX they executed (`issue_stream.py`,
`frontend/sass/mapping.py`), fetched through the instruction and constant caches
(`fetch.py`). Residency, barriers and block completion: `residency.py`.

Does not model: register bank conflicts and operand collectors, dual issue,
warp-level divergence costs beyond the executed instruction stream (DEVIATIONS.md).

Sources: Volta/Ampere/Hopper whitepapers (4 SMSPs per SM, 1 warp instruction per
SMSP per cycle); Nsight Compute "Kernel Profiling Guide", warp scheduler states;
Jia et al. 2018 and Luo et al. 2024 microbenchmarks (latencies, via the presets).
"""
from __future__ import annotations

import math


from gpusim.timing import policies
from gpusim.timing.fetch import FrontEnd
from gpusim.timing.issue_stream import LOOP
from gpusim.timing.residency import Residency, Warp
from gpusim.timing.static import DEP_STALL, FIXED, GLOBAL, SHARED

PIPE_NAMES = ("alu", "fmaheavy", "fmalite", "fp16", "fp64", "xu", "lsu", "adu", "cbu", "uniform", "tensor", "tex")
from isa.memory_map import CONST_WINDOW_BASE

INF = math.inf
THROTTLE = {FIXED: "math_pipe_throttle", SHARED: "mio_throttle", GLOBAL: "lg_throttle"}   # a ready warp's pipe busy
STALL_REASONS = ("selected", "not_selected", "wait", "short_scoreboard", "long_scoreboard", "barrier",
                 "math_pipe_throttle", "mio_throttle", "lg_throttle", "dispatch_stall", "no_instructions", "imc_miss")


class SubPartition:
    """`next`: no warp of it can issue before this cycle unless the SM's clock has passed it (a
    lower bound of its warps' `cand`, or a cycle at which one of them was ready already):
    `SM.advance` looks only at sub-partitions whose `next` has come."""
    __slots__ = ("warps", "pipe_free", "last", "issued", "next")

    def __init__(self):
        self.warps: list[Warp] = []
        self.pipe_free: dict[str, float] = dict.fromkeys(PIPE_NAMES, 0.0)   # pipe -> free from cycle
        self.last = None
        self.issued = 0
        self.next = INF


class SM(Residency):
    """See module docstring. `on_cta_done(sm, block, t)` is called when a block finishes."""

    def __init__(self, sm_id: int, spec, block_static, l1, stats, on_cta_done):
        self.id = sm_id
        self.spec = spec
        sm = spec.sm
        self.block_static = block_static           # block index -> tuple of StaticInstr
        self.l1 = l1
        self.stats = stats
        self._stall = stats.stall
        self._selected = stats.stall["selected"]
        self.on_cta_done = on_cta_done
        self.sps = [SubPartition() for _ in range(sm.sub_partitions)]
        self.pick = policies.get(sm.warp_scheduler)
        self._policy = sm.warp_scheduler
        self.interval = {p: sm.pipes.of(p).issue_interval_cycles for p in PIPE_NAMES}
        self.shared_free = 0.0
        self._wf_cycles = sm.shared_wavefront_cycles
        self._wf_step = max(sm.shared_wavefront_cycles, 1)
        self._shared_latency = sm.shared_latency_cycles
        self.locate = None                          # sampled mode, shared footprint: locate(block) per access
        self.front = FrontEnd(spec)
        self._iready = self.front.icache.lines
        self.ctas: dict = {}                         # block -> residency.CTA
        self._free_slots: list[int] = []           # block slots freed by finished CTAs (local frames), lowest first
        self.t = 0.0
        self.next_age = 0
        self.resident_warps = 0
        self.warp_cycles = 0.0                     # integral of resident warps over time
        self.active_cycles = 0.0                   # cycles with at least one resident warp
        self._last_change = 0.0
        self.loop_start = INF                      # loop sampling: first LOOP marker, last SKIP marker,
        self.loop_end = -INF                       # SASS instructions kept and left out (issue_stream.py)
        self.loop_kept = 0.0
        self.loop_skipped = 0.0
        self.loop_mark = (-1.0, 0)                 # (time, instructions issued) at the latest warmed-up LOOP marker
        self.loop_rate: float | None = None        # instructions per cycle in the loop's steady state

    # ------------------------------------------------------------------ stepping
    def next_time(self) -> float:
        """The earliest cycle at which one of its warps may issue (exact: the engine wakes
        the SM at the quantum holding it)."""
        best = INF
        for sp in self.sps:
            for w in sp.warps:
                c = w.cand
                if c < best:
                    best = c
        return best

    def advance(self, until: float) -> None:
        """Issue everything that can issue before cycle `until`: cycle after cycle at which
        a warp may issue, each sub-partition (in order) whose `next` has come issues one of
        its ready warps (the policy's pick; warps whose pipe is busy wait for it)."""
        sps = self.sps
        policy = self._policy
        while True:
            t = INF
            for sp in sps:
                if sp.next < t:
                    t = sp.next
            if t < self.t:
                t = self.t
            if t >= until or t == INF:
                self.t = max(self.t, min(until, t))
                return
            issued = False
            for sp in sps:
                if sp.next > t:
                    continue
                ready = []
                free = sp.pipe_free
                later = INF                     # the earliest candidate after t
                for w in sp.warps:
                    c = w.cand
                    if c <= t:
                        s = w.cur
                        pf = free[s.unit0]
                        for u in s.unit_rest:
                            f = free[u]
                            if f < pf:
                                pf = f
                        if pf > t:
                            w.cand = pf
                            w.throttled = True
                            if pf < later:
                                later = pf
                        else:
                            ready.append(w)
                    elif c < later:
                        later = c
                if not ready:
                    sp.next = later
                    continue
                if len(ready) == 1:
                    w = ready[0]
                    sp.next = later             # its next candidate lowers it (_prepare)
                else:
                    # sp.warps, hence `ready`, is in age order (oldest first): gto and oldest
                    # pick as policies.py's functions do, without the call
                    if policy == "gto":
                        last = sp.last
                        w = last if last is not None and last in ready else ready[0]
                    elif policy == "oldest":
                        w = ready[0]
                    else:
                        w = self.pick(ready, sp.last)
                    sp.next = t                 # the others stay ready
                sp.last = w
                self._issue(sp, w, t)
                issued = True
            # nothing issued: candidates were stale (pipeline became busy) or `next` was below
            # the earliest candidate; both moved forward; loop again
            self.t = t + 1 if issued else t

    def _issue(self, sp: SubPartition, w: Warp, t: float) -> None:
        s = w.cur
        idx = s.index
        gap0 = w.last_issue + 1
        if t > gap0:
            dep_end = w.ready_at                # min(max(ready_at, gap0), t)
            if dep_end < gap0:
                dep_end = gap0
            if dep_end > t:
                dep_end = t
            stall = self._stall
            if dep_end > gap0:
                stall[w.reason][idx] += dep_end - gap0
            rest = t - dep_end
            if rest > 0:
                stall[THROTTLE[s.result] if w.throttled else "not_selected"][idx] += rest
        self._selected[idx] += 1
        w.throttled = False
        free = sp.pipe_free
        u = s.unit0
        if s.unit_rest:                         # the first free of its pipes (FP32: fmalite or fmaheavy)
            for v in s.unit:
                if free[v] <= t:
                    u = v
                    break
        free[u] = t + self.interval[u]
        sp.issued += 1
        ready = t + s.latency
        result = s.result
        if result != FIXED:
            ready = self._memory(s, w, t, ready)
        if s.dsts:
            rr, rk = w.reg_ready, w.reg_kind
            for d in s.dsts:
                rr[d] = ready
                rk[d] = result
        w.last_issue = t
        w.ii += 1
        if w.ii >= len(w.instrs):
            self._next_visit(w, t + 1)
            if w.vi >= len(w.stream.visits):
                self._warp_done(w, t + 1)
                return
        else:
            w.cur = w.instrs[w.ii]
        if s.is_barrier:
            self._arrive(w, t)                 # may release the block's warps, which prepares them
            if w.at_barrier:
                w.cand = INF
            return
        # _prepare(w, t + 1), inlined (once per issue): w is not at a barrier
        t1 = t + 1
        s = w.cur
        r, reason = t1, "wait"
        if w.ready_at > r:
            r, reason = w.ready_at, w.reason
        rr = w.reg_ready
        for reg in s.regs:
            v = rr[reg]
            if v > r:
                r, reason = v, DEP_STALL[w.reg_kind[reg]]
        il = s.iline
        if il == w.iline:
            f = self._iready[il]
        else:
            f = self.front.icache.ready(t1, il)
            w.iline = il
        if f > r:
            r, reason = f, "no_instructions"
        if s.const_lines:
            for line in s.const_lines:
                f = self.front.ccache.ready(t1, line)
                if f > r:
                    r, reason = f, "imc_miss"
        w.ready_at, w.reason, w.cand = r, reason, r
        if r < sp.next:
            sp.next = r

    def _memory(self, s, w: Warp, t: float, fixed_ready: float) -> float:
        payload = w.mem.get(s.index) if w.mem else None
        if payload is None:
            return fixed_ready                      # no active lane accessed memory
        if s.const_load:                            # indexed constant load: through the constant cache
            cc = self.front.ccache
            done = fixed_ready
            for line in set(((int(x) << 5) - CONST_WINDOW_BASE + (3 << 32)) >> cc.line_shift
                            for x in payload.tolist()):
                done = max(done, cc.ready(t, line) + fixed_ready - t)
            return done
        if s.result == SHARED:
            wf = payload if isinstance(payload, int) else 1
            start = t if t > self.shared_free else self.shared_free
            self.shared_free = start + wf * self._wf_step
            self.stats.shared_wavefronts += wf
            return start + self._shared_latency + (wf - 1) * self._wf_cycles
        if self.locate is not None:                 # the L2 asks where in the grid this block is (warming.py)
            self.locate(w.cta.block)
        if s.is_atomic:
            sectors, ops, addrs = payload
            if s.aggregated:                        # the leader lane's one combined operation per address
                ops = addrs = None
            return self.l1.atomic(t, sectors, not s.dsts, ops, addrs)
        if s.is_local and w.local_delta:            # its SM slot's frame
            d = w.local_delta
            payload = (payload[0] + d,) + tuple(payload[1:]) if s.is_store else payload + d
        if s.is_store:
            self.l1.store(t, payload[0], byte_masks=payload[1], send=payload[2] if len(payload) > 2 else None)
            return fixed_ready
        return self.l1.load(t, payload)

    def _prepare(self, w: Warp, t_min: float) -> None:
        """When w's next instruction may issue as far as its own state goes: after the
        previous issue, after an external hold (barrier release, dispatch) and after its
        source and destination registers are ready. Records the binding reason."""
        if w.at_barrier:
            w.cand = INF
            return
        s = w.cur
        r, reason = t_min, "wait"
        if w.ready_at > r:                      # set by a barrier release or the block's dispatch
            r, reason = w.ready_at, w.reason
        rr = w.reg_ready
        for reg in s.regs:
            v = rr[reg]
            if v > r:
                r, reason = v, DEP_STALL[w.reg_kind[reg]]
        if s.iline == w.iline:                  # the line it issued from last: present
            f = self._iready[s.iline]
        else:
            f = self.front.icache.ready(t_min, s.iline)
            w.iline = s.iline
        if f > r:
            r, reason = f, "no_instructions"
        for line in s.const_lines:
            f = self.front.ccache.ready(t_min, line)
            if f > r:
                r, reason = f, "imc_miss"
        w.ready_at, w.reason, w.cand = r, reason, r
        sp = w.sp
        if r < sp.next:
            sp.next = r

    def _next_visit(self, w: Warp, t: float) -> None:
        w.vi += 1
        visits = w.stream.visits
        while w.vi < len(visits) and visits[w.vi][0] < 0:  # loop-sampling markers (issue_stream.py)
            kind, counts, _ = visits[w.vi]
            issued = sum(sp.issued for sp in self.sps)
            if kind == LOOP:
                self.loop_start = min(self.loop_start, t)
                if counts:                      # past the warm-up: the latest such mark starts the rate window
                    self.loop_mark = (t, issued)
                elif self.loop_mark[0] < 0:
                    self.loop_mark = (t, issued)
            else:                               # SKIP: iterations left out (the engine stretches the loop time)
                if self.loop_rate is None and t > self.loop_mark[0] + 64:
                    # issue rate while every warp was inside its loop: latest entry to first SKIP
                    self.loop_rate = (issued - self.loop_mark[1]) / (t - self.loop_mark[0])
                self.loop_end = max(self.loop_end, t)
                self.loop_kept += counts[0]
                self.loop_skipped += counts[1]
            w.vi += 1
        if w.vi < len(visits):
            block, _, mem = visits[w.vi]
            w.instrs = instrs = self.block_static[block]
            w.mem = mem
            w.ii = 0
            w.cur = instrs[0] if instrs else None
            if w.vi == 0:
                self._prepare(w, t)
