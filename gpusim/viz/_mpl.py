"""matplotlib, imported only when a figure is drawn. Figures are `matplotlib.figure.Figure`
objects made without pyplot: they render with the Agg canvas (no display, no global
figure registry to leak into), and `fig.savefig` writes PNG, SVG or PDF."""
from __future__ import annotations

from pathlib import Path


def figure(nrows: int = 1, ncols: int = 1, **kw):
    """A new Figure and its axes, not registered with pyplot (nothing to close, no leak)."""
    from matplotlib.figure import Figure
    fig = Figure(**kw)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def blank(**kw):
    """A new Figure with no axes yet (for a custom grid), not registered with pyplot."""
    from matplotlib.figure import Figure
    return Figure(**kw)


def save(fig, path) -> None:
    """Write `fig` to `path` (format from the suffix) if a path is given."""
    if path is None:
        return
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=fig.dpi)


def short(text: str, n: int = 60) -> str:
    text = " ".join(text.split("#")[0].split())
    return text if len(text) <= n else text[:n - 1] + "…"
