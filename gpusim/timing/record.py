"""An opt-in recorder of what the timing model did, cycle by cycle, in a bounded window:
the data behind `gpusim.viz.warp_timeline` and the Chrome trace (`gpusim.report.trace`).

    opts = TimingOptions(record=TraceWindow(sms=(0,), start_cycle=0, end_cycle=20_000))
    r = gpusim.launch(..., timing=True, timing_options=opts)
    rec = r.extra["recording"]          # a Recording

What is recorded, for the chosen SMs and cycles [start_cycle, end_cycle) only:
- per warp: every issue (cycle, SASS instruction: opcode, source line), every stall
  interval before an issue with the Nsight warp state it is counted under (the same
  split `issue_loop._book` adds to `smsp__pcsamp_warps_issue_stalled_*`: the binding
  dependency or hold, then `*_throttle` or `not_selected`), barrier arrivals and
  releases. Warps are placed in hardware warp slots per sub-partition (the lowest free
  slot when the warp arrives, freed when it exits), which bounds the rows;
- per SM: memory requests of the LSU/MIO path (shared, global/local loads, stores,
  atomics, indexed constant loads) with issue and completion cycles, sectors (or
  shared wavefronts) and the level that served them: 'shared', 'const', 'l1' (every
  sector hit or joined a miss in flight), 'l2', 'hbm' (the request made the HBM read a
  burst); for stores the completion is the L2's acknowledgement;
- for the whole (simulated) GPU: bytes requested of the L2 and bytes moved by HBM, per
  bin of `counter_window_cycles`, binned at the cycle the L1 sent the request
  (HBM bytes of a request with it: its reads, and write-backs its misses evicted).

Bound: at most `max_events` issue, stall and memory events together (later ones are
dropped and counted in `Recording.dropped`), plus (min(end, kernel end) - start) /
counter_window_cycles counter bins and one barrier record per warp arrival inside the
window. Stall intervals that straddle the window are clipped to it.

Off (the default `TimingOptions.record = None`) nothing of this exists: the engine builds
plain `SM`s and the L1s talk to the memory system directly. On, the recording SMs call
the same methods and only read state, so every metric is identical (a test checks): the
compiled issue loop stops before each issue of a recording SM (`SM._before_issue`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gpusim.timing import issue_loop as L
from gpusim.timing.payloads import MbarrierAccess
from gpusim.timing.sm import SM
from gpusim.timing.tma import CopyPayload
from gpusim.timing.static import GLOBAL, SHARED
from gpusim.errors import ConfigError


@dataclass(frozen=True)
class TraceWindow:
    """Which SMs and cycles to record, and how much at most."""
    sms: tuple[int, ...] | int = (0,)    # simulated SM indices (an int: one SM)
    start_cycle: int = 0                 # first cycle recorded
    end_cycle: int = 20_000              # first cycle not recorded
    max_events: int = 200_000            # issue + stall + memory events kept (the rest counted, dropped)
    counter_window_cycles: int = 256     # bin of the L2 / HBM byte counters, cycles

    def __post_init__(self) -> None:
        sms = (self.sms,) if isinstance(self.sms, int) else tuple(self.sms)
        object.__setattr__(self, "sms", sms)
        if not sms or any(not isinstance(s, int) or s < 0 for s in sms):
            raise ConfigError(f"TraceWindow.sms must be non-negative SM indices, got {self.sms!r}")
        if not (0 <= self.start_cycle < self.end_cycle):
            raise ConfigError(f"TraceWindow needs 0 <= start_cycle < end_cycle, "
                              f"got {self.start_cycle}:{self.end_cycle}")
        if self.max_events < 1 or self.counter_window_cycles < 1:
            raise ConfigError("TraceWindow.max_events and counter_window_cycles must be >= 1")


@dataclass
class Recording:
    """What a `TraceWindow` captured. Events are tuples (cycles are SM cycles):
    issues (sm, sp, slot, cycle, sass_index, block, warp_in_block);
    stalls (sm, sp, slot, start, end, reason, sass_index);
    barriers (sm, sp, slot, arrive_cycle, release_cycle, block);
    memory (sm, sp, slot, kind, issue_cycle, done_cycle, level, size, sass_index)
    with kind 'shared' | 'load' | 'store' | 'atomic' | 'const' and size the sectors
    (shared: wavefronts); counters: bin start cycles and the L2 / HBM bytes in each."""
    window: TraceWindow
    kernel: str
    gpu: str
    cycle_ns: float
    sub_partitions: int
    opcodes: tuple[str, ...]             # SASS index -> opcode (e.g. 'LDG.E')
    source_lines: tuple[int, ...]        # SASS index -> kernel source line (0: none)
    issues: list = field(default_factory=list)
    stalls: list = field(default_factory=list)
    barriers: list = field(default_factory=list)
    memory: list = field(default_factory=list)
    counter_cycles: list = field(default_factory=list)
    l2_bytes: list = field(default_factory=list)
    hbm_bytes: list = field(default_factory=list)
    dropped: int = 0                     # events over max_events, not kept
    sm_issued: dict = field(default_factory=dict)   # recorded SM -> warp instructions it issued (whole run)

    @property
    def events(self) -> int:
        return len(self.issues) + len(self.stalls) + len(self.memory)

    @property
    def truncated(self) -> bool:
        return self.dropped > 0


class Recorder:
    """Shared by the recording SMs and the counting memory front: the window test and the cap."""

    def __init__(self, rec: Recording):
        self.rec = rec
        w = rec.window
        self.start, self.end, self.cap = w.start_cycle, w.end_cycle, w.max_events
        self.bin = w.counter_window_cycles
        self.bins: dict[int, list] = {}              # bin -> [L2 bytes, HBM bytes]
        self.n = 0

    def room(self) -> bool:
        if self.n < self.cap:
            self.n += 1
            return True
        self.rec.dropped += 1
        return False

    def traffic(self, t: float, l2: float, hbm: float) -> None:
        if self.start <= t < self.end:
            b = self.bins.get(k := int((t - self.start) // self.bin))
            if b is None:
                b = self.bins[k] = [0.0, 0.0]
            b[0] += l2
            b[1] += hbm

    def finish(self, end_cycle: float) -> None:
        """The counter bins from the window's start to its end or the kernel's, zeros included."""
        hi = min(self.end, max(end_cycle, self.start + 1))
        n = -(-int(hi - self.start) // self.bin)
        rec = self.rec
        rec.counter_cycles = [self.start + k * self.bin for k in range(n)]
        rec.l2_bytes = [self.bins.get(k, (0.0, 0.0))[0] for k in range(n)]
        rec.hbm_bytes = [self.bins.get(k, (0.0, 0.0))[1] for k in range(n)]


class CountingMemory:
    """Stands between one SM's L1 and the memory system while recording: forwards every
    request unchanged and notes its L2 bytes, the HBM bursts it caused and its completion."""

    def __init__(self, memory, recorder: Recorder):
        self.memory, self.recorder = memory, recorder
        self.hbm = memory.hbm
        self.burst = memory.hbm.granularity_bytes
        self.sector = memory.spec.l2.sector_bytes
        self.last = None                  # (completion, served by HBM) of the latest request

    def read(self, now, sm_id, sectors, runs=None):
        return self._through(self.memory.read, now, sm_id, sectors, runs)

    @property
    def first_back(self) -> float:
        return self.memory.first_back

    def write(self, now, sm_id, sectors, byte_masks=None):
        return self._through(self.memory.write, now, sm_id, sectors, byte_masks)

    def atomic(self, now, sm_id, sectors, reduction=False, passes=None, float_op=False):
        return self._through(self.memory.atomic, now, sm_id, sectors, reduction, passes, float_op)

    def _through(self, fn, now, sm_id, sectors, *rest):
        h = self.hbm
        r0, b0 = h.bursts_read, h.bursts_read + h.bursts_written
        done = fn(now, sm_id, sectors, *rest)
        self.last = (done, h.bursts_read > r0)
        self.recorder.traffic(now, len(sectors) * self.sector, (h.bursts_read + h.bursts_written - b0) * self.burst)
        return done


class RecordingSM(SM):
    """An `SM` that reports issues, stalls, barriers and memory requests to a `Recorder`.
    It calls the base methods unchanged and only reads state around them; the issue loop
    calls `_before_issue` before each issue."""

    def attach(self, recorder: Recorder, lower: CountingMemory) -> None:
        self.recorder = recorder
        self.counting = lower
        self._slots: dict = {}                       # Warp -> (sp, slot)
        self._free = [set() for _ in range(self.nsp)]    # free slot numbers below _top, per sp
        self._top = [0] * self.nsp
        self.I[L.I_HOOK] = 1                         # the issue loop calls _before_issue
        self._arrivals: dict = {}                    # block -> [(sp, slot, t)]
        self._cur = None                             # (sp, slot, sass index) of the instruction issuing

    def _slot(self, w) -> tuple[int, int]:
        got = self._slots.get(w)
        if got is None:
            k = w.sp                                 # the sub-partition it runs on (residency.py)
            free = self._free[k]
            if free:
                s = min(free)
                free.discard(s)
            else:
                s = self._top[k]
                self._top[k] += 1
            got = self._slots[w] = (k, s)
        return got

    def _before_issue(self, sp, w, t) -> None:
        rec = self.recorder
        s = w.cur
        k, slot = self._slot(w)
        gap0 = w.last_issue + 1
        if t > rec.start and gap0 < rec.end and t > gap0:
            dep_end = min(max(w.ready_at, gap0), t)
            parts = []
            if dep_end > gap0:
                parts.append((gap0, dep_end, w.reason))
            if t > dep_end:
                if w.throttled:
                    r = "lg_throttle" if s.result == GLOBAL else ("mio_throttle" if s.result == SHARED else
                                                                   "math_pipe_throttle")
                else:
                    r = "not_selected"
                parts.append((dep_end, t, r))
            for a, b, r in parts:
                a, b = max(a, rec.start), min(b, rec.end)
                if b > a and rec.room():
                    rec.rec.stalls.append((self.id, k, slot, a, b, r, s.index))
        if rec.start <= t < rec.end and rec.room():
            rec.rec.issues.append((self.id, k, slot, t, s.index, w.stream.block, w.stream.warp_in_block))
        self._cur = (k, slot)

    def _memory(self, s, w, t, fixed_ready):
        self.counting.last = None
        done = super()._memory(s, w, t, fixed_ready)
        rec = self.recorder
        payload = w.mem.get(s.index) if w.mem else None
        if payload is None or not (rec.start <= t < rec.end) or not rec.room():
            return done
        k, slot = self._cur
        last = self.counting.last
        if isinstance(payload, MbarrierAccess):
            kind, level, size = "mbarrier", "shared", 0
        elif s.const_load:
            kind, level, size = "const", "const", len(payload)
        elif s.result == SHARED and not isinstance(payload, CopyPayload):
            kind, level, size = "shared", "shared", payload if isinstance(payload, int) else 1
        else:
            kind = "atomic" if s.is_atomic else ("store" if s.is_store else "load")
            size = _sectors(payload)
            level = "l1" if last is None else ("hbm" if last[1] else "l2")
            if last is not None and kind == "store":
                done = max(done, last[0])
        end = done if done < float("inf") else t   # a wait whose phase is not complete yet: when issued
        rec.rec.memory.append((self.id, k, slot, kind, t, max(end, t + 1), level, size, s.index))
        return done

    def _arrive(self, w, t) -> None:
        k, slot = self._slot(w)
        rec = self.recorder
        if rec.start <= t < rec.end:
            self._arrivals.setdefault(w.cta.block, []).append((k, slot, t))
        super()._arrive(w, t)

    def _release(self, cta, t) -> None:
        for k, slot, ta in self._arrivals.pop(cta.block, ()):
            self.recorder.rec.barriers.append((self.id, k, slot, ta, t, cta.block))
        super()._release(cta, t)

    def _warp_done(self, w, t) -> None:
        got = self._slots.pop(w, None)
        if got is not None:
            self._free[got[0]].add(got[1])
        super()._warp_done(w, t)


def _sectors(payload) -> int:
    """Sectors of a global access's payload: a load's sector array, a store's (sectors, masks),
    or a bulk copy's `CopyPayload` of either (None: a prefetch that named none)."""
    if isinstance(payload, CopyPayload):
        payload = payload.sectors
    if isinstance(payload, tuple):
        payload = payload[0]
    return 0 if payload is None else len(payload)


def recording_for(plan, window: TraceWindow, sms_simulated: int, cycle_ns: float) -> Recording:
    """An empty Recording of a launch (`gpusim.launch_plan.LaunchPlan`: its SASS listing gives
    opcodes and source lines); `cycle_ns`: one SM cycle at the clock the launch runs at."""
    bad = [s for s in window.sms if s >= sms_simulated]
    if bad:
        raise ConfigError(f"kernel {plan.name}: cannot record SM {bad[0]}: the timing model simulates "
                          f"SMs 0..{sms_simulated - 1} in this launch")
    ins = plan.sass.listing.instructions
    spec = plan.spec
    return Recording(window=window, kernel=plan.name, gpu=spec.name, cycle_ns=cycle_ns,
                     sub_partitions=spec.sm.sub_partitions, opcodes=tuple(x.opcode for x in ins),
                     source_lines=tuple(x.source_line or 0 for x in ins))
