"""The fast functional core (gpusim/functional/fastpath) against the reference interpreter:
identical outputs, counters, step records, errors and sanitizer findings. Segments are
compiled at once here (COMPILE_AFTER = 0), so the compiled code runs even on small launches."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gpusim
import programs
from gpusim.errors import GpusimError
from gpusim.functional.fastpath import segments
from gpusim.functional.fastpath.segment_op import SegmentOp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sanitizer"))
import buggy_kernels as bk  # noqa: E402


@pytest.fixture(autouse=True)
def compile_at_once(monkeypatch):
    monkeypatch.setattr(segments, "COMPILE_AFTER", 0)


def run(case, core, **kw):
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args, shared_bytes=case.shared_bytes, core=core, **kw)
    return r, [np.array(a, copy=True) for a in case.args if isinstance(a, np.ndarray)]


def assert_same(name, size="default", **kw):
    (r0, out0), (r1, out1) = (run(programs.get(name).case(size, seed=3), core, **kw) for core in ("reference", "fast"))
    for k, (a, b) in enumerate(zip(out0, out1)):
        assert a.tobytes() == b.tobytes(), f"{name}: argument {k} differs"
    assert r0.metrics == r1.metrics
    assert r0.table.keys() == r1.table.keys()
    for k in r0.table:
        assert np.array_equal(r0.table[k], r1.table[k]), f"{name}: per-instruction {k} differs"
    return r1


@pytest.mark.slow
@pytest.mark.parametrize("name", list(programs.PROGRAMS))
def test_program_default_case_is_identical_in_both_cores(name):
    assert_same(name)


def test_compiled_segments_run_in_the_fast_core():
    c = programs.get("transpose_shared").case("default")
    p = gpusim.prepare(c.kernel, c.grid, c.block, c.args, core="fast")
    p.run_all(1 << 15)
    segs = [op for b in p.decoded.blocks for op in b.ops if isinstance(op, SegmentOp)]
    compiled = [s for s in segs if s.variants]
    assert len(segs) >= 10 and len(compiled) == len(segs)


@pytest.mark.slow
def test_partial_spans_of_small_batches_are_identical():
    """batch_lanes=64: one block a batch, whose divergent steps run on spans with masks."""
    assert_same("reduce_interleaved_divergent", "tiny", batch_lanes=64)


def test_divergent_program_is_identical_with_timing():
    r = assert_same("divergence_demo", timing=True)
    assert r.metrics["gpu__time_duration.sum"] > 0


def step_records(core):
    c = programs.get("transpose_padded").case("small", seed=1)
    p = gpusim.prepare(c.kernel, c.grid, c.block, c.args, core=core)
    ex = p.batch(0, 4)
    out = []
    with np.errstate(all="ignore"):
        while (rec := ex.step()) is not None:
            out.append((rec.block, rec.warps.tolist(), rec.masks.tolist(),
                        [(a.instr, a.space, a.lanes.tolist(), a.offsets.dtype.str, a.offsets.tolist())
                         for a in rec.accesses]))
    return out


def test_step_records_with_accesses_are_identical():
    """What the timing model consumes: per step the block, warps, masks and every access."""
    ref, fast = step_records("reference"), step_records("fast")
    assert len(ref) > 10 and any(r[3] for r in ref)
    assert fast == ref


def error_of(core, kernel, grid, block, args):
    with pytest.raises(GpusimError) as e:
        gpusim.launch(kernel, grid, block, args, core=core)
    return str(e.value)


def test_out_of_bounds_error_is_the_same_message():
    msg = error_of("fast", bk.past_the_end, 1, 128, (np.zeros(100, np.float32),))
    assert "out-of-bounds" in msg
    assert msg == error_of("reference", bk.past_the_end, 1, 128, (np.zeros(100, np.float32),))


def test_misaligned_error_is_the_same_message():
    a = np.zeros(256, np.uint8)
    assert error_of("fast", bk.misaligned, 1, 32, (a,)) == error_of("reference", bk.misaligned, 1, 32, (a,))


def test_sanitizer_findings_are_identical():
    def hazards(core):
        a = np.arange(256, dtype=np.float32)
        out = np.zeros(2, np.float32)
        r = gpusim.launch(bk.tree_reduce_no_sync, 2, bk.TPB, (a, out), check="all", core=core)
        return [(h.tool, h.kind, h.space, h.address, h.lines, h.count) for h in r.hazards], out
    (h0, o0), (h1, o1) = hazards("reference"), hazards("fast")
    assert h0 and h1 == h0 and o1.tobytes() == o0.tobytes()


@cuda.jit
def guarded_mix(x, y, out):
    i = cuda.grid(1)
    a = x[i]
    b = y[i]
    if i % 3 == 0:
        a = a * np.int32(7) + b
    elif i % 3 == 1:
        b = (b >> np.int32(2)) ^ a
    c = a if a > b else b
    out[i] = c - (a & b) + np.int32(cuda.threadIdx.x)


def test_branches_and_selects_on_lane_values_are_identical():
    rng = np.random.default_rng(0)
    x = rng.integers(-1000, 1000, 300).astype(np.int32)
    y = rng.integers(-1000, 1000, 300).astype(np.int32)
    res = []
    for core in ("reference", "fast"):
        out = np.zeros(300, np.int32)
        gpusim.launch(guarded_mix, 3, 100, (x, y, out), core=core)
        res.append(out)
    assert res[0].tobytes() == res[1].tobytes()
    assert res[1].any()


def test_core_name_is_checked():
    with pytest.raises(GpusimError, match="core must be one of"):
        gpusim.launch(guarded_mix, 1, 32, (np.zeros(32, np.int32),) * 3, core="turbo")
