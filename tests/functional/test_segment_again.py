"""A compiled segment inside a loop keeps its last run (its table, the registers' arrays) so that the
next iteration runs it again without rebuilding the table (`SegmentOp._again`); one outside every
loop runs at most once a warp and keeps nothing (gpusim/functional/fastpath/segments.py sets
`again` from the CFG's back edges)."""
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


def test_only_segments_in_a_loop_keep_their_run():
    (out,), x = run_ptx(LOOP, "k", (1, 1, 1), (64, 1, 1), [np.zeros(64, np.uint32)], core="fast")
    np.testing.assert_array_equal(out, 5 * np.arange(64, dtype=np.uint32))
    segs = {b.index: [op for op in b.ops if type(op) is SegmentOp] for b in x.dk.blocks}
    loop_block = x.dk.cfg.label_block["LOOP"]
    assert all(s.again for s in segs[loop_block]) and segs[loop_block]
    assert not any(s.again for b, ss in segs.items() if b != loop_block for s in ss)
    assert [s for s in segs[loop_block] if s in x.state.segment_runs]       # kept for the next iteration
