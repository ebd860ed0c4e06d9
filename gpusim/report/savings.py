"""Estimated time saved by removing one waste, as Nsight Compute's "Est. Speedup": the
verdict's common unit for a timed result.

A timed `Result` carries the timing model's warp-state samples per source line
(`smsp__pcsamp_warps_issue_stalled_<reason>`: warp-cycles issuing, `selected`, or
stalled for a reason) and each resource's utilisation (`timing__utilization`). For a
waste that is a fraction `f` of a line's work, two estimates of the share of the SM-busy
time it costs, the larger taken:

- latency: the line's warp-cycles in the reasons that waste causes, times `f`, over all
  warp-cycles: what the warps would not spend there (a shared-memory bank conflict:
  `short_scoreboard` and `mio_throttle`; an uncoalesced or atomic access:
  `long_scoreboard` and `lg_throttle`; divergence: every reason but `barrier`, the line
  runs once per path; predicated-off lanes and index arithmetic: the issue reasons);
- throughput: the waste's share of its resource's work times that resource's
  utilisation (bank conflicts: extra wavefronts over all wavefronts x shared-memory
  utilisation; extra sectors x the busier of L2 and HBM; idle issue slots x the issue
  utilisation), what it saves where that resource sets the pace.

Saved time = that share x the SM-busy time (`sm__cycles_elapsed.max` cycles; the
launch's fixed overhead, `gpu__time_duration.sum` minus that, never shrinks), reported
as a share of `gpu__time_duration.sum`. Barrier stalls are an upper bound: the time warps
wait at barriers, which balancing the work before them (or fewer barriers) recovers.

Checked against the model's own counterfactuals, the same work without the waste
(tests/report/test_verdict_time.py): transpose_shared's 32-way conflict is estimated at
14.8% where the padded tile gains 14.6% (default size, h100); a copy reading every 8th
element (2^17 of them) at 30% where the contiguous copy gains 27% (at 2^16, 21% where
it gains 13%: the fixed end of so short a kernel, its last lines' waits, weighs more); divergent loop trip counts at 0.8x
what sorting them into equal-trip warps gains (a loop's header and body are each
estimated alone); a stride-2 conflict that costs no time is not flagged. Known bias: a
two-sided branch is estimated as if both sides cost alike (half of each side's cycles);
with one slow side, making it warp-uniform saves only the fast side's time, less than
estimated. These are estimates of one waste at a time: fixes overlap, so the savings do
not add up.
"""
from __future__ import annotations

from dataclasses import dataclass

from gpusim.specs import resolve

PREFIX = "smsp__pcsamp_warps_issue_stalled_"
ISSUE = ("selected", "not_selected", "wait", "math_pipe_throttle", "dispatch_stall", "branch_resolving")
SHARED = ("short_scoreboard", "mio_throttle")
GLOBAL = ("long_scoreboard", "lg_throttle", "drain")
ALL_BUT_BARRIER = None                                   # every reason except `barrier`


@dataclass(frozen=True)
class TimeBase:
    """The timed result's totals the estimates divide by."""
    time_ns: float                 # gpu__time_duration.sum
    busy_ns: float                 # the SMs' elapsed cycles, as ns
    warp_cycles: float             # all warp-state samples (issuing and stalled)
    utilization: dict              # timing__utilization

    def share(self, latency: float = 0.0, throughput: float = 0.0) -> float:
        """Share of the kernel's time saved for shares of the busy time by each estimate."""
        return max(latency, throughput) * self.busy_ns / self.time_ns if self.time_ns else 0.0


def time_base(result) -> TimeBase | None:
    """The base of a timed result, None for an untimed one (no samples)."""
    m = result.metrics
    t = m.get("gpu__time_duration.sum")
    cycles = m.get("sm__cycles_elapsed.max")
    if not t or not cycles:
        return None
    w = sum(float(v) for k, v in m.items() if k.startswith(PREFIX) and isinstance(v, (int, float))
            and not k.endswith("_not_issued"))
    if w <= 0:
        return None
    hz = m.get("sm__cycles_elapsed.avg.per_second")       # the clock the launch ran at (timing/clock_domain.py)
    if hz:
        cycle_ns = 1e9 / float(hz)
    else:
        try:
            cycle_ns = resolve(str(result.gpu).split("+")[0], []).cycle_ns
        except Exception:                                # a hand-made GPU name: cycles as the time's share
            cycle_ns = float(t) / float(cycles)
    busy = min(float(t), float(cycles) * cycle_ns)
    util = m.get("timing__utilization") or {}
    return TimeBase(float(t), busy, w, dict(util) if isinstance(util, dict) else {})


def samples(ls, reasons=ALL_BUT_BARRIER) -> float:
    """A line's warp-cycles in `reasons` (None: all but barrier)."""
    out = 0.0
    for k, v in ls.metrics.items():
        if not k.startswith(PREFIX) or k.endswith("_not_issued"):
            continue
        r = k[len(PREFIX):]
        if (reasons is None and r != "barrier") or (reasons is not None and r in reasons):
            out += float(v)
    return out


def latency_share(base: TimeBase, ls, fraction: float, reasons=ALL_BUT_BARRIER) -> float:
    """Share of the busy time: the line's warp-cycles in `reasons` x `fraction`, over all."""
    return samples(ls, reasons) * fraction / base.warp_cycles


def kernel_samples(result, reason: str) -> float:
    return float(result.metrics.get(PREFIX + reason, 0.0) or 0.0)
