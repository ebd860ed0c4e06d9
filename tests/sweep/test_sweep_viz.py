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
