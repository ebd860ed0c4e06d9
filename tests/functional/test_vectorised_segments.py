"""Compiled segments through LLVM's optimising pipeline (the vectorised lane loop,
`segments.VECTOR_LANES`) give the reference interpreter's outputs and counters, on full spans
and on masked ones (divergent steps), and on a Triton kernel whose registers the segments read
and write in place; a run where two registers share one array takes the reference ops."""
from __future__ import annotations

import numpy as np
import pytest

import gpusim
import programs
from gpusim.functional.fastpath import segments
from gpusim.functional.fastpath.segment_op import SegmentOp
from gpusim.functional.fastpath.segments import FastAluOp


@pytest.fixture(autouse=True)
def vectorise_everything(monkeypatch, tmp_path):
    monkeypatch.setattr(segments, "COMPILE_AFTER", 0)
    monkeypatch.setattr(segments, "VECTOR_LANES", 0)
    monkeypatch.setenv("GPUSIM_DISK_CACHE", "0")


def _run(case, core, **kw):
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args, shared_bytes=case.shared_bytes, core=core,
                      workers=1, **kw)
    return r, [np.array(a, copy=True) for a in case.args if isinstance(a, np.ndarray)]


@pytest.mark.parametrize("name, size, kw", [("divergence_demo", "default", {}),
                                            ("reduce_interleaved_divergent", "tiny", {"batch_lanes": 64}),
                                            ("softmax_rows", "default", {}), ("int64_mix", "default", {})])
def test_vectorised_segments_match_the_reference_core(name, size, kw):
    (r0, out0), (r1, out1) = (_run(programs.get(name).case(size, seed=5), core, **kw) for core in ("reference", "fast"))
    for a, b in zip(out0, out1):
        assert a.tobytes() == b.tobytes()
    assert r0.metrics == r1.metrics
    for k in r0.table:
        assert np.array_equal(r0.table[k], r1.table[k]), k


def test_triton_softmax_with_vectorised_segments_is_bit_exact_to_the_reference_core():
    pytest.importorskip("triton")
    from programs.triton_kernels import softmax
    outs = []
    for core in ("reference", "fast"):
        c = softmax.PROGRAM.case({"rows": 64, "cols": 1000}, seed=1)
        r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", workers=1, core=core, **c.options)
        outs.append((c.args[0].tobytes(), r.metrics))
    assert outs[0] == outs[1]


def test_registers_sharing_an_array_run_the_reference_ops(monkeypatch):
    calls = []
    alu_run = FastAluOp.run
    monkeypatch.setattr(FastAluOp, "run", lambda self, x: (calls.append(self.index), alu_run(self, x)))
    seg_run = SegmentOp.run
    seen = {"plain": 0, "aliased": 0}

    def aliasing(self, x):                     # one run with two loaded registers on one array
        regs = x.state.regs
        arrays = [r for r in self.plan.loads if type(regs[r]) is np.ndarray]
        before = len(calls)
        if len(arrays) >= 2 and not seen["aliased"] and self.by_types:
            regs[arrays[1]] = regs[arrays[0]]
            seg_run(self, x)
            seen["aliased"] = len(calls) - before
            return
        seg_run(self, x)
        if self.by_types and len(calls) == before:
            seen["plain"] += 1
    monkeypatch.setattr(SegmentOp, "run", aliasing)
    c = programs.get("matmul_tiled").case("default", seed=1)
    _run(c, "fast")
    _run(programs.get("matmul_tiled").case("default", seed=1), "fast")
    assert seen["plain"] > 0 and seen["aliased"] > 0


def test_steps_of_whole_warps_run_each_run_of_active_warps_unmasked(monkeypatch):
    """A causal attention's key loop ends a block at a time: the steps after span warps that are
    wholly in or out (`BatchState.warp_runs`), whose runs the segments run without the lane mask.
    Outputs and counters are the reference core's."""
    pytest.importorskip("triton")
    from programs.triton_kernels import flash_attention       # here: a Triton program (an optional extra)
    from gpusim.functional.state import BatchState             # here: the spy's target
    used = []
    runs = BatchState.warp_runs

    def spy(self):
        r = runs(self)
        if r is not None:
            used.append(r)
        return r
    monkeypatch.setattr(BatchState, "warp_runs", spy)
    outs = []
    for core in ("reference", "fast"):
        c = flash_attention.PROGRAM.case({"heads": 2, "n_ctx": 128, "head_dim": 32, "causal": True}, seed=2)
        r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", workers=1, core=core, **c.options)
        outs.append(([a.tobytes() for a in c.args if isinstance(a, np.ndarray)], r.metrics))
    assert outs[0] == outs[1]
    assert any(len(r) >= 1 for r in used)


def test_warp_runs_are_the_active_whole_warps_or_none_for_a_partial_warp():
    from gpusim.functional.state import BatchState            # here: the unit itself
    st = BatchState(16 * 32, [])
    full = 0xFFFFFFFF

    def runs(masks, w0=3):
        st.span(32 * w0, 32 * (w0 + len(masks)), np.ones(32 * len(masks), bool), np.array(masks, np.uint32))
        return st.warp_runs()
    assert runs([full, 0, full, full, 0]) == ((96, 32), (160, 64))
    assert runs([0, full]) == ((128, 32),)
    assert runs([0, 0]) == ()
    assert runs([full, 0x0000FFFF]) is None


def test_a_segment_run_again_on_the_same_registers_reuses_its_table(again_results):
    """A loop's segments run again with every register holding the object it held after the last
    run (`SegmentOp._again`: the table as it is, uniform inputs rewritten): a reduction whose loop
    counter is a uniform register the segment reads and writes gives the reference core's outputs
    and counters, with the table reused."""
    (r0, out0), (r1, out1) = (_run(programs.get("reduce_first_add").case("default", seed=4), core)
                              for core in ("reference", "fast"))
    assert [a.tobytes() for a in out0] == [b.tobytes() for b in out1]
    assert r0.metrics == r1.metrics
    assert any(again_results)
