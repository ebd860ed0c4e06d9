"""busbw against message size, one line per series (matplotlib's Agg canvas, no pyplot)."""
from __future__ import annotations

from pathlib import Path

from gpusim.viz import _mpl


def size_label(v: float) -> str:
    """Bytes as 64K, 1M, 1G (binary units, as nccl-tests' sizes)."""
    for unit, k in (("G", 30), ("M", 20), ("K", 10)):
        if v >= 1 << k:
            return f"{v / (1 << k):g}{unit}"
    return f"{v:g}"


def busbw_plot(results, path, title: str, measured: list[tuple[int, float]] | None = None):
    """Write busbw against size to `path` and return the Figure. `results`: one series of
    `collectives.run` results (drawn as "gpusim"), or {label: results} (one line each, e.g.
    per GPU count); `measured`: (bytes, busbw) points drawn beside them."""
    from matplotlib.ticker import FuncFormatter  # lazy: matplotlib, only when a figure is drawn

    series = results if isinstance(results, dict) else {"gpusim": results}
    fig, axes = _mpl.figure(figsize=(7, 4.2), dpi=100)
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.14, top=0.9)    # fixed: the ticks are drawn flat
    ax = axes[0, 0]
    for label, rs in series.items():
        ax.plot([r.bytes for r in rs], [r.busbw_GBps for r in rs], marker="o", label=label)
    if measured:
        ax.plot([b for b, _ in measured], [v for _, v in measured], marker="x", label="measured")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: size_label(v)))
    ax.set_ylim(bottom=0)                    # bandwidths start at zero: no exaggerated slopes
    ax.set_xlabel("size (bytes, nccl-tests convention)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    _mpl.save(fig, out)
    return fig
