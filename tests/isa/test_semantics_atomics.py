"""Atomic combining functions (isa.semantics.atomics): what atom/red store, given the old
value. Float edge cases (FTZ on global f32, canonical NaN) were read on an NVIDIA H200."""
import numpy as np
import pytest

from isa.errors import UnsupportedInstruction
from isa.program import Address, Instruction, Reg
from isa.semantics.atomics import ENTRIES

OPS = {e.name: e for e in ENTRIES}


@pytest.fixture(autouse=True)
def _numpy_quiet():
    with np.errstate(all="ignore"):
        yield


def bound(mnemonic: str, n_data: int = 1):
    op, *suffixes = mnemonic.split(".")
    addr = Address(Reg("%rd1"))
    data = tuple(Reg(f"%r{i}") for i in range(n_data))
    ops = (addr,) + data if op == "red" else (Reg("%r9"), addr) + data
    return OPS[op].bind(Instruction(op, tuple(suffixes), ops))


def u32(*v):
    return np.array(v, dtype=np.uint32)


def test_atom_types_put_the_address_first_then_the_data():
    b = bound("atom.global.cas.b64", 2)
    assert (b.dst_types, b.src_types, b.unit) == (("b64",), ("u64", "b64", "b64"), "ldst")


def test_red_has_no_destination():
    assert bound("red.global.add.u32").dst_types == ()


def test_atom_is_a_mem_kind_entry():
    assert {e.kind for e in ENTRIES} == {"mem"}


def test_add_u32_wraps():
    assert bound("atom.add.u32").fn(u32(0xFFFF_FFFF, 5), u32(2, 5)).tolist() == [1, 10]


def test_cas_stores_new_only_where_old_equals_compare():
    out = bound("atom.global.cas.b32", 2).fn(u32(4, 4), u32(4, 5), u32(9, 9))
    assert out.tolist() == [9, 4]


def test_exch_stores_b_as_a_new_array():
    b = u32(7, 8)
    out = bound("atom.exch.b32").fn(u32(1, 2), b)
    assert out.tolist() == [7, 8] and out is not b


def test_inc_wraps_to_zero_at_the_bound():
    # inc(r, s) = r >= s ? 0 : r + 1
    assert bound("atom.inc.u32").fn(u32(0, 4, 5, 9), u32(5, 5, 5, 5)).tolist() == [1, 5, 0, 0]


def test_dec_wraps_to_the_bound_at_zero_or_above_it():
    # dec(r, s) = (r == 0 || r > s) ? s : r - 1
    assert bound("atom.dec.u32").fn(u32(0, 1, 5, 9), u32(5, 5, 5, 5)).tolist() == [5, 0, 4, 5]


def test_max_s32_is_signed_and_max_u32_unsigned():
    s = bound("atom.max.s32").fn(np.array([-1], np.int32), np.array([1], np.int32))
    u = bound("atom.max.u32").fn(u32(0xFFFF_FFFF), u32(1))
    assert (s.tolist(), u.tolist()) == ([1], [0xFFFF_FFFF])


def test_and_or_xor_b64_are_bitwise():
    a, b = np.array([0b1100], np.uint64), np.array([0b1010], np.uint64)
    got = [bound(f"atom.{op}.b64").fn(a, b).tolist() for op in ("and", "or", "xor")]
    assert got == [[0b1000], [0b1110], [0b0110]]


def test_global_f32_add_flushes_subnormals_and_shared_keeps_them():
    old = np.array([0x0001_16C2], np.uint32).view(np.float32)        # 1e-40, subnormal
    assert bound("atom.global.add.f32").fn(old, old).tolist() == [0.0]
    assert bound("atom.shared.add.f32").fn(old, old).view(np.uint32).tolist() == [0x0002_2D84]


def test_f32_add_nan_result_is_the_canonical_nan():
    out = bound("atom.global.add.f32").fn(np.array([np.inf], np.float32), np.array([-np.inf], np.float32))
    assert out.view(np.uint32).tolist() == [0x7FFF_FFFF]


def test_f64_add_rounds_to_nearest_even():
    out = bound("atom.global.add.f64").fn(np.array([1.0]), np.array([2.0 ** -53]))
    assert out.tolist() == [1.0]


def test_f16_add_keeps_subnormals():
    # 2^-24 (0x0001) + 2^-24 = 2^-23 (0x0002)
    out = bound("atom.add.noftz.f16").fn(np.array([0x0001], np.uint16).view(np.float16),
                                         np.array([0x0001], np.uint16).view(np.float16))
    assert out.view(np.uint16).tolist() == [0x0002]


def test_bf16_add_rounds_ties_to_even():
    # 1.0 (0x3F80) + 2^-8 is halfway between 0x3F80 and 0x3F81: ties to even 0x3F80;
    # 0x3F81 + 2^-8 is halfway between 0x3F81 and 0x3F82: ties to even 0x3F82
    b = bound("atom.global.add.noftz.bf16")
    assert b.fn(np.array([0x3F80, 0x3F81], np.uint16), np.array([0x3B80, 0x3B80], np.uint16)).tolist() == \
        [0x3F80, 0x3F82]


def test_f16x2_add_adds_each_half():
    # low: 1.0 + 1.0 = 2.0 (0x4000); high: 2.0 + -2.0 = 0.0
    assert bound("atom.add.noftz.f16x2").fn(u32(0x4000_3C00), u32(0xC000_3C00)).tolist() == [0x0000_4000]


@pytest.mark.parametrize("mnemonic", ["atom.global.min.f32", "atom.global.add.f16", "red.global.cas.b32",
                                      "atom.global.and.u32", "atom.global.inc.u64", "atom.global.cas.b128",
                                      "atom.global.add.L2::cache_hint.u32"])
def test_forms_ptxas_rejects_or_not_modelled_raise(mnemonic):
    with pytest.raises(UnsupportedInstruction):
        bound(mnemonic, 2 if ".cas." in mnemonic else 1)


def test_scalar_and_array_operands_mix():
    f = bound("atom.global.cas.b32", 2).fn
    assert f(u32(3, 4), np.uint32(3), np.uint32(8)).tolist() == [8, 4]
