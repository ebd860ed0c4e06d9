"""Ladder: a family of programs side by side, each rung a step of one lesson (the
reduction ladder, the three transposes): predicted time as bars from zero, and the
counters that explain the steps in small panels beside it.

    data = ladder({"reduce_interleaved_divergent": r1, "reduce_sequential": r2, ...}, family="reduce")
    fig = plot(data, "plots/reduce_ladder.png")

Data: straight from each `Result.metrics`, in the order given (the family's teaching
order, `gpusim.cli.program_args.FAMILY_ORDER`), under Nsight Compute's names:
- time: `gpu__time_duration.sum` (ns; only when every run was timed);
- warp instructions: `smsp__inst_executed.sum`;
- shared wavefronts: `l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum`;
- bank conflicts: `l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum`;
- sectors per request: `l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st,atom,red}.sum`
  over the matching `l1tex__t_requests_...` (0 without global accesses);
- SIMT efficiency: `smsp__thread_inst_executed.sum` / (32 x `smsp__inst_executed.sum`).
These are the columns of the family comparison table (`gpusim.report.summary`).

Not shown: measured times (compare against `data/measurements` with `gpusim.viz.roofline`)
or anything per line (the source view and the maps do that).
"""
from __future__ import annotations

from dataclasses import dataclass

from gpusim.viz import _mpl

TIME = "gpu__time_duration.sum"
INST = "smsp__inst_executed.sum"
THREAD_INST = "smsp__thread_inst_executed.sum"
SHARED_OPS = ("ld", "st")
GLOBAL_OPS = ("ld", "st", "atom", "red")
# field -> (panel title, how to show a value)
COUNTERS = {
    "warp_instructions": ("warp instructions", lambda v: f"{v:,.0f}"),
    "shared_wavefronts": ("shared wavefronts", lambda v: f"{v:,.0f}"),
    "bank_conflicts": ("bank conflicts", lambda v: f"{v:,.0f}"),
    "sectors_per_request": ("global sectors / request", lambda v: f"{v:.2f}"),
    "simt_efficiency": ("SIMT efficiency (%)", lambda v: f"{100 * v:.1f}"),
}


@dataclass(frozen=True)
class Ladder:
    family: str
    gpu: str
    programs: tuple[str, ...]                # in the order given
    time_ns: tuple[float, ...] | None        # gpu__time_duration.sum; None unless every run was timed
    warp_instructions: tuple[int, ...]
    shared_wavefronts: tuple[int, ...]
    bank_conflicts: tuple[int, ...]
    sectors_per_request: tuple[float, ...]
    simt_efficiency: tuple[float, ...]       # 0..1

    @property
    def speedup(self) -> tuple[float, ...] | None:
        """Each rung's speedup over the first (time of the first / time of the rung)."""
        if self.time_ns is None:
            return None
        return tuple(self.time_ns[0] / t if t else 0.0 for t in self.time_ns)


def _sum(m: dict, names) -> int:
    return int(sum(m.get(n, 0) or 0 for n in names))


def ladder(results_by_program: dict, family: str = "", gpu: str | None = None) -> Ladder:
    """The Ladder of `{program name: Result}` (dict order kept). `family` names it
    (default: the programs' common prefix); `gpu` defaults to the first Result's."""
    if not results_by_program:
        raise ValueError("ladder: no results to compare")
    names = tuple(results_by_program)
    ms = [results_by_program[n].metrics for n in names]
    timed = all(TIME in m for m in ms)
    inst = tuple(int(m.get(INST, 0)) for m in ms)
    req = [_sum(m, [f"l1tex__t_requests_pipe_lsu_mem_global_op_{o}.sum" for o in GLOBAL_OPS]) for m in ms]
    sec = [_sum(m, [f"l1tex__t_sectors_pipe_lsu_mem_global_op_{o}.sum" for o in GLOBAL_OPS]) for m in ms]
    return Ladder(
        family=family or _prefix(names), gpu=gpu or str(results_by_program[names[0]].gpu), programs=names,
        time_ns=tuple(float(m[TIME]) for m in ms) if timed else None,
        warp_instructions=inst,
        shared_wavefronts=tuple(_sum(m, [f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{o}.sum"
                                         for o in SHARED_OPS]) for m in ms),
        bank_conflicts=tuple(_sum(m, [f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{o}.sum"
                                      for o in SHARED_OPS]) for m in ms),
        sectors_per_request=tuple(s / r if r else 0.0 for s, r in zip(sec, req)),
        simt_efficiency=tuple(float(m.get(THREAD_INST, 0)) / (32 * i) if i else 0.0 for m, i in zip(ms, inst)))


