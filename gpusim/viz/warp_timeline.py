"""Warp timeline: for one SM and a window of cycles, one row per warp slot (grouped by
sub-partition), each cycle coloured by what the warp did: issued (`selected`) or the
Nsight Compute warp state its stall is counted under (`long_scoreboard`, `barrier`,
`not_selected`, ... the `smsp__pcsamp_warps_issue_stalled_*` reasons), barrier arrivals
and releases marked.

Data: a `gpusim.timing.record.Recording` (`TimingOptions(record=TraceWindow(...))`),
exactly the intervals the timing model added to its stall counters, so the cycles of
each colour in a fully recorded window are that SM's stall counts. Rows are hardware
warp slots: a warp takes the lowest free slot of its sub-partition when its block
arrives, so successive blocks reuse rows. Blank: no warp resident in that slot (or the
warp's last instruction issued and it is leaving).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusim import api
from gpusim.result import Result
from gpusim.timing.engine import TimingOptions
from gpusim.timing.record import Recording, TraceWindow
from gpusim.viz import _mpl
from gpusim.viz.capture import subject_of

# Nsight's states, in legend order, with their colours (issue green, memory red/orange,
# synchronisation purple, pipes blue, front end pink/grey)
STATE_COLOURS = {
    "selected": "#2ca02c", "not_selected": "#98df8a", "long_scoreboard": "#d62728", "short_scoreboard": "#ff7f0e",
    "wait": "#ffd92f", "barrier": "#9467bd", "math_pipe_throttle": "#1f77b4", "mio_throttle": "#17becf",
    "lg_throttle": "#8c564b", "dispatch_stall": "#7f7f7f", "no_instructions": "#e377c2", "imc_miss": "#bc5090",
}


@dataclass(frozen=True)
class WarpTimeline:
    kernel: str
    gpu: str
    sm: int
    start: float                       # window, SM cycles
    end: float
    cycle_ns: float
    rows: tuple[tuple[int, int], ...]  # (sub-partition, slot), top to bottom
    segments: dict                     # state -> list of (row, start cycle, end cycle)
    barriers: tuple                    # (row, arrive cycle, release cycle)
    truncated: bool                    # the recording hit its event cap

    @property
    def totals(self) -> dict[str, float]:
        """Cycles in each state, summed over the rows (issue cycles under 'selected')."""
        return {s: sum(b - a for _, a, b in segs) for s, segs in self.segments.items()}


def record(subject, gpu=None, window=None):
    """A timed launch of `subject` (anything `gpusim.viz.capture` takes) on copies of its
    arguments with recording on; returns the Result (`extra['recording']`)."""

    s = subject_of(subject, gpu)
    args = tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in s.args)
    return api.launch(s.kernel, s.grid, s.block, args, s.gpu, timing=True, shared_bytes=s.shared_bytes,
                      timing_options=TimingOptions(record=window or TraceWindow()))


def recording_of(source, gpu=None):
    """The Recording of a Recording, a Result launched with one, or a subject (launched here)."""
    if isinstance(source, Recording):
        return source
    if isinstance(source, Result):
        rec = source.extra.get("recording")
        if rec is None:
            raise ValueError(f"{source.kernel}: this Result has no recording; launch with "
                             f"timing_options=TimingOptions(record=TraceWindow(...))")
        return rec
    return recording_of(record(source, gpu))


def warp_timeline(source, sm: int | None = None, start: float | None = None, end: float | None = None,
                  gpu=None) -> WarpTimeline:
    """The timeline of SM `sm` (default: the first recorded) over [start, end) (default: the
    recorded window, ended at the last recorded event)."""
    rec = recording_of(source, gpu)
    w = rec.window
    sm = w.sms[0] if sm is None else sm
    if sm not in w.sms:
        raise ValueError(f"SM {sm} was not recorded (recorded: {', '.join(map(str, w.sms))})")
    last = max([e[3] + 1 for e in rec.issues if e[0] == sm] + [e[4] for e in rec.stalls if e[0] == sm]
               + [w.start_cycle + 1])
    lo = w.start_cycle if start is None else max(start, w.start_cycle)
    hi = min(w.end_cycle, last) if end is None else min(end, w.end_cycle)
    rows = sorted({(e[1], e[2]) for e in rec.issues if e[0] == sm} | {(e[1], e[2]) for e in rec.stalls if e[0] == sm})
    row = {r: k for k, r in enumerate(rows)}
    segs: dict[str, list] = {}
    runs: dict[int, list] = {}                      # consecutive issue cycles of a row merged into one run
    for e in sorted((e for e in rec.issues if e[0] == sm and lo <= e[3] < hi), key=lambda e: e[3]):
        k = row[(e[1], e[2])]
        r = runs.get(k)
        if r is not None and r[1] == e[3]:
            r[1] = e[3] + 1
        else:
            if r is not None:
                segs.setdefault("selected", []).append((k, r[0], r[1]))
            runs[k] = [e[3], e[3] + 1]
    for k, r in runs.items():
        segs.setdefault("selected", []).append((k, r[0], r[1]))
    for e in rec.stalls:
        if e[0] == sm and e[4] > lo and e[3] < hi:
            segs.setdefault(e[5], []).append((row[(e[1], e[2])], max(e[3], lo), min(e[4], hi)))
    bars = tuple((row[(b[1], b[2])], b[3], b[4]) for b in rec.barriers
                 if b[0] == sm and (b[1], b[2]) in row and b[4] > lo and b[3] < hi)
    order = {s: i for i, s in enumerate(STATE_COLOURS)}
    segs = {s: segs[s] for s in sorted(segs, key=lambda s: order.get(s, len(order)))}
    return WarpTimeline(rec.kernel, rec.gpu, sm, lo, hi, rec.cycle_ns, tuple(rows), segs, bars, rec.truncated)


def plot(t: WarpTimeline, path=None):
    """Rows of warp slots against cycles, states coloured, barriers marked (a triangle at
    the arrival, a black tick at the release); sub-partitions separated by lines."""
    from matplotlib.patches import Patch  # lazy: matplotlib, only when a figure is drawn
    n = max(len(t.rows), 1)
    height = min(2.0 + 0.22 * n, 16)
    fig, axes = _mpl.figure(figsize=(12, height), dpi=110)
    fig.subplots_adjust(left=0.08, right=0.85, bottom=0.55 / height, top=1 - 0.45 / height)   # fixed: no layout pass
    ax = axes[0, 0]
    from matplotlib.collections import PathCollection  # lazy: matplotlib, only when a figure is drawn
    for state, segs in t.segments.items():            # one collection of compound paths per state: cheap to draw
        ax.add_collection(PathCollection(_boxes(segs), facecolors=STATE_COLOURS.get(state, "#444444"), linewidths=0,
                                         snap=True), autolim=False)    # snapped to pixels: a 1-cycle issue stays visible
    if t.barriers:
        ax.plot([a for _, a, _ in t.barriers], [k for k, _, _ in t.barriers], ">", color="black", markersize=3,
                linestyle="none")
        ax.plot([r for _, _, r in t.barriers], [k for k, _, _ in t.barriers], "|", color="black", markersize=7,
                linestyle="none")
    for k in range(1, len(t.rows)):
        if t.rows[k][0] != t.rows[k - 1][0]:
            ax.axhline(k - 0.5, color="0.3", linewidth=0.8)
    _mpl.ticks(ax.yaxis, range(len(t.rows)), [f"SMSP{sp} w{slot}" for sp, slot in t.rows], fontsize=6)
    ax.set_ylim(len(t.rows) - 0.5, -0.5)
    ax.set_xlim(t.start, t.end)
    ax.set_xlabel(f"SM cycle (1 cycle = {t.cycle_ns:.3f} ns)")
    totals = t.totals
    busy = sum(totals.values())
    top = sorted(((v, s) for s, v in totals.items() if s != "selected"), reverse=True)[:3]
    share = ", ".join(f"{s} {100 * v / busy:.0f}%" for v, s in top) if busy else "nothing recorded"
    ax.set_title(f"{t.kernel} on {t.gpu}: SM {t.sm}, cycles {t.start:.0f}-{t.end:.0f} "
                 f"({(t.end - t.start) * t.cycle_ns / 1000:.2f} µs); issued "
                 f"{100 * totals.get('selected', 0) / busy if busy else 0:.0f}% of warp-cycles, top stalls: {share}"
                 + (" [event cap reached: truncated]" if t.truncated else ""), fontsize=8)
    handles = [Patch(color=STATE_COLOURS.get(s, "#444444"), label="issue (selected)" if s == "selected" else s)
               for s in t.segments]
    if handles:
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    _mpl.save(fig, path)
    return fig


BOXES_PER_PATH = 4000      # Agg rasterises one path at a time; a few thousand boxes stay far below its cell limit


def _boxes(segs) -> list:
    """The (row, start, end) boxes of `segs`, each row +-0.4 tall, as a few compound paths."""
    from matplotlib.path import Path  # lazy: matplotlib, only when a figure is drawn
    k, a, b = np.asarray(segs, float).reshape(-1, 3).T
    x = np.stack([a, b, b, a, a], 1)
    y = np.stack([k - 0.4, k - 0.4, k + 0.4, k + 0.4, k - 0.4], 1)
    verts = np.stack([x, y], -1)
    codes = np.array([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], Path.code_type)
    return [Path(verts[i:i + BOXES_PER_PATH].reshape(-1, 2), np.tile(codes, len(verts[i:i + BOXES_PER_PATH])))
            for i in range(0, len(verts), BOXES_PER_PATH)]
