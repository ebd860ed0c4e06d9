"""Ladders: a family's members side by side; the data are the Results' own metrics."""
import pytest

import gpusim
import programs
from gpusim.cli.program_args import FAMILY_ORDER
from gpusim.viz import ladder

REDUCE = FAMILY_ORDER["reduce"]
SHARED = ("ld", "st")


@pytest.fixture(scope="module")
def reduce_results():
    out = {}
    for name in REDUCE:
        c = programs.get(name).case("tiny")
        out[name] = gpusim.launch(c.kernel, c.grid, c.block, c.args, timing=True, shared_bytes=c.shared_bytes)
    return out


def test_ladder_times_are_each_results_gpu_time_duration(reduce_results):
    d = ladder.ladder(reduce_results, family="reduce")
    assert d.time_ns == tuple(reduce_results[n].metrics["gpu__time_duration.sum"] for n in REDUCE)
    assert d.speedup[0] == 1.0 and d.speedup[-1] == d.time_ns[0] / d.time_ns[-1]


def test_ladder_counters_are_each_results_metrics(reduce_results):
    d = ladder.ladder(reduce_results, family="reduce")
    for k, name in enumerate(REDUCE):
        m = reduce_results[name].metrics
        assert d.warp_instructions[k] == m["smsp__inst_executed.sum"]
        assert d.shared_wavefronts[k] == sum(m[f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{o}.sum"]
                                             for o in SHARED)
        assert d.bank_conflicts[k] == sum(m[f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{o}.sum"]
                                          for o in SHARED)
        sectors = sum(m[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{o}.sum"] for o in ("ld", "st", "atom", "red"))
        requests = sum(m[f"l1tex__t_requests_pipe_lsu_mem_global_op_{o}.sum"] for o in ("ld", "st", "atom", "red"))
        assert d.sectors_per_request[k] == sectors / requests
        assert d.simt_efficiency[k] == m["smsp__thread_inst_executed.sum"] / (32 * m["smsp__inst_executed.sum"])
    assert d.bank_conflicts[REDUCE.index("reduce_interleaved_strided")] > 0          # the strided rung's lesson
    assert d.warp_instructions[-1] < d.warp_instructions[0] / 5                       # the ladder climbs


def test_bars_are_in_the_given_order(reduce_results):
    order = list(reversed(REDUCE))
    d = ladder.ladder({n: reduce_results[n] for n in order}, family="reduce")
    assert d.programs == tuple(order)
    top = ladder.plot(d).axes[-1]                          # the time panel (added last, spanning the top row)
    heights = [b.get_height() for b in top.patches]
    assert heights == pytest.approx([reduce_results[n].metrics["gpu__time_duration.sum"] / 1e3 for n in order])
    assert [t.get_text() for t in top.get_xticklabels()] == [f"{k + 1}. {n[len('reduce_'):]}"
                                                             for k, n in enumerate(order)]


def test_every_y_axis_starts_at_zero(reduce_results):
    fig = ladder.plot(ladder.ladder(reduce_results, family="reduce"))
    assert len(fig.axes) == 1 + len(ladder.COUNTERS)
    assert all(ax.get_ylim()[0] == 0 for ax in fig.axes)
    assert fig.axes[-1].get_ylabel() == "predicted time (µs)"


def test_functional_results_give_no_time_but_still_a_figure():
    c = programs.get("transpose_naive").case("small")
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args)
    d = ladder.ladder({"transpose_naive": r, "transpose_naive again": r})
    assert d.time_ns is None and d.speedup is None and d.family == "transpose"
    assert ladder.plot(d).axes[-1].get_ylim()[0] == 0


def test_ladder_writes_a_png(reduce_results, tmp_path):
    out = tmp_path / "reduce_ladder.png"
    ladder.plot(ladder.ladder(reduce_results, family="reduce"), out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
