"""Axis ticks drawn from one Tick each: `flatten(ax)` hides the axes' x and y Axis and adds
an artist that draws them as the Axis would (its locator, formatter, tick style, grid,
label and offset text), moving one Tick along the locations instead of keeping a Tick
artist per location. matplotlib's Axis makes a Tick (three lines and two texts) for
every location and measures them all again to place the title: about 1 ms a tick, most
of a small figure's drawing time. The renderer gets the same calls in the same order
(gridline, tick marks, label of each tick, then the axis label), so the pixels are the
same.

Handled: an x axis labelled at the bottom and a y axis labelled at the left (every
figure of `gpusim.viz`); an Axis labelled at the top or right, or whose label was placed
by hand, is left to matplotlib. The Tick objects stay, so `ax.get_xticklabels()`,
`ax.tick_params(...)` and `ax.set_xticks(...)` work as before.

Imports matplotlib: import this module only where a figure is drawn.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
from matplotlib import transforms
from matplotlib.artist import Artist
from matplotlib.ticker import NullLocator


def flatten(fig) -> None:
    """Draw the ticks of every axes of `fig` with a `FlatTicks` (axes already flat are skipped)."""
    for ax in fig.axes:
        if not any(isinstance(a, FlatTicks) for a in ax.artists):
            axes = [a for a in (ax.xaxis, ax.yaxis) if a.get_visible() and _handled(a)]
            if axes:
                ax.add_artist(FlatTicks(ax, axes))


def _handled(axis) -> bool:
    return axis._autolabelpos and axis.get_label_position() == ("bottom" if axis.axis_name == "x" else "left")


class FlatTicks(Artist):
    """Draws `axes` (Axis objects of `ax`, which it hides) with one Tick per axis and kind."""

    def __init__(self, ax, axes):
        super().__init__()
        self._ax = ax
        self._flat = list(axes)
        self.set_zorder(self._flat[0].get_zorder())
        self.set_figure(ax.get_figure(root=False))
        for axis in self._flat:
            axis.set_visible(False)

    def draw(self, renderer) -> None:
        if not (self.get_visible() and self._ax.axison):
            return
        for axis in self._flat:
            _draw_axis(axis, renderer, draw=True)
        self.stale = False

    def get_window_extent(self, renderer=None):
        """The tick labels, axis labels and offset texts of the axes (for tight bounding boxes)."""
        if renderer is None:
            renderer = self.get_figure(root=True)._get_renderer()
        boxes = [b for axis in self._flat for b in _draw_axis(axis, renderer, draw=False)]
        boxes = [b for b in boxes if b._is_finite()]
        return transforms.Bbox.union(boxes) if boxes else transforms.Bbox.null()

    def get_tightbbox(self, renderer=None):
        return self.get_window_extent(renderer)


def _draw_axis(axis, renderer, draw: bool) -> list:
    """Lay out (and with `draw`, draw) `axis` as `Axis.draw` does; the bounding boxes of its
    tick labels, label and offset text."""
    renderer.open_group(axis.__name__, gid=axis.get_gid()) if draw else None
    labels1, labels2 = [], []
    for major in (True, False):
        locator = axis.get_major_locator() if major else axis.get_minor_locator()
        if isinstance(locator, NullLocator) or not axis._tick_group_visible(
                axis._major_tick_kw if major else axis._minor_tick_kw):
            continue
        locs = axis.get_majorticklocs() if major else axis.get_minorticklocs()
        if len(locs) == 0:
            continue
        texts = (axis.major if major else axis.minor).formatter.format_ticks(locs)
        tick = (axis.get_major_ticks(1) if major else axis.get_minor_ticks(1))[0]
        shown = [(loc, text) for loc, text in zip(_in_view(axis, locs), texts) if loc is not None]
        draw_ticks = draw and tick.get_visible() and shown
        if draw_ticks:
            renderer.open_group(tick.__name__, gid=tick.get_gid())
            _draw_lines(tick, axis.axis_name, [loc for loc, _ in shown], renderer)
        with _layout_once(tick.label1), _layout_once(tick.label2):
            for loc, text in shown:
                tick.update_position(loc)
                tick.label1.set_text(text)
                tick.label2.set_text(text)
                for label, boxes in ((tick.label1, labels1), (tick.label2, labels2)):
                    if label.get_visible() and label.get_in_layout():
                        boxes.append(label.get_window_extent(renderer))
                if draw_ticks:
                    tick.label1.draw(renderer)
                    tick.label2.draw(renderer)
        if draw_ticks:
            renderer.close_group(tick.__name__)
    dpi = axis.get_figure(root=True).dpi
    x, y = axis.label.get_position()
    if axis.axis_name == "x":
        box = transforms.Bbox.union([*labels1, axis.axes.spines.get("bottom", axis.axes).get_window_extent()])
        axis.label.set_position((x, box.y0 - axis.labelpad * dpi / 72))
    else:
        box = transforms.Bbox.union([*labels1, axis.axes.spines.get("left", axis.axes).get_window_extent()])
        axis.label.set_position((box.x0 - axis.labelpad * dpi / 72, y))
    offset = axis.major.formatter.get_offset()
    axis._update_offset_text_position(labels1, labels2)
    axis.offsetText.set_text(offset)
    if draw:
        axis.label.draw(renderer)
        axis.offsetText.draw(renderer)
        renderer.close_group(axis.__name__)
    out = labels1 + labels2
    if axis.label.get_visible() and axis.label.get_text():
        out.append(axis.label.get_window_extent(renderer))
    if offset and axis.offsetText.get_visible():
        out.append(axis.offsetText.get_window_extent(renderer))
    return out


def _draw_lines(tick, axis_name: str, locs: list, renderer) -> None:
    """The grid lines, then the tick marks, of every location in `locs`: `tick`'s own lines
    drawn once each through all of them (grid segments split by NaN, marks as markers),
    where Tick.draw draws the three lines once per location. Grid lines lie inside the
    axes and marks outside, under no label, so the order changes no pixel."""
    pos = 0 if axis_name == "x" else 1
    for line in (tick.gridline, tick.tick1line, tick.tick2line):
        if not line.get_visible():
            continue
        old = line.get_data(orig=True)
        other = np.asarray(old[1 - pos], float).ravel()
        n, k = len(locs), len(other)
        if k > 1:                                       # a segment per location, NaN between them
            along = np.repeat(np.asarray(locs, float), k + 1).reshape(n, k + 1)
            along[:, k] = np.nan
            across = np.tile(np.r_[other, np.nan], n)
            along = along.ravel()
        else:
            along, across = np.asarray(locs, float), np.full(n, other[0] if k else 0.0)
        line.set_data((along, across) if pos == 0 else (across, along))
        line.draw(renderer)
        line.set_data(*old)


@contextmanager
def _layout_once(text):
    """While inside: `text` (a tick label, moved along and given each label in turn) lays
    out each string once, for its bounding box and its drawing alike (`Text._get_layout`
    depends on the string and the text's style, not on its position; a fifth of the ticks' cost)."""
    own = type(text)._get_layout
    last = [None, None]

    def layout(renderer):
        key = (text.get_text(), id(renderer))
        if last[0] != key:
            last[:] = key, own(text, renderer)
        return last[1]
    text._get_layout = layout
    try:
        yield
    finally:
        del text._get_layout


def _in_view(axis, locs):
    """Each of `locs`, or None where it falls outside the view (as `Axis._update_ticks` decides)."""
    lo, hi = sorted(axis.get_view_interval())
    tr = axis.get_transform()
    a, b = sorted(tr.transform([lo, hi]))
    tol = 1e-10 * (b - a)
    out = []
    for loc in locs:
        try:
            t = tr.transform(loc)
        except AssertionError:
            out.append(None)
            continue
        out.append(loc if a - tol <= t <= b + tol else None)
    return out
