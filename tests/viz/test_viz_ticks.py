"""Ticks drawn from one Tick per axis (`gpusim.viz._ticks`): the same pixels as matplotlib's
own Axis, which keeps a Tick per location."""
from __future__ import annotations

import numpy as np
import pytest

from gpusim.report.pictures import png
from gpusim.viz import _mpl, _ticks, occupancy, roofline


def _unflattened(fig):
    """`fig` with its FlatTicks removed and matplotlib's Axis drawing again."""
    for ax in fig.axes:
        for a in [a for a in ax.artists if isinstance(a, _ticks.FlatTicks)]:
            for axis in a._flat:
                axis.set_visible(True)
            a.remove()
    return fig


def _busy_figure():
    """Fixed ticks with rotated labels, a grid, a log axis, an inverted axis, a bar chart
    by category and an offset text (large values)."""
    fig, axes = _mpl.figure(2, 2, figsize=(8, 6), dpi=100)
    a, b, c, d = axes.ravel()
    a.plot(range(10), np.arange(10) ** 2)
    a.set_xticks([0, 3, 7])
    a.set_xticklabels(["zero", "three", "seven"], rotation=90, fontsize=6)
    a.grid(True, alpha=0.3)
    a.set_xlabel("x")
    a.set_ylabel("y")
    b.plot([0.01, 100], [1, 1e5])
    b.set_xscale("log", base=2)
    b.set_yscale("log")
    b.set_ylim(1e6, 1)
    c.bar(["warps", "blocks", "registers"], [8, 32, 10])
    c.tick_params(axis="y", labelsize=7)
    d.plot([1e6, 1e6 + 5], [0, 1])
    d.set_title("offset text on x")
    return fig


@pytest.mark.parametrize("make", [
    _busy_figure,
    lambda: occupancy.plot(occupancy.from_numbers(__import__("gpusim").specs.get("h100"), 256, 22, 0, 192, "k")),
    lambda: roofline.plot(roofline.roofline(gpu="h100")),
])
def test_flat_ticks_draw_the_same_pixels_as_matplotlibs_axis(make):
    fig = make()
    _mpl.save(fig, None)                       # flattens (plot() already did for the gpusim figures)
    assert any(isinstance(a, _ticks.FlatTicks) for ax in fig.axes for a in ax.artists)
    flat = png(fig)
    assert png(_unflattened(fig)) == flat


def test_tick_labels_stay_readable_from_the_axes():
    fig = _busy_figure()
    _mpl.save(fig, None)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["zero", "three", "seven"]
    assert ax.get_xlabel() == "x"


def test_mpl_ticks_draws_what_set_ticks_and_set_ticklabels_draw():
    def make(fixed):
        fig, axes = _mpl.figure(1, 1, figsize=(5, 3), dpi=100)
        ax = axes[0, 0]
        ax.barh(range(4), [3, 1, 4, 1])
        if fixed:
            _mpl.ticks(ax.yaxis, range(4), ["a", "bb", "ccc", "dddd"], fontsize=7)
            _mpl.ticks(ax.xaxis, [0, 2, 4], ["zero", "two", "four"], rotation=90, fontsize=6)
        else:
            ax.set_yticks(range(4))
            ax.set_yticklabels(["a", "bb", "ccc", "dddd"], fontsize=7)
            ax.set_xticks([0, 2, 4])
            ax.set_xticklabels(["zero", "two", "four"], rotation=90, fontsize=6)
        ax.set_ylim(3.5, -0.5)
        _mpl.save(fig, None)
        return png(fig)
    assert make(True) == make(False)
