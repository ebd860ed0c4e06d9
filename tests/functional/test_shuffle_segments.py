"""Warp shuffles compiled inside ALU segments (gpusim/functional/fastpath/shuffle_step.py,
segment_ir.py): a reduction's ALU runs and `shfl.sync`s fuse into one segment, and what the
kernel writes is the reference core's, bit for bit: each shuffle mode, a uniform source, whole
warps masked off, a warp only partly active (the reference runs, and reports what it reports),
and ALU instructions moved above a shuffle that ends the segment. Segments are compiled at
once (COMPILE_AFTER = 0)."""
from __future__ import annotations

import numpy as np
import pytest

from gpusim.errors import GpusimError
from gpusim.functional.fastpath import segments
from gpusim.functional.fastpath.segment_op import SegmentOp
from gpusim.functional.ops import WarpOp
from tests.functional.ptx_harness import out_in_kernel, run_ptx


REDUCE = """mul.f32 %f2, %f1, 0f3F000000;
mov.b32 %r2, %f2;
shfl.sync.bfly.b32 %r3, %r2, 16, 31, -1;
mov.b32 %f3, %r3;
max.f32 %f4, %f2, %f3;
mov.b32 %r4, %f4;
shfl.sync.bfly.b32 %r5, %r4, 1, 31, -1;
mov.b32 %f5, %r5;
add.f32 %f6, %f4, %f5;
st.global.f32 [%rd4], %f6;
"""


@pytest.fixture(autouse=True)
def compile_at_once(monkeypatch):
    monkeypatch.setattr(segments, "COMPILE_AFTER", 0)


def run(body: str, core: str, threads: int = 64):
    out = np.zeros(4 * threads, np.float32)
    inp = ((np.arange(threads, dtype=np.float32) * 1.7) % 13) - 4
    text = out_in_kernel(".reg .f32 %f<20>; .reg .pred %p<4>;",
                         "ld.global.f32 %f1, [%rd5];\nbar.sync 0;\n" + body + "ret;\n")
    (o, _), x = run_ptx(text, "k", (1, 1, 1), (threads, 1, 1), [out, inp], core=core)
    return o, x


def same_as_reference(body: str, threads: int = 64):
    fast, x = run(body, "fast", threads)
    np.testing.assert_array_equal(fast.view(np.uint32), run(body, "reference", threads)[0].view(np.uint32))
    return x


def test_a_butterfly_reduction_is_one_segment():
    x = same_as_reference(REDUCE)
    ops = x.dk.blocks[-1].ops
    assert sum(type(op) is SegmentOp for op in ops) == 1
    assert not any(type(op) is WarpOp for op in ops)


@pytest.mark.parametrize("shfl", ["shfl.sync.down.b32 %r3, %r2, 3, 31, -1;",
                                  "shfl.sync.up.b32 %r3, %r2, 5, 0, -1;",
                                  "shfl.sync.idx.b32 %r3, %r2, 9, 0x181f, -1;",
                                  "shfl.sync.bfly.b32 %r3, %r2, 6, 0x1c07, -1;"])
def test_each_shuffle_mode_reads_the_reference_source_lane(shfl):
    same_as_reference(f"""mul.f32 %f2, %f1, 0f40000000;
mov.b32 %r2, %f2;
{shfl}
add.u32 %r6, %r3, 1;
st.global.u32 [%rd4], %r6;
""")


def test_a_shuffle_of_a_uniform_value_gives_it_to_every_lane():
    same_as_reference("""mov.u32 %r2, 1234567;
shfl.sync.bfly.b32 %r3, %r2, 16, 31, -1;
add.u32 %r6, %r3, %r1;
st.global.u32 [%rd4], %r6;
""")


def test_whole_warps_masked_off_run_compiled_and_match():
    # warp 0 runs the reduction, warp 1 jumps past it: whole warps in or out
    same_as_reference("setp.ge.u32 %p1, %r1, 32;\n@%p1 bra SKIP;\n" + REDUCE + "SKIP:\n")


def test_a_partly_active_warp_reports_what_the_reference_reports():
    body = "setp.ge.u32 %p1, %r1, 48;\n@%p1 bra SKIP;\n" + REDUCE + "SKIP:\n"
    errors = []
    for core in ("fast", "reference"):
        with pytest.raises(GpusimError) as e:
            run(body, core)
        errors.append(str(e.value))
    assert errors[0] == errors[1]


def test_alu_moved_above_a_shuffle_that_ends_the_segment_is_stored():
    # the add into %r6 moves above the shuffle (it reads neither of its registers), so the
    # segment's last op is the shuffle; %r6 is read after the block's fence all the same
    same_as_reference("""mul.f32 %f2, %f1, 0f3F000000;
mov.b32 %r2, %f2;
shfl.sync.idx.b32 %r3, %r2, 0, 31, -1;
fence.proxy.async;
add.u32 %r6, %r1, 5;
st.global.u32 [%rd4], %r3;
st.global.u32 [%rd4+256], %r6;
""")
