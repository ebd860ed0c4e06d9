"""Register moves and address conversion (isa.semantics.moves): mov, cvta, isspacep."""
import numpy as np
import pytest

from isa.errors import UnsupportedInstruction
from isa.memory_map import CONST_WINDOW_BASE, GLOBAL_BASE, LOCAL_WINDOW_BASE, PARAM_WINDOW_BASE, \
    SHARED_WINDOW_BASE, WINDOW_BYTES
from isa.program import Imm, Instruction, Reg, Special, Sym, Vector
from isa.semantics.moves import ENTRIES

OPS = {e.name: e for e in ENTRIES}


def bound(mnemonic: str, *operands):
    op, *suffixes = mnemonic.split(".")
    return OPS[op].bind(Instruction(op, tuple(suffixes), operands))


def regs(*names):
    return tuple(Reg(n) for n in names)


def vec(*names):
    return Vector(tuple(Reg(n) for n in names))


# ----------------------------------------------------------------------------- mov
def test_mov_u32_copies_into_a_new_array():
    a = np.array([1, 2, 3], dtype=np.uint32)
    out = bound("mov.u32", *regs("%r1", "%r2")).fn(a)
    assert out.tolist() == [1, 2, 3] and out is not a and not np.shares_memory(out, a)


def test_mov_of_a_special_register_reads_it_as_the_instruction_type():
    b = bound("mov.u32", Reg("%r1"), Special("%tid.x"))
    assert (b.dst_types, b.src_types, b.unit) == (("u32",), ("u32",), "misc")


def test_mov_u64_of_a_symbol_takes_the_address_as_u64():
    b = bound("mov.u64", Reg("%rd1"), Sym("__local_depot0"))
    assert b.src_types == ("u64",) and b.fn(np.uint64(0x40)) == 0x40


def test_mov_pred_of_an_immediate_is_a_bool():
    b = bound("mov.pred", Reg("%p1"), Imm(-1))
    assert b.fn(np.bool_(True)) == np.bool_(True) and b.dst_types == ("pred",)


def test_mov_b64_packs_two_b32_low_element_first():
    b = bound("mov.b64", Reg("%rd1"), vec("%r1", "%r2"))
    out = b.fn(np.array([0x1111_1111], np.uint32), np.array([0x2222_2222], np.uint32))
    assert (b.src_types, out.tolist()) == (("b32", "b32"), [0x2222_2222_1111_1111])


def test_mov_b64_unpacks_into_two_b32_low_element_first():
    b = bound("mov.b64", vec("%r1", "%r2"), Reg("%rd1"))
    lo, hi = b.fn(np.array([0x2222_2222_1111_1111], np.uint64))
    assert (b.dst_types, lo.tolist(), hi.tolist()) == (("b32", "b32"), [0x1111_1111], [0x2222_2222])


def test_mov_b32_unpacks_into_two_b16():
    lo, hi = bound("mov.b32", vec("%rs1", "%rs2"), Reg("%r1")).fn(np.uint32(0xABCD_1234))
    assert (int(lo), int(hi)) == (0x1234, 0xABCD)


def test_mov_b64_packs_four_b16():
    b = bound("mov.b64", Reg("%rd1"), vec("%rs1", "%rs2", "%rs3", "%rs4"))
    parts = [np.array([v], np.uint16) for v in (0x4444, 0x3333, 0x2222, 0x1111)]
    assert b.fn(*parts).tolist() == [0x1111_2222_3333_4444]


def test_mov_b32_packs_four_b8():
    b = bound("mov.b32", Reg("%r1"), vec("%rb1", "%rb2", "%rb3", "%rb4"))
    assert b.fn(*(np.uint8(v) for v in (1, 2, 3, 4))) == 0x0403_0201


def test_mov_b32_unpack_with_a_sink_still_yields_both_values():
    b = bound("mov.b32", Vector((Reg("%rs1"), None)), Reg("%r1"))
    assert len(b.dst_types) == 2 and len(b.fn(np.uint32(7))) == 2


def test_mov_u64_vector_form_is_rejected_like_ptxas():
    with pytest.raises(UnsupportedInstruction):
        bound("mov.u64", Reg("%rd1"), vec("%r1", "%r2"))


def test_mov_f16_is_rejected_like_ptxas():
    with pytest.raises(UnsupportedInstruction):
        bound("mov.f16", *regs("%h1", "%h2"))


# ----------------------------------------------------------------------------- cvta
@pytest.mark.parametrize("space,base", [("shared", SHARED_WINDOW_BASE), ("local", LOCAL_WINDOW_BASE),
                                        ("const", CONST_WINDOW_BASE), ("param", PARAM_WINDOW_BASE)])
def test_cvta_adds_the_window_base_and_cvta_to_subtracts_it(space, base):
    a = np.array([0, 0x40], dtype=np.uint64)
    gen = bound(f"cvta.{space}.u64", *regs("%rd1", "%rd2")).fn(a)
    back = bound(f"cvta.to.{space}.u64", *regs("%rd1", "%rd2")).fn(gen)
    assert gen.tolist() == [base, base + 0x40] and back.tolist() == [0, 0x40]


def test_cvta_to_global_is_the_identity_and_copies():
    a = np.array([GLOBAL_BASE + 8], dtype=np.uint64)
    out = bound("cvta.to.global.u64", *regs("%rd1", "%rd2")).fn(a)
    assert out.tolist() == [GLOBAL_BASE + 8] and out is not a


def test_cvta_shared_cta_is_plain_shared():
    assert bound("cvta.shared::cta.u64", *regs("%rd1", "%rd2")).fn(np.uint64(4)) == SHARED_WINDOW_BASE + 4


def test_cvta_shared_cluster_keeps_the_cluster_rank_bits():
    # a .shared::cluster address (rank 1 + 1 in bits 24..) lives in the shared window too
    a = np.uint64((2 << 24) | 16)
    assert bound("cvta.shared::cluster.u64", *regs("%rd1", "%rd2")).fn(a) == SHARED_WINDOW_BASE + int(a)


def test_cvta_u32_is_unsupported():
    with pytest.raises(UnsupportedInstruction):
        bound("cvta.shared.u32", *regs("%r1", "%r2"))


# ----------------------------------------------------------------------------- isspacep
def test_isspacep_shared_covers_exactly_the_window():
    a = np.array([SHARED_WINDOW_BASE - 1, SHARED_WINDOW_BASE, SHARED_WINDOW_BASE + WINDOW_BYTES - 1,
                  SHARED_WINDOW_BASE + WINDOW_BYTES], dtype=np.uint64)
    assert bound("isspacep.shared", *regs("%p1", "%rd1")).fn(a).tolist() == [False, True, True, False]


def test_isspacep_global_excludes_shared_local_const_and_includes_param():
    a = np.array([GLOBAL_BASE, SHARED_WINDOW_BASE + 4, LOCAL_WINDOW_BASE, CONST_WINDOW_BASE,
                  PARAM_WINDOW_BASE], dtype=np.uint64)
    b = bound("isspacep.global", *regs("%p1", "%rd1"))
    assert (b.dst_types, b.fn(a).tolist()) == (("pred",), [True, False, False, False, True])
