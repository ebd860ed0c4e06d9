"""Predicated-on thread instructions (`smsp__thread_inst_executed_pred_on.sum`): a branch ptxas
if-converts issues both sides to every active lane with half of them predicated off, which the
active-lane count alone (`smsp__thread_inst_executed.sum`) reads as 100% SIMT efficiency."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from numba import cuda, float32

import gpusim
import programs
from gpusim.report import render_source_view
from gpusim.report.verdict import line_issues
from teaching_kernels import stencil2d_tiled, stencil_launch

PRED = "smsp__thread_inst_executed_pred_on.sum"


def line_of(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.py_func)
    return first + next(k for k, s in enumerate(lines) if text in s)


@pytest.fixture(scope="module")
def demo():
    c = programs.get("divergence_demo").case("default")
    return c, gpusim.launch(c.kernel, c.grid, c.block, c.args)


@cuda.jit
def halo_copy(x, out):
    tile = cuda.shared.array(34, float32)
    tx = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[tx + 1] = x[i + 1]
    if tx == 0:                                   # one lane of each warp loads the halo
        tile[0] = x[i]
    cuda.syncthreads()
    out[i] = tile[tx] + tile[tx + 1]


def test_if_converted_branch_counts_half_the_lanes_predicated_on(demo):
    c, r = demo
    assert r.sass is not None
    sides = {line_of(c.kernel, "acc = 3 * v + 1"), line_of(c.kernel, "acc = v // 2 - 7")}
    guarded = [(k, ins) for k, ins in enumerate(r.sass.instructions)
               if ins.source_line in sides and ins.predicate]
    assert len(guarded) >= 8                      # ptxas predicated both sides (no branch of their own)
    for k, ins in guarded:                        # each issues to all 32 lanes, 16 of them predicated on
        assert r.sass.thread_inst[k] == 16384
        assert r.sass.thread_inst_pred_on[k] == 8192, ins.text


def test_line_pred_on_efficiency_of_the_lane_parity_branch(demo):
    c, r = demo
    ls = r.lines[line_of(c.kernel, "acc = v // 2 - 7")]
    assert ls.simt_efficiency == 1.0              # every lane active...
    assert ls.metrics[PRED] < 0.6 * ls.metrics["smsp__thread_inst_executed.sum"]
    assert ls.pred_on_efficiency == pytest.approx(ls.metrics[PRED] / (32 * ls.warp_instructions))


def test_kernel_metric_sums_the_instructions(demo):
    _, r = demo
    assert r.metrics[PRED] == int(r.sass.thread_inst_pred_on.sum())
    assert r.metrics[PRED] < r.metrics["smsp__thread_inst_executed.sum"]


def test_unguarded_instructions_count_every_active_lane(demo):
    _, r = demo
    plain = np.array([ins.predicate is None for ins in r.sass.instructions])
    assert (r.sass.thread_inst_pred_on[plain] == r.sass.thread_inst[plain]).all()


def test_bounds_check_exit_is_predicated_off_for_in_range_threads(demo):
    c, r = demo                                   # 16384 threads, all in range: `@P0 EXIT` on for none
    exits = [k for k, ins in enumerate(r.sass.instructions) if ins.base == "EXIT" and ins.predicate]
    assert exits and all(r.sass.thread_inst_pred_on[k] == 0 for k in exits)


def test_branch_taken_lanes_are_its_predicated_on_lanes():
    c = programs.get("stencil_1d").case("default")
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args)
    halo = line_of(c.kernel, "if tid < RADIUS:")
    bras = [k for k, ins in enumerate(r.sass.instructions)
            if ins.base == "BRA" and ins.predicate and ins.source_line == halo]
    assert bras                                   # `@P2 BRA` skips the halo for tid >= 3: 253 of 256 lanes
    blocks = c.grid[0]
    assert [r.sass.thread_inst_pred_on[k] for k in bras] == [blocks * (256 - 3)]


def test_source_view_shows_the_predicated_on_efficiency(demo):
    c, r = demo
    view = render_source_view(r)
    header = next(s for s in view.splitlines() if s.startswith("line"))
    assert header.split()[:7] == ["line", "warp", "inst", "SIMT", "%", "pred", "%"]
    row = next(s for s in view.splitlines() if s.rstrip().endswith("acc = v // 2 - 7"))
    assert row.split()[1:4] == ["5,632", "100.0", "50.0"]


def test_predicated_halo_loads_are_flagged_where_they_are_material():
    r = gpusim.launch(*stencil_launch(stencil2d_tiled))          # untimed: priced by idle issue slots
    halo = line_of(stencil2d_tiled, "tile[ty + 1, BX + 1] = x[i, j + 1]")
    assert r.lines[halo].pred_on_efficiency < 0.05               # one lane in 32 loads the right halo
    assert (halo, "predication") in {(i.line, i.kind) for i in line_issues(r)}
    row = next(s for s in render_source_view(r).splitlines() if s.rstrip().endswith("x[i, j + 1]"))
    assert "2.9!" in row.split()


def test_halo_if_tx_zero_reads_one_lane_in_32():
    x = np.arange(258, dtype=np.float32)
    out = np.zeros(256, np.float32)
    r = gpusim.launch(halo_copy, 8, 32, (x, out))
    assert (out == x[:256] + x[1:257]).all()
    ls = r.lines[line_of(halo_copy, "tile[0] = x[i]")]
    assert ls.pred_on_efficiency < 0.5            # the line's work is one lane's in 32, branch or predicate
