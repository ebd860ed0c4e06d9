"""Tensor-core operand layouts (isa.semantics.mma_layout): every fragment map covers its matrix
exactly once, packing round-trips, and the wgmma shared-memory layouts are one-to-one."""
import numpy as np
import pytest

from isa.semantics import mma_layout as L

FRAGS = [("m16n8k16", 16), ("m16n8k8", 16), ("m16n8k32", 8), ("m16n8k16", 8), ("m16n8k8", 32), ("m16n8k4", 32)]


@pytest.mark.parametrize("shape,bits", FRAGS)
@pytest.mark.parametrize("operand", ["a", "b"])
def test_mma_fragment_covers_operand_once(shape, bits, operand):
    m, n, k = L.SHAPES[shape]
    rc = L.frag_map(shape, operand, bits).reshape(-1, 2)
    rows, cols = (m, k) if operand == "a" else (k, n)
    assert len({tuple(x) for x in rc}) == len(rc) == rows * cols


def test_f16_a_register_1_of_lane_5_holds_row_9_cols_2_3():
    # PTX ISA m16n8k16 A: a2,a3 (register 1) at row groupID + 8, cols 2 * threadID_in_group + {0, 1}
    assert L.frag_map("m16n8k16", "a", 16)[5, 1].tolist() == [[9, 2], [9, 3]]


@pytest.mark.parametrize("bits", [16, 32])
def test_accumulator_fragment_16_bit_packs_the_32_bit_order(bits):
    rc = L.frag_map("m16n8k16", "c", bits).reshape(32, -1, 2)
    assert len({tuple(x) for x in rc.reshape(-1, 2)}) == 128
    assert rc[7].tolist() == [[1, 6], [1, 7], [9, 6], [9, 7]]


@pytest.mark.parametrize("n,bits", [(8, 32), (24, 32), (256, 32), (64, 16)])
def test_wgmma_accumulator_covers_m64_by_n_once(n, bits):
    rc = L.wgmma_acc_map(n, bits).reshape(-1, 2)
    assert len({tuple(x) for x in rc}) == len(rc) == 64 * n


def test_pack_unpack_round_trip_8_bit_operand():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (5, 16, 32)).astype(np.uint64)
    f = L.frag_map("m16n8k32", "a", 8)
    regs = L.pack(a, f, 8)
    assert regs.shape == (5, 32, 4)
    assert np.array_equal(L.unpack(regs, f, 8, (16, 32)), a)


@pytest.mark.parametrize("major,swizzle", [("k", s) for s in L.SWIZZLE_WIDTH] + [("mn", s) for s in L.SWIZZLE_WIDTH])
def test_wgmma_smem_layout_is_one_to_one(major, swizzle):
    off, _, _ = L.smem_offsets(64, 16, 16, major, swizzle)
    assert len(set((off // 2).ravel().tolist())) == 64 * 16


def test_descriptor_fields():
    d = L.make_desc(2048, 16, 1024, "128B")
    assert (d & 0x3FFF, (d >> 16) & 0x3FFF, (d >> 32) & 0x3FFF, d >> 62) == (128, 1, 64, 1)
