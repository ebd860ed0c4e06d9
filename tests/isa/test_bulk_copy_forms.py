"""The forms of cp.async.bulk / cp.async.bulk.tensor (isa.semantics.bulk_copy) and the tensor
operand `[map, {c0, ...}]` of the PTX reader and printer. One property per test."""
import pytest

from isa.errors import UnsupportedInstruction
from isa.parser import parse
from isa.printer import format_instruction
from isa.program import Reg, TensorRef
from isa.semantics import bulk_copy as B


def instr(text: str):
    ptx = f""".version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p)
{{
.reg .b32 %r<8>;
.reg .b64 %rd<4>;
{text}
}}"""
    return parse(ptx).kernel().instructions[0]


LOAD2D = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];"


def test_tensor_operand_is_parsed():
    assert instr(LOAD2D).operands[1] == TensorRef(Reg("%rd1"), (Reg("%r2"), Reg("%r3")))


def test_tensor_operand_prints_back():
    assert format_instruction(instr(LOAD2D)) == LOAD2D


def test_tensor_load_form():
    assert B.bulk_form(instr(LOAD2D)) == B.BulkForm("g2s", 2)


def test_tensor_store_form_with_cache_hint():
    f = B.bulk_form(instr("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group.L2::cache_hint "
                          "[%rd1, {%r2}], [%r1], %rd2;"))
    assert (f.kind, f.rank, f.hint) == ("s2g", 1, True)


def test_multicast_load_form():
    f = B.bulk_form(instr("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                          "[%r1], [%rd1], 64, [%r4], %rs1;".replace("%rs1", "%r5")))
    assert (f.kind, f.multicast) == ("g2s", True)


def test_wait_group_read_form():
    assert B.bulk_form(instr("cp.async.bulk.wait_group.read 2;")) == B.BulkForm("wait", n=2, read=True)


def test_coordinate_count_must_match_the_rank():
    with pytest.raises(UnsupportedInstruction, match="takes 3 coordinates"):
        B.bulk_form(instr(LOAD2D.replace(".2d.", ".3d.")))


@pytest.mark.parametrize("text, words", [
    ("cp.async.bulk.tensor.2d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], "
     "[%r4], {%rs1};".replace("{%rs1}", "{%r5}"), "im2col"),
    ("cp.async.bulk.global.shared::cta.bulk_group.multicast::cluster [%rd1], [%r1], 16, %r5;", "multicast"),
])
def test_unmodelled_forms_are_refused_by_name(text, words):
    with pytest.raises(UnsupportedInstruction, match=words):
        B.bulk_form(instr(text))
