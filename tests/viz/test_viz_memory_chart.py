"""The memory chart: requests, sectors, hit rates and bytes per level of one launch, from
its Result (text in the source view, a figure for --plot and --html)."""
from __future__ import annotations

import pytest

import gpusim
import programs
from gpusim.report import render_source_view
from gpusim.timing.engine import TimingOptions
from gpusim.viz import FIGURES, memory_chart
from teaching_stencil import stencil_launch
from validate.datadir import DATA_DIR


@pytest.fixture(scope="module")
def naive():
    c = programs.get("transpose_naive").case("default")
    return gpusim.launch(c.kernel, c.grid, c.block, c.args, timing=True)


def test_flows_are_the_kernels_requests_and_sectors(naive):
    c = memory_chart.memory_chart(naive)
    by = {f.what: f for f in c.flows}
    assert (by["global loads"].requests, by["global loads"].sectors) == (6144, 24576)
    assert (by["global stores"].requests, by["global stores"].sectors) == (6144, 196608)
    assert c.l2_hit_rate == naive.metrics["lts__t_sector_hit_rate.pct"]
    assert c.dram_read_bytes == naive.metrics["dram__bytes_read.sum"] == 786432    # the 768 KiB input, once
    assert c.l1_read_bytes == naive.metrics["l1tex__m_xbar2l1tex_read_bytes.sum"] > 0


def test_l1_hits_are_counted_for_a_stencil():
    r = gpusim.launch(*stencil_launch(), timing=True, timing_options=TimingOptions(mode="full"))
    c = memory_chart.memory_chart(r)
    assert c.l1_hit_rate > 30                    # neighbours' elements: the 5-point reuse the L1 catches
    assert c.note == "" and c.dram_read_bytes == 256 * 512 * 4


def test_a_sampled_launch_says_its_counts_are_scaled():
    r = gpusim.launch(*stencil_launch(), timing=True)
    c = memory_chart.memory_chart(r)
    assert r.metrics["timing__mode"] == "sampled" and c.note.startswith("sampled:")
    assert "--mode full" in c.note


def test_the_source_view_shows_the_chart(naive):
    head = render_source_view(naive).split("\n\n")[0]
    assert "memory: L1 loads 6,144 req / 24,576 sectors (0.0% hit); stores 6,144 req / 196,608 sectors" in head
    assert "DRAM 786.43 KB read" in head


def test_it_is_a_figure_of_the_run(naive, tmp_path):
    assert "memory_chart" in FIGURES
    fig = memory_chart.plot(memory_chart.memory_chart(naive), tmp_path / "m.png")
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert "global loads: 6,144 req" in texts and "0.0% of load\nsectors hit" in texts
    assert (tmp_path / "m.png").stat().st_size > 10_000


@pytest.mark.slow
@pytest.mark.parametrize("name,measured", [("matmul_naive", 87.5), ("stencil_1d", 21.4), ("softmax_rows", 72.0)])
def test_l1_load_hit_rate_is_nsights_on_the_committed_h200_data(name, measured):
    """data/measurements/h200.json (default sizes): l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum over
    the load sectors. A sector joining a fill in flight is a hit (as misses: 25.0%, 3.8%, 62.9%)."""
    import json
    data = json.loads((DATA_DIR / "h200.json").read_text())
    k = next(k for k in data["kernels"] if k.get("program") == name and k.get("size") == "default")
    m = k["metrics"]
    assert 100 * m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"] / \
        m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == pytest.approx(measured, abs=0.05)
    c = programs.get(name).case("default")
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h200", timing=True, shared_bytes=c.shared_bytes,
                      timing_options=TimingOptions(mode="full"))
    assert memory_chart.memory_chart(r).l1_hit_rate == pytest.approx(measured, abs=1.0)