def _prefix(names) -> str:
    """'reduce' for reduce_sequential, reduce_first_add, ...; '' when none is shared."""
    parts = [n.split("_") for n in names]
    common = []
    for words in zip(*parts):
        if len(set(words)) != 1:
            break
        common.append(words[0])
    return "_".join(common)


def short_names(data: Ladder) -> list[str]:
    """Program names without the family prefix ('reduce_first_add' -> 'first_add')."""
    p = data.family + "_" if data.family else ""
    return [n[len(p):] if p and n.startswith(p) and len(n) > len(p) else n for n in data.programs]


def plot(data: Ladder, path=None):
    """Predicted time per rung (bars from zero, speedup over the first above each),
    and one small panel per counter of COUNTERS below, bars in the same order and colours."""
    from matplotlib.ticker import FuncFormatter      # matplotlib only when a figure is drawn
    n = len(data.programs)
    k = len(COUNTERS)
    width, height = max(10.0, 1.1 * n * k / 2), 6.8
    fig = _mpl.blank(figsize=(width, height), dpi=110)
    left, right, gap = 0.65, 0.12, 0.55                 # inches; fixed margins: no layout pass
    panel = (width - left - right - (k - 1) * gap) / k
    grid = fig.add_gridspec(2, k, height_ratios=[1.6, 1.0], left=left / width, right=1 - right / width,
                            bottom=0.45 / height, top=1 - 0.32 / height, wspace=gap / panel, hspace=0.3)
    axes = [fig.add_subplot(grid[1, j]) for j in range(k)]
    top = fig.add_subplot(grid[0, :])                   # added last: fig.axes[-1] is the time panel
    labels = short_names(data)
    colours = [f"C{k % 10}" for k in range(n)]
    xs = list(range(n))
    title = f"{data.family or 'ladder'} on {data.gpu}"
    if data.time_ns is not None:
        us = [t / 1e3 for t in data.time_ns]
        bars = top.bar(xs, us, color=colours)
        for b, t, s in zip(bars, us, data.speedup):
            top.text(b.get_x() + b.get_width() / 2, b.get_height(), f"{t:.2f} µs\n{s:.2f}x",
                     ha="center", va="bottom", fontsize=8)
        top.set_ylabel("predicted time (µs)")
        top.set_ylim(0, max(us) * 1.25 if max(us) > 0 else 1.0)
        top.set_title(f"{title}: predicted time (gpu__time_duration.sum), speedup over the first rung", fontsize=9)
    else:
        top.set_ylim(0, 1)
        top.text(0.5, 0.5, "functional run: no predicted time (run without --functional)", ha="center",
                 va="center", transform=top.transAxes, fontsize=9, color="0.4")
        top.set_title(title, fontsize=9)
    _mpl.ticks(top.xaxis, xs, [f"{k + 1}. {s}" for k, s in enumerate(labels)], fontsize=8)
    top.set_xlim(-0.6, n - 0.4)
    for ax, (field, (name, show)) in zip(axes, COUNTERS.items()):
        vals = [100 * v for v in getattr(data, field)] if field == "simt_efficiency" else list(getattr(data, field))
        ax.bar(xs, vals, color=colours)
        top_v = 100.0 if field == "simt_efficiency" else max(vals)
        ax.set_ylim(0, top_v * 1.3 if top_v > 0 else 1.0)
        for x, v, raw in zip(xs, vals, getattr(data, field)):
            ax.text(x, v, show(raw), ha="center", va="bottom", fontsize=6, rotation=90 if n > 3 else 0)
        ax.set_title(name, fontsize=8)
        _mpl.ticks(ax.xaxis, xs, [str(k + 1) for k in xs], fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
        ax.yaxis.set_major_formatter(FuncFormatter(_short))     # 4M, 150k: no offset text over the title
        ax.set_xlabel("rung", fontsize=7)
    _mpl.save(fig, path)
    return fig


def _short(v: float, _pos=None) -> str:
    """An axis value as 4M, 150k, 2.5 (no scientific offset text)."""
    for unit, k in (("M", 1e6), ("k", 1e3)):
        if abs(v) >= k:
            return f"{v / k:g}{unit}"
    return f"{v:g}"
