"""The verdict of a timed result in estimated time saved (Nsight's "Est. Speedup"),
checked against the timing model's own counterfactual: the same work without the waste."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import gpusim
import programs
from gpusim.report import render_source_view
from gpusim.report.verdict import line_issues
from teaching_kernels import stencil2d, stencil2d_tiled, stencil_launch, strided_copy, trip_loop

pytestmark = pytest.mark.slow


def line_of(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.py_func)
    return first + next(k for k, s in enumerate(lines) if text in s)


def timed(name: str, **params):
    spec = programs.get(name)
    c = spec.case(dict(spec.sizes["default"], **params))
    return gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes, timing=True)


def time_of(r) -> float:
    return r.metrics["gpu__time_duration.sum"]


def saved(r, kind: str) -> float:
    return sum(i.saved_pct for i in line_issues(r) if i.kind == kind)


@pytest.fixture(scope="module")
def transposes():
    return timed("transpose_shared"), timed("transpose_padded")


def test_32_way_conflict_is_priced_at_what_padding_gains(transposes):
    shared, padded = transposes
    gain = 1 - time_of(padded) / time_of(shared)           # 14.6% at the default size
    first = line_issues(shared)[0]
    assert first.kind == "bank" and "32-way" in first.headline
    assert first.saved_pct == pytest.approx(gain, abs=0.04)
    assert "est. time saved" in first.detail and "SM-cycles" not in first.detail


def test_2d_tile_is_told_to_pad_its_rows(transposes):
    assert "from [32][32] to [32][33]" in line_issues(transposes[0])[0].fix


def test_a_conflict_that_costs_no_time_is_not_flagged():
    two, one = timed("bank_conflict_demo", stride=2), timed("bank_conflict_demo", stride=1)
    assert two.metrics["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] > 0
    assert time_of(two) == pytest.approx(time_of(one), rel=0.01)    # the 2-way conflict hides behind issue
    assert "bank" not in {i.kind for i in line_issues(two)}
    assert "bank" in {i.kind for i in line_issues(timed("bank_conflict_demo", stride=32))}


def test_1d_array_gets_sequential_addressing_not_row_padding():
    r = timed("reduce_interleaved_strided")
    bank = [i for i in line_issues(r) if i.kind == "bank"]
    assert bank and all("[32][33]" not in i.fix and "sequential addressing" in i.fix for i in bank)


def test_barrier_stalls_are_a_verdict():
    r = timed("reduce_interleaved_strided")                  # warps wait at syncthreads ~39% of their cycles
    (b,) = [i for i in line_issues(r) if i.kind == "barrier"]
    sync = line_of(programs.get("reduce_interleaved_strided").case().kernel, "cuda.syncthreads()")
    assert b.line == sync and 0.15 < b.saved_pct < 0.5
    assert "barrier stalls" in b.headline


def test_uncoalesced_copy_is_priced_at_what_a_contiguous_copy_gains():
    n = 1 << 17                # at 1 << 16 the kernel's fixed end (its last lines' waits) is a quarter of it
    a = np.arange(8 * n, dtype=np.float32)
    strided = gpusim.launch(strided_copy, n // 256, 256, (a, np.zeros(n, np.float32), 8), timing=True)
    dense = gpusim.launch(strided_copy, n // 256, 256, (a, np.zeros(n, np.float32), 1), timing=True)
    gain = 1 - time_of(dense) / time_of(strided)
    assert saved(strided, "uncoalesced") == pytest.approx(gain, abs=0.07)
    assert "consecutive threads access consecutive elements" in line_issues(strided)[0].fix


def test_divergent_trip_counts_are_priced_near_what_sorting_them_gains():
    n = 1 << 16
    trips = np.random.default_rng(0).integers(0, 64, n).astype(np.int32)
    mixed = gpusim.launch(trip_loop, n // 256, 256, (trips, np.zeros(n, np.int32)), timing=True)
    sorted_ = gpusim.launch(trip_loop, n // 256, 256, (np.sort(trips), np.zeros(n, np.int32)), timing=True)
    gain = 1 - time_of(sorted_) / time_of(mixed)             # the same work, warps of equal trip counts
    est = saved(mixed, "divergence")
    assert 0.6 * gain < est < 1.2 * gain


def test_tiled_stencils_instruction_overhead_is_a_verdict():
    tiled = gpusim.launch(*stencil_launch(stencil2d_tiled), timing=True)
    naive = gpusim.launch(*stencil_launch(stencil2d), timing=True)
    ratio = tiled.metrics["smsp__inst_executed.sum"] / naive.metrics["smsp__inst_executed.sum"]
    assert ratio > 1.8 and time_of(tiled) > time_of(naive)
    over = [i for i in line_issues(tiled) if i.kind == "overhead"]
    assert over and over[0].saved_pct >= 0.05
    assert saved(naive, "overhead") < over[0].saved_pct


def test_nothing_flagged_saves_less_than_two_percent():
    for r in (timed("transpose_naive"), timed("divergence_demo"), timed("histogram_global")):
        issues = line_issues(r)
        assert issues and all(i.saved_pct >= 0.02 for i in issues)
        assert all(a.score >= b.score for a, b in zip(issues, issues[1:]))


def test_the_view_prints_time_saved_for_a_timed_run(transposes):
    verdict = " ".join(render_source_view(transposes[0]).split("verdict:")[1].split())
    assert "est. time saved 1" in verdict
