"""gpusim.viz.sweep draws what the table holds: one line per program, one heatmap cell per
(x, y) pair carrying its value."""
import pandas as pd

from gpusim.viz.sweep import heatmap, lines, plot_sweep

TIME = "gpu__time_duration.sum"


def _table():
    rows = []
    for prog, k in (("a", 1.0), ("b", 2.0)):
        for bw in (1000.0, 2000.0, 4000.0):
            for sms in (66, 132):
                rows.append({"program": prog, "size": "default", "hbm.bandwidth_GBps": bw, "sm_count": sms,
                             TIME: k * 1e6 / bw * 132 / sms})
    return pd.DataFrame(rows)


def test_lines_one_per_program_and_other_varied_value(tmp_path):
    df = _table()
    df.attrs["varied"] = ["hbm.bandwidth_GBps", "sm_count"]
    fig = lines(df, "hbm.bandwidth_GBps", path=tmp_path / "l.png")
    ax = fig.axes[0]
    assert len(ax.lines) == 4                                  # 2 programs x 2 SM counts
    first = ax.lines[0]
    assert list(first.get_xdata()) == [1000.0, 2000.0, 4000.0]
    assert abs(first.get_ydata()[0] - 2.0) < 1e-9              # 1e6 / 1000 * 132 / 66 ns = 2 us
    assert (tmp_path / "l.png").stat().st_size > 0


def test_heatmap_cells_hold_the_values_one_panel_per_program(tmp_path):
    fig = heatmap(_table(), "hbm.bandwidth_GBps", "sm_count", path=tmp_path / "h.png")
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 2
    img = panels[1].images[0].get_array()
    assert img.shape == (2, 3)
    assert abs(img[0, 0] - 4.0) < 1e-9                         # program b, 66 SMs, 1000 GB/s: 4 us


def test_plot_sweep_picks_a_heatmap_for_two_fields_and_lines_for_one(tmp_path):
    df = _table()
    assert any(ax.images for ax in plot_sweep(df, ["hbm.bandwidth_GBps", "sm_count"]).axes)
    one = df[df.sm_count == 132]
    assert not any(ax.images for ax in plot_sweep(one, ["hbm.bandwidth_GBps", "sm_count"]).axes)


def _drawn_boxes(fig):
    """Every piece of text the PNG shows, as (what, bbox) in pixels, after an Agg draw."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from gpusim.viz._ticks import FlatTicks
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    r = canvas.get_renderer()
    out = []
    for ax in fig.axes:
        for a in ax.artists:
            if isinstance(a, FlatTicks):
                out.append((f"ticks of {ax.get_label() or ax.get_title()}", a.get_window_extent(r)))
        if ax.get_title():
            out.append((f"title {ax.get_title()}", ax.title.get_window_extent(r)))
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_visible():
                out.append((f"axis of {ax.get_label()}", axis.get_tightbbox(r)))
    return out, fig.bbox


def _labelled(fig):
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            continue
        assert ax.get_xlabel() and ax.get_ylabel()
        assert ax.xaxis.get_major_locator()() is not None


def test_lines_show_tick_labels_and_axis_titles_inside_the_png():
    df = _table()
    fig = lines(df, "hbm.bandwidth_GBps")
    _labelled(fig)
    boxes, canvas = _drawn_boxes(fig)
    ticks = [b for what, b in boxes if what.startswith("ticks")]
    assert ticks and all(b.width > 0 for b in ticks)
    for what, b in boxes:
        assert b.x0 >= -1 and b.y0 >= -1 and b.x1 <= canvas.x1 + 1 and b.y1 <= canvas.y1 + 1, what


def test_heatmap_panels_labels_stay_clear_of_the_colorbars():
    fig = heatmap(_table(), "hbm.bandwidth_GBps", "sm_count")
    _labelled(fig)
    boxes, canvas = _drawn_boxes(fig)
    for what, b in boxes:
        assert b.x0 >= -1 and b.y0 >= -1 and b.x1 <= canvas.x1 + 1 and b.y1 <= canvas.y1 + 1, what
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    r = FigureCanvasAgg(fig).get_renderer()
    bar_boxes = [ax.get_tightbbox(r) for ax in bars]
    titles = [b for what, b in boxes if what.startswith("title")]
    ylabels = [ax.yaxis.label.get_window_extent(r) for ax in fig.axes if ax.images]
    for t in titles + ylabels:
        assert not any(t.overlaps(c) for c in bar_boxes)
