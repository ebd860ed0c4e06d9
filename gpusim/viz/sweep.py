"""Figures of a design-space sweep (`gpusim.sweep`'s DataFrame).

- `lines(df, field)`: a metric (predicted time by default) against one varied field, one
  line per program (and size, and value of any other varied field), each marked point a
  row of the table;
- `heatmap(df, x, y)`: a metric over two varied fields, one panel per program (and size),
  each cell annotated with its value; where other fields vary too, each cell is their mean
  (named in the title);
- `plot_sweep(df, varied, path)`: what `gpusim sweep --plot` draws: the heatmap when two or
  more fields vary, else the lines.

Data comes from the table only: nothing is simulated again.
"""
from __future__ import annotations

from gpusim.viz import _mpl

TIME = "gpu__time_duration.sum"


def _label(metric: str) -> str:
    return "predicted time (us)" if metric == TIME else metric


def _scale(metric: str) -> float:
    return 1e-3 if metric == TIME else 1.0


def _series_keys(df) -> list[str]:
    keys = ["program"]
    if "size" in df.columns and df["size"].nunique() > 1:
        keys.append("size")
    return keys


def lines(df, field: str, metric: str = TIME, path=None, ax=None, logx: bool | None = None):
    """`metric` against `field`, one line per program (size, other varied fields)."""
    if field not in df.columns:
        raise KeyError(f"{field!r} is not a column of the sweep table (varied: fields named by --vary)")
    fig = None
    if ax is None:
        fig, axes = _mpl.figure(figsize=(6.4, 4.2), dpi=100)
        fig.subplots_adjust(left=0.12, right=0.97, bottom=0.14, top=0.91)    # fixed: the ticks are drawn flat
        ax = axes[0][0]
    others = [c for c in df.attrs.get("varied", []) if c != field and df[c].nunique() > 1]
    keys = _series_keys(df) + others
    s = _scale(metric)
    for key, g in df.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        g = g.sort_values(field)
        label = " ".join(str(k) if i < len(_series_keys(df)) else f"{keys[i]}={k}" for i, k in enumerate(key))
        ax.plot(g[field], g[metric] * s, marker="o", label=label)
    vals = df[field]
    if logx is None:
        logx = vals.min() > 0 and vals.max() / vals.min() >= 8
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(field)
    ax.set_ylabel(_label(metric))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{_label(metric)} vs {field}", fontsize=10)
    if fig is not None:
        _mpl.save(fig, path)
    return fig if fig is not None else ax.figure


def heatmap(df, x: str, y: str, metric: str = TIME, path=None):
    """`metric` over fields `x` (columns) and `y` (rows), one panel per program (and size)."""
    for f in (x, y):
        if f not in df.columns:
            raise KeyError(f"{f!r} is not a column of the sweep table")
    keys = _series_keys(df)
    groups = list(df.groupby(keys, sort=False))
    n = len(groups)
    # laid out by hand, in inches (the ticks are drawn flat, which a layout engine cannot see): each
    # panel has room on its left for its tick labels and axis title, and its colorbar and the
    # colorbar's label on its right, so no panel's labels run into the previous colorbar
    left, panel, gap, bar, bar_room, top, bottom, height = 1.0, 3.0, 0.12, 0.15, 0.8, 0.5, 0.75, 3.9
    step = left + panel + gap + bar + bar_room
    fig = _mpl.blank(figsize=(step * n + 0.1, height), dpi=100)
    W = step * n + 0.1
    axes = [[fig.add_axes(((k * step + left) / W, bottom / height, panel / W, (height - top - bottom) / height))
             for k in range(n)]]
    bars = [fig.add_axes(((k * step + left + panel + gap) / W, bottom / height, bar / W,
                          (height - top - bottom) / height), label="<colorbar>") for k in range(n)]
    s = _scale(metric)
    others = [c for c in df.attrs.get("varied", []) if c not in (x, y) and df[c].nunique() > 1]
    for ax, cax, (key, g) in zip(axes[0], bars, groups):
        table = g.pivot_table(index=y, columns=x, values=metric, aggfunc="mean") * s
        im = ax.imshow(table.values, origin="lower", aspect="auto", cmap="viridis")
        _mpl.ticks(ax.xaxis, range(len(table.columns)), [f"{v:g}" for v in table.columns],
                   **({"rotation": 30} if len(table.columns) > 5 else {}))
        _mpl.ticks(ax.yaxis, range(len(table.index)), [f"{v:g}" for v in table.index])
        lo, hi = float(table.values.min()), float(table.values.max())
        for i in range(table.shape[0]):
            for j in range(table.shape[1]):
                v = table.values[i, j]
                ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=7,
                        color="white" if v < (lo + hi) / 2 else "black")
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        name = " ".join(map(str, key)) if isinstance(key, tuple) else str(key)
        ax.set_title(name + (f" (mean over {', '.join(others)})" if others else ""), fontsize=9)
        fig.colorbar(im, cax=cax, label=_label(metric))
    _mpl.save(fig, path)
    return fig


def plot_sweep(df, varied: list[str], path=None, metric: str = TIME):
    """The sweep's figure: a heatmap over the first two varied fields, else lines over the first."""
    df.attrs["varied"] = list(varied)
    real = [f for f in varied if df[f].nunique() > 1]
    if len(real) >= 2:
        return heatmap(df, real[0], real[1], metric, path)
    if real:
        return lines(df, real[0], metric, path)
    fig, axes = _mpl.figure(figsize=(6.4, 4.2), dpi=100)
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.2, top=0.91)
    ax = axes[0][0]
    groups = list(df.groupby(_series_keys(df), sort=False))
    names = [" ".join(map(str, k)) if isinstance(k, tuple) else str(k) for k, _ in groups]
    vals = [g[metric].mean() * _scale(metric) for _, g in groups]
    ax.bar(range(len(vals)), vals)
    _mpl.ticks(ax.xaxis, range(len(vals)), names, rotation=20, fontsize=8)
    ax.set_xlabel("program")
    ax.set_ylabel(_label(metric))
    _mpl.save(fig, path)
    return fig
