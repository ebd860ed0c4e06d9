"""Which compiled segments go through LLVM's optimising pipeline (segments.variant): a step of many
lanes, or a long segment on a small step (lanes times instructions: `VECTOR_LANE_OPS`)."""
import numpy as np

from gpusim.functional.fastpath import segments
from ptx_harness import run_ptx

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"
# two ALU runs over 64 threads split by a store: 2 instructions, then 8
TWO = HEAD + """.visible .entry two_k(.param .u64 pout)
{
.reg .b32 %tx, %a, %b;
.reg .b64 %d, %o;
ld.param.u64 %d, [pout];
mov.u32 %tx, %tid.x;
mul.wide.u32 %o, %tx, 8; add.s64 %d, %d, %o;
st.global.u32 [%d], %tx;
add.u32 %a, %tx, 1; mul.lo.u32 %a, %a, 3; add.u32 %a, %a, 7; xor.b32 %a, %a, 5;
mul.lo.u32 %b, %a, %a; add.u32 %b, %b, %tx; shl.b32 %b, %b, 1; sub.u32 %b, %b, %a;
st.global.u32 [%d+4], %b;
ret;
}
"""


def test_only_the_segment_with_enough_lane_instructions_goes_through_the_optimising_pipeline(monkeypatch):
    monkeypatch.setattr(segments, "COMPILE_AFTER", 0)
    monkeypatch.setattr(segments, "VECTOR_LANE_OPS", 64 * 8)       # 64 lanes x 8 instructions
    monkeypatch.setenv("GPUSIM_DISK_CACHE", "0")
    sizes = []
    optimised = segments._optimised
    monkeypatch.setattr(segments, "_optimised", lambda mod: sizes.append(str(mod).count(" mul ")) or optimised(mod))
    (out,), _ = run_ptx(TWO, "two_k", (1, 1, 1), (64, 1, 1), [np.zeros(128, np.uint32)], core="fast")
    t = np.arange(64, dtype=np.uint32)
    a = ((t + 1) * 3 + 7) ^ 5
    assert out[0::2].tolist() == t.tolist() and out[1::2].tolist() == ((a * a + t) * 2 - a).tolist()
    assert len(sizes) == 1 and sizes[0] >= 2           # the 8-instruction segment (its two multiplies) alone
