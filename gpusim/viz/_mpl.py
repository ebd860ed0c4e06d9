"""matplotlib, imported only when a figure is drawn. Figures are `matplotlib.figure.Figure`
objects made without pyplot: they render with the Agg canvas (no display, no global
figure registry to leak into), and `fig.savefig` writes PNG, SVG or PDF."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def figure(nrows: int = 1, ncols: int = 1, **kw):
    """A new Figure and its axes, not registered with pyplot (nothing to close, no leak)."""
    from matplotlib.figure import Figure  # lazy: matplotlib, only when a figure is drawn
    fig = Figure(**kw)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def blank(**kw):
    """A new Figure with no axes yet (for a custom grid), not registered with pyplot."""
    from matplotlib.figure import Figure  # lazy: matplotlib, only when a figure is drawn
    return Figure(**kw)


def save(fig, path) -> None:
    """Finish `fig` (its ticks drawn by `_ticks.flatten`: the same pixels, a fraction of
    matplotlib's tick cost) and write it to `path` (format from the suffix) if a path is given."""
    from gpusim.viz import _ticks  # lazy: _ticks imports matplotlib
    _ticks.flatten(fig)
    if path is None:
        return
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=fig.dpi)


def ticks(axis, locs, labels=None, **text) -> None:
    """Ticks of `axis` (ax.xaxis or ax.yaxis) at `locs`, labelled `labels` (default: the
    formatter's), `text` their fontsize and rotation: `ax.set_xticks(locs)` and
    `ax.set_xticklabels(labels, **text)` without making a Tick artist per location now
    (~0.3 ms each; the figure's ticks are drawn from one, `_ticks`)."""
    from matplotlib.ticker import FixedFormatter, FixedLocator  # lazy: matplotlib, only when a figure is drawn
    locs = list(locs)
    axis.set_major_locator(FixedLocator(locs))
    if locs:
        axis.set_view_interval(min(locs), max(locs))            # as set_ticks: the view takes in every tick
    if labels is not None:
        axis.set_major_formatter(FixedFormatter(list(labels)))
    params = {"fontsize": "labelsize", "rotation": "labelrotation"}
    if text:
        axis.set_tick_params(which="major", **{params[k]: v for k, v in text.items()})


def minor_marks(ax) -> None:
    """Draw the y axis' minor ticks (a log axis' 2..9 x 10^k) as one line of tick markers,
    as Axis draws them (out, size and width from the rc) but without a Tick artist each
    (~1 ms apiece: most of a small figure's drawing). Call after the y limits are final."""
    from matplotlib import rcParams  # lazy: matplotlib, only when a figure is drawn
    from matplotlib.lines import TICKLEFT, Line2D  # lazy: matplotlib, only when a figure is drawn
    from matplotlib.ticker import NullLocator  # lazy: matplotlib, only when a figure is drawn
    lo, hi = sorted(ax.get_ylim())
    ys = np.asarray(ax.yaxis.get_minor_locator()())
    ys = ys[(ys >= lo) & (ys <= hi)]
    ax.yaxis.set_minor_locator(NullLocator())
    ax.add_line(Line2D(np.zeros(len(ys)), ys, linestyle="none", marker=TICKLEFT, color=rcParams["ytick.color"],
                       markersize=rcParams["ytick.minor.size"], markeredgewidth=rcParams["ytick.minor.width"],
                       transform=ax.get_yaxis_transform(), clip_on=False))


def short(text: str, n: int = 60) -> str:
    text = " ".join(text.split("#")[0].split())
    return text if len(text) <= n else text[:n - 1] + "…"
