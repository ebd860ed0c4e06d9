"""The PTX -> SASS mapping (gpusim/frontend/sass/mapping.py): what a warp issues for the
PTX it executes, and the SASS instruction counts that follow."""
import json


import numpy as np
import pytest
from numba import cuda, float32

import gpusim
import programs
from gpusim.frontend import sass
from gpusim.timing.issue_stream import IssueStreams
from gpusim.timing.static import issue_program, sass_classifier
from gpusim.timing.functional_streams import TraceSource
from validate.datadir import DATA_DIR

pytestmark = pytest.mark.skipif(not (sass.have_ptxas() and sass.have_nvdisasm()),
                                reason=f"ptxas/nvdisasm not installed: {sass.INSTALL_HINT}")
H200 = {k["name"]: k for k in json.loads((DATA_DIR / "h200.json")
                                         .read_text())["kernels"]}


def _prepared(kernel, grid, block, args):
    return gpusim.prepare(kernel, grid, block, args, gpu="h200")


def _launch(kernel, grid, block, args):
    return gpusim.launch(kernel, grid, block, args, gpu="h200")


@cuda.jit
def div64(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] // b[i]


@cuda.jit
def fdiv(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] / b[i]


@cuda.jit
def strided_sum(x, out, reps):
    t = cuda.grid(1)
    acc = float32(0)
    for r in range(reps):                        # ptxas unrolls this one-block loop by 4
        acc += x[(t + r * 64) % x.size]
    out[t] = acc


@cuda.jit
def one_lane_store(out):
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = cuda.blockIdx.x


def test_sass_instructions_of_matmul_naive_equal_nsight_on_h200():
    c = programs.get("matmul_naive").case("default")
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h200")
    assert r.metrics["smsp__inst_executed.sum"] == H200["matmul_naive/default"]["metrics"]["smsp__inst_executed.sum"]


def test_ptx_counts_are_kept_under_a_gpusim_name():
    c = programs.get("vector_add").case("default")
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h200")
    assert r.metrics["gpusim__ptx_inst_executed.sum"] == 18432           # 512 warps x 36 PTX instructions


def test_an_int64_division_issues_the_ptxas_subroutine():
    a = np.arange(1, 33, dtype=np.int64) << 40
    p = _prepared(div64, 1, 32, (a, np.full(32, 3, np.int64), np.zeros(32, np.int64)))
    m = p.sass
    ins = m.listing.instructions
    issued = {ins[i].function for region in m.regions.values() for i in region}
    assert any(f and "div" in f for f in issued)


def test_a_float_division_does_not_issue_its_slow_path():
    p = _prepared(fdiv, 1, 32, (np.ones(32, np.float32), np.ones(32, np.float32), np.zeros(32, np.float32)))
    m = p.sass
    ins = m.listing.instructions
    calls = [ins[i].target for region in m.regions.values() for i in region if ins[i].base == "CALL"]
    assert calls == []


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 13, 64])
def test_an_unrolled_loop_walk_executes_exactly_its_iterations(n):
    p = _prepared(strided_sum, 1, 64, (np.ones(4096, np.float32), np.zeros(64, np.float32), 8))
    m = p.sass
    (h, loop), = m.unrolled.items()
    path = m.walk(h, n)
    done = 0
    for k, first in path:
        assert first == done
        done += min(loop.content[k], n - done)
    assert done == n


def test_ptxas_unrolled_the_strided_loop_by_four():
    p = _prepared(strided_sum, 1, 64, (np.ones(4096, np.float32), np.zeros(64, np.float32), 8))
    (loop,) = p.sass.unrolled.values()
    assert max(loop.content.values()) == 4


def test_unrolled_loop_counts_equal_a_per_warp_replay():
    x = np.random.default_rng(0).random(4096).astype(np.float32)
    p = _prepared(strided_sum, 2, 64, (x, np.zeros(128, np.float32), 37))
    p.run_all(1 << 15)
    inst, _ = p.sass.instruction_counts(p.counters.block_warps, p.counters.block_threads, p.counters.loop_back)
    q = _prepared(strided_sum, 2, 64, (x, np.zeros(128, np.float32), 37))
    prog = issue_program(q.sass, q.decoded, sass_classifier(q.spec))
    issue = IssueStreams(q.sass, prog)
    ts = TraceSource(q, 2, issue)
    replay = sum(len(prog.segments[seg]) for b in range(2) for w in ts.block(b) for seg, _, _ in w.visits)
    assert sum(inst) == replay


def test_lanes_that_leave_by_a_predicated_exit_do_not_execute_the_final_exit():
    r = _launch(one_lane_store, 4, 32, (np.zeros(4, np.int64),))
    ins = r.sass.instructions
    last_exit = max(i for i, x in enumerate(ins) if x.base == "EXIT" and x.predicate is None)
    assert r.sass.thread_inst[last_exit] / r.sass.inst[last_exit] == 1.0      # lane 0 alone


@pytest.mark.parametrize("name", ["vector_add", "histogram_shared", "matmul_tiled", "softmax_rows", "scan_block",
                                  "local_array_sort", "transpose_shared", "reduce_warp_shuffle"])
def test_every_memory_access_lands_on_a_sass_instruction(name):
    c = programs.get(name).case("default")
    p = gpusim.prepare(c.kernel, c.grid, c.block, c.args, gpu="h200", shared_bytes=c.shared_bytes)
    prog = issue_program(p.sass, p.decoded, sass_classifier(p.spec))
    issue = IssueStreams(p.sass, prog)
    ts = TraceSource(p, 8, issue)
    accesses = 0
    with np.errstate(all="ignore"):
        for b in range(min(p.geometry.nblocks, 8)):
            accesses += sum(len(mem) for w in ts.block(b) for _, _, mem in w.visits)
    assert issue.dropped == 0 and accesses > 0
