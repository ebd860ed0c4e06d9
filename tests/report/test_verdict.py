"""The verdict (gpusim/report/verdict.py) on real kernels: only material waste is
flagged, never a `def` line, and every kind is ranked by one cost (SM-cycles)."""
from __future__ import annotations

import ast
import inspect

import numpy as np
import pytest
from numba import cuda, float32

import gpusim
import programs
from gpusim.report import render_source_view
from gpusim.report.verdict import Costs, LineFlags, costs_for, flags, line_issues
from gpusim.specs import resolve

TILE = 16


@cuda.jit
def conv3x3(img, w, out):
    tile = cuda.shared.array((18, 18), float32)            # 18 words a row: rows ty and ty + 1 share banks
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    x0 = cuda.blockIdx.x * TILE
    y0 = cuda.blockIdx.y * TILE
    h, wd = img.shape
    for i in range(ty, TILE + 2, TILE):                      # the tile and its halo
        for j in range(tx, TILE + 2, TILE):
            gy = y0 + i - 1
            gx = x0 + j - 1
            v = float32(0)
            if gy >= 0 and gy < h and gx >= 0 and gx < wd:
                v = img[gy, gx]
            tile[i, j] = v
    cuda.syncthreads()
    y = y0 + ty
    x = x0 + tx
    if y < h and x < wd:
        acc = float32(0)
        for dy in range(3):
            for dx in range(3):
                acc += w[dy, dx] * tile[ty + dy, tx + dx]
        out[y, x] = acc


@cuda.jit
def ragged_add(a, b, c):
    i = cuda.grid(1)
    if i < c.size:                     # only the ragged end of the data is masked off
        c[i] = a[i] + b[i]


def source_line(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.py_func)
    return first + next(k for k, s in enumerate(lines) if text in s)


def run_conv(n: int = 64):
    rng = np.random.default_rng(0)
    img = rng.standard_normal((n, n)).astype(np.float32)
    w = rng.standard_normal((3, 3)).astype(np.float32)
    out = np.zeros_like(img)
    grid = ((n + TILE - 1) // TILE, (n + TILE - 1) // TILE)
    return gpusim.launch(conv3x3, grid, (TILE, TILE), (img, w, out))


def run_program(name: str, size=None):
    spec = programs.get(name)
    size = size or next(s for s in ("tiny", "small", "default") if s in spec.sizes)
    c = spec.case(size)
    return gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes)


def def_lines_of(path: str) -> set[int]:
    tree = ast.parse(open(path).read())
    return {f.lineno for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}


@pytest.fixture(scope="module")
def conv():
    return run_conv()


@pytest.fixture(scope="module")
def every_program():
    return {name: run_program(name) for name in programs.PROGRAMS}


def test_a_ragged_bounds_check_at_99_percent_efficiency_is_not_divergence():
    n = 1000                                           # 4 blocks of 256: the last one has 232 threads in range
    a = np.arange(n, dtype=np.float32)
    r = gpusim.launch(ragged_add, (4,), (256,), (a, a, np.zeros(n, np.float32)))
    store = r.lines[source_line(ragged_add, "c[i] = a[i] + b[i]")]
    assert 0.95 < store.simt_efficiency < 1.0          # (3 x 256 + 232) / 1024 = 97.7% of the lanes
    assert not [i for i in line_issues(r) if i.kind in ("divergence", "partial-warp")]
    assert not any(flags(r, ls).divergent for ls in r.lines.values())


def test_int64_mix_at_99_9_percent_efficiency_gets_no_divergence_flag():
    r = run_program("int64_mix")
    assert min(ls.simt_efficiency for ls in r.lines.values() if ls.warp_instructions) > 0.99
    assert line_issues(r) == []


def test_def_line_is_never_flagged_in_any_program(every_program):
    ran_on_def = 0
    for name, r in every_program.items():
        defs = def_lines_of(r.source_file)
        ran_on_def += sum(1 for n in defs if n in r.lines and r.lines[n].warp_instructions)
        assert not [i.line for i in line_issues(r) if i.line in defs], name
        assert all(flags(r, r.lines[n]) == LineFlags() for n in defs if n in r.lines), name
    assert ran_on_def == len(every_program)            # every kernel's def line runs its parameter loads


