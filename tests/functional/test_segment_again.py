"""A compiled segment keeps its run (its table, the registers' arrays) so that it runs again
without rebuilding the table (`SegmentOp._again`): inside a loop, for the next iteration
(gpusim/functional/fastpath/segments.py sets `again` from the CFG's back edges); in a small batch,
whose state the kernel pools (`state.StatePool`), every segment, for the next launch. One outside
every loop of a large batch runs at most once a warp and keeps nothing."""
from __future__ import annotations

import numpy as np
import pytest

from gpusim.functional.fastpath import segments
from gpusim.functional.fastpath.segment_op import SegmentOp
from tests.functional.ptx_harness import run_ptx

LOOP = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pout)
{
.reg .b32 %r<10>; .reg .b64 %rd<5>; .reg .pred %p<2>;
ld.param.u64 %rd1, [pout];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
mov.u32 %r2, 0;
mov.u32 %r3, 0;
LOOP:
add.u32 %r2, %r2, %r1;
add.u32 %r3, %r3, 1;
setp.lt.u32 %p1, %r3, 5;
@%p1 bra LOOP;
st.global.u32 [%rd3], %r2;
ret;
}
"""


@pytest.fixture(autouse=True)
def compile_at_once(monkeypatch):
    monkeypatch.setattr(segments, "COMPILE_AFTER", 0)


def _kept(x) -> set:
    return {seg for seg, _ in x.state.segment_runs}


def test_a_small_batch_keeps_every_segment_run():
    (out,), x = run_ptx(LOOP, "k", (1, 1, 1), (64, 1, 1), [np.zeros(64, np.uint32)], core="fast")
    np.testing.assert_array_equal(out, 5 * np.arange(64, dtype=np.uint32))
    segs = {b.index: [op for op in b.ops if type(op) is SegmentOp] for b in x.dk.blocks}
    loop_block = x.dk.cfg.label_block["LOOP"]
    assert all(s.again for s in segs[loop_block]) and segs[loop_block]
    assert not any(s.again for b, ss in segs.items() if b != loop_block for s in ss)
    assert x.state.pool_key is not None
    assert _kept(x) == {s for ss in segs.values() for s in ss}     # pooled: kept for the next launch too


def test_only_segments_in_a_loop_keep_their_run_in_a_large_batch():
    n = 1024 * 2                                 # 2048 lanes: more than a pooled state holds
    (out,), x = run_ptx(LOOP, "k", (2, 1, 1), (1024, 1, 1), [np.zeros(n, np.uint32)], core="fast")
    np.testing.assert_array_equal(out[:1024], 5 * np.arange(1024, dtype=np.uint32))
    segs = {b.index: [op for op in b.ops if type(op) is SegmentOp] for b in x.dk.blocks}
    loop_block = x.dk.cfg.label_block["LOOP"]
    assert x.state.pool_key is None
    assert _kept(x) == set(segs[loop_block])


SCALE = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout, .param .u32 c)
{
.reg .b32 %r<10>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [pin];
ld.param.u64 %rd2, [pout];
ld.param.u32 %r5, [c];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd4, %rd1, %rd3;
add.s64 %rd5, %rd2, %rd3;
ld.global.u32 %r2, [%rd4];
mul.lo.u32 %r3, %r2, 3;
add.u32 %r4, %r3, %r5;
st.global.u32 [%rd5], %r4;
ret;
}
"""


def test_the_next_launch_runs_its_segments_again_with_its_own_values(again_results):
    """A small kernel launched again finds its pooled state: its segments run through `_again`
    (no table rebuilt), on the new launch's inputs and parameter."""
    import gpusim                                # here: the public launch, as a user launches twice
    hits = again_results
    src = gpusim.PtxSource(SCALE, "k")
    rng = np.random.default_rng(1)
    for launch in range(3):
        a = rng.integers(0, 1 << 20, 96, dtype=np.uint32)
        out = np.zeros(96, np.uint32)
        hits.clear()
        gpusim.launch(src, (1,), (96,), (a, out, np.uint32(7 + launch)), workers=1)
        np.testing.assert_array_equal(out, a * 3 + np.uint32(7 + launch))
        if launch:
            assert hits and all(hits)
