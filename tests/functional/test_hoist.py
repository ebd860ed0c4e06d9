"""The fast core moves ALU instructions up past the memory instructions of their block
(gpusim/functional/fastpath/hoist.py) so that they fuse into fewer compiled segments; the
registers and memory a kernel ends with are the reference core's, on kernels built so that a
wrong move would show: a store reading a register an ALU instruction after it overwrites, an
ALU instruction reading a load's result, and a register a store reads that is dead after the
fused segment. Segments are compiled at once (COMPILE_AFTER = 0)."""
from __future__ import annotations

import numpy as np
import pytest

from gpusim.functional.fastpath import segments
from gpusim.functional.fastpath.segment_op import SegmentOp
from tests.functional.ptx_harness import out_in_kernel, run_ptx



@pytest.fixture(autouse=True)
def compile_at_once(monkeypatch):
    monkeypatch.setattr(segments, "COMPILE_AFTER", 0)


def run(body: str, core: str):
    out = np.zeros(4 * 64, np.uint32)
    inp = np.arange(64, dtype=np.uint32) * 7 + 3
    (o, _), x = run_ptx(out_in_kernel("", "bar.sync 0;\n" + body + "ret;\n"), "k", (1, 1, 1), (64, 1, 1), [out, inp],
                        core=core)
    return o, x


def segments_in_last_block(x) -> int:
    return sum(type(op) is SegmentOp for op in x.dk.blocks[-1].ops)


def test_address_arithmetic_between_stores_fuses_into_one_segment():
    body = """add.u32 %r2, %r1, 1;
st.global.u32 [%rd4], %r2;
add.u32 %r3, %r1, 2;
st.global.u32 [%rd4+256], %r3;
add.u32 %r4, %r1, 3;
st.global.u32 [%rd4+512], %r4;
"""
    o, x = run(body, "fast")
    assert segments_in_last_block(x) == 1
    np.testing.assert_array_equal(o, run(body, "reference")[0])


def test_alu_overwriting_a_register_a_store_reads_stays_after_the_store():
    body = """add.u32 %r2, %r1, 100;
st.global.u32 [%rd4], %r2;
add.u32 %r2, %r1, 200;
st.global.u32 [%rd4+256], %r2;
"""
    o, _ = run(body, "fast")
    t = np.arange(64, dtype=np.uint32)
    np.testing.assert_array_equal(o[:64], t + 100)
    np.testing.assert_array_equal(o[64:128], t + 200)


def test_alu_reading_a_loaded_value_stays_after_the_load():
    body = """add.u32 %r5, %r1, 9;
ld.global.u32 %r2, [%rd5];
add.u32 %r3, %r2, 1;
st.global.u32 [%rd4], %r3;
st.global.u32 [%rd4+256], %r5;
"""
    o, _ = run(body, "fast")
    t = np.arange(64, dtype=np.uint32)
    np.testing.assert_array_equal(o[:64], t * 7 + 4)
    np.testing.assert_array_equal(o[64:128], t + 9)


def test_register_dead_after_the_fused_segment_is_still_stored_for_the_store_before_it():
    # %r2 is read only by the first store; the add after it (into %r6) moves up past that store,
    # so the fused segment ends after %r2's last reader in program order and must still store it
    body = """add.u32 %r2, %r1, 5;
st.global.u32 [%rd4], %r2;
add.u32 %r6, %r1, 6;
st.global.u32 [%rd4+256], %r6;
"""
    o, x = run(body, "fast")
    t = np.arange(64, dtype=np.uint32)
    assert segments_in_last_block(x) == 1
    np.testing.assert_array_equal(o[:64], t + 5)
    np.testing.assert_array_equal(o[64:128], t + 6)