def test_local_array_inits_on_the_def_line_are_not_flagged(every_program):
    r = every_program["local_array_sort"]
    (d,) = [n for n in def_lines_of(r.source_file) if n in r.lines]
    assert r.lines[d].metrics["l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"] > 0   # st.local lands on it
    assert "local" in {i.kind for i in line_issues(r)} and d not in {i.line for i in line_issues(r)}


def test_conv3x3_with_an_18_wide_tile_lists_its_bank_conflicts(conv):
    read = source_line(conv3x3, "acc += w[dy, dx] * tile[ty + dy, tx + dx]")
    assert conv.lines[read].bank_conflicts == 1152      # 16 blocks x 8 warps x 9 reads, each 2-way
    top = line_issues(conv)[:3]                         # what the source view prints
    assert ("bank", read) in {(i.kind, i.line) for i in top}
    verdict = " ".join(render_source_view(conv).split("verdict:")[1].split())
    assert f"line {read}: 2-way bank conflict" in verdict


def test_conv3x3_ranks_its_bank_conflicts_above_its_halo_divergence(conv):
    kinds = [i.kind for i in line_issues(conv)]
    assert kinds.index("bank") < kinds.index("divergence")        # 1,152 SM-cycles against 630


@pytest.mark.parametrize("name", ["conv", "reduce_interleaved_strided", "local_array_sort", "warp_vote_demo"])
def test_issues_are_ranked_by_score_descending(name, conv, every_program):
    issues = line_issues(conv if name == "conv" else every_program[name])
    assert len(issues) >= 2
    assert all(a.score >= b.score for a, b in zip(issues, issues[1:]))


def test_32_way_conflict_is_ranked_first_and_named_by_degree():
    r = run_program("bank_conflict_demo", {"blocks": 8, "stride": 32, "reps": 4})
    first = line_issues(r)[0]
    assert first.kind == "bank" and first.line == source_line(programs.get("bank_conflict_demo").case().kernel,
                                                              "acc += sh[")
    assert "32-way bank conflict" in first.headline
    assert first.score == 8 * 8 * 4 * 31 * costs_for("h100").wavefront      # 31 extra wavefronts per warp read


def test_scores_are_sm_cycles_of_the_preset():
    h100, spec = costs_for("h100"), resolve("h100")
    assert (h100.issue_slot, h100.wavefront) == (0.25, 1.0)              # 4 schedulers; 1 wavefront per cycle
    per_sm = spec.l2.slices * spec.in_sm_cycles().l2.bandwidth_bytes_per_cycle_per_slice / spec.sm_count
    assert h100.sector == pytest.approx(32 / per_sm) and 0.9 < h100.sector < 1.2    # ~30 B a SM cycle of L2 per SM
    assert costs_for("h100+sm.count=64") == h100 and costs_for("no-such-gpu") == Costs()


def test_partial_last_warp_is_one_launch_item_not_a_flag_on_every_line(every_program):
    r = every_program["warp_vote_demo"]                 # 80 threads per block: the last warp has 16 lanes
    partial = [i for i in line_issues(r) if i.kind == "partial-warp"]
    assert [(i.line, i.headline) for i in partial] == [(0, "launch: 80 threads per block")]
    assert not any(flags(r, ls).divergent for ls in r.lines.values())


def test_privatised_histograms_global_merge_is_not_flagged_but_global_atomics_are(every_program):
    assert "atomics" in {i.kind for i in line_issues(every_program["histogram_global"])}
    assert "atomics" not in {i.kind for i in line_issues(every_program["histogram_shared"])}


def test_misaligned_stencil_load_is_not_uncoalesced(every_program):
    r = every_program["stencil_1d"]                     # x[gi + RADIUS]: 5 sectors per request where 4 would do
    line = source_line(programs.get("stencil_1d").case().kernel, "temp[tid + RADIUS] = x[gi + RADIUS]")
    assert r.lines[line].sectors_per_request == 5.0
    assert not [i for i in line_issues(r) if i.kind == "uncoalesced"]
