"""The parameterised tensor-core arithmetic (isa.semantics.mma_numerics): one property each of
the block-FMA model that the H100/H200 probe data will fit (see docs/tensor_numerics.md)."""
import dataclasses

import numpy as np

from isa.semantics import mma_numerics as M
from isa.semantics.tensor_formats import FORMATS, decode, encode_rn

F16, F32 = FORMATS["f16"], FORMATS["f32"]
H100_F16 = M.LITERATURE_H100[("f16", "f32")]


def _dot(a, b, c, model, ctype="f32", itype="f16"):
    fi = FORMATS[itype]
    ab, bb = encode_rn(np.array(a, float), fi), encode_rn(np.array(b, float), fi)
    cb = int(encode_rn(c, FORMATS[ctype]))
    return float(decode(M.dot(ab, bb, cb, itype, itype, ctype, model), FORMATS[ctype]))


def test_product_of_full_f16_significands_is_exact_in_f32():
    x = 1 + 2.0 ** -10
    assert _dot([x] + [0] * 15, [x] + [0] * 15, 0.0, H100_F16) == 1 + 2.0 ** -9 + 2.0 ** -20


def test_final_rounding_rz_keeps_one_where_rne_rounds_up():
    small = [1.5 * 2.0 ** -12] + [0] * 15       # product 1.5 * 2^-24 = 0.75 ulp of 1.0 in f32
    two = [2.0 ** -12] + [0] * 15
    assert _dot(small, two, 1.0, H100_F16) == 1.0
    assert _dot(small, two, 1.0, dataclasses.replace(H100_F16, rounding="rne")) == 1 + 2.0 ** -23


def test_window_of_26_bits_keeps_four_quarter_ulps_that_24_bits_cut():
    a = [1.0] + [2.0 ** -13] * 4 + [0] * 11     # 1 + 4 * 2^-25 = 1 + 2^-23
    b = [1.0] + [2.0 ** -12] * 4 + [0] * 11
    assert _dot(a, b, 0.0, H100_F16) == 1 + 2.0 ** -23
    assert _dot(a, b, 0.0, dataclasses.replace(H100_F16, window_bits=24)) == 1.0


def test_tiny_term_survives_only_when_big_terms_cancel_in_an_earlier_block():
    big, tiny = 2.0 ** 14, 2.0 ** -14           # +big at k=0, tiny at k=1, -big at k=8
    a = [big, tiny] + [0] * 6 + [-big] + [0] * 7
    b = [1.0] * 16
    assert _dot(a, b, 0.0, dataclasses.replace(H100_F16, block=16)) == 0.0   # cut in the window
    assert _dot(a, b, 0.0, dataclasses.replace(H100_F16, block=8)) == 0.0
    a2 = [big, -big] + [0] * 6 + [tiny] + [0] * 7
    assert _dot(a2, b, 0.0, dataclasses.replace(H100_F16, block=8)) == tiny  # cancelled first


def test_c_added_last_by_an_rn_add():
    model = dataclasses.replace(H100_F16, c_last_rn=True)
    small = [1.5 * 2.0 ** -12] + [0] * 15
    two = [2.0 ** -12] + [0] * 15
    assert _dot(small, two, 1.0, model) == 1 + 2.0 ** -23


def test_nan_and_inf_minus_inf_give_the_canonical_nan():
    ab = encode_rn(np.array([np.inf, np.inf] + [0] * 14), F16)
    bb = encode_rn(np.array([1.0, -1.0] + [0] * 14), F16)
    assert M.dot(ab, bb, 0, "f16", "f16", "f32", H100_F16) == 0x7FFFFFFF


def test_round_to_format_rne_matches_numpy_float32():
    rng = np.random.default_rng(5)
    for v in rng.standard_normal(300) * np.exp2(rng.integers(-140, 120, 300)):
        m, e = M._exact(float(v))
        assert M.round_to_format(m, e, F32, "rne") == int(np.float32(v).view(np.uint32))


def test_int8_sums_wrap_and_satfinite_clamps():
    a = np.full((1, 32), 0x80, np.uint64)            # -128
    b = np.full((32, 1), 0x80, np.uint64)
    c = np.array([[0x7FFFFFFF - 32 * 16384 + 1]], np.uint64)
    assert M.mma_int(a, b, c, "s8", "s8")[0, 0] == 0x80000000
    assert M.mma_int(a, b, c, "s8", "s8", satfinite=True)[0, 0] == 0x7FFFFFFF


# ----------------------------------------------------------------------------- fitted (Hopper)
HMMA = M.hopper_model("mma", "f16", "f32", 16)
QGMMA = M.hopper_model("wgmma", "e4m3", "f32", 32)


def test_exp_sum_anchor_keeps_a_bit_below_a_product_whose_significand_passes_two():
    # 1.5 * 1.5 = 2.25 (significand in [2, 4)) + 8 * 2^-25 = 2.25 + one f32 ulp (2^-22): the window
    # runs down from the exponent sum 0 (to 2^-25), not from the leading bit 1 (to 2^-24)
    a = [1.5] + [2.0 ** -13] * 8 + [0] * 7
    b = [1.5] + [2.0 ** -12] * 8 + [0] * 7
    assert _dot(a, b, 0.0, HMMA) == 2.25 + 2.0 ** -22
    assert _dot(a, b, 0.0, dataclasses.replace(HMMA, anchor="leading")) == 2.25


def test_zero_result_is_positive_even_from_negative_zeros():
    ab = encode_rn(np.array([-0.0] + [0] * 15), F16)
    bb = encode_rn(np.array([1.0] + [0] * 15), F16)
    assert M.dot(ab, bb, 0x80000000, "f16", "f16", "f32", HMMA) == 0
    assert M.dot(ab, bb, 0x80000000, "f16", "f16", "f32", dataclasses.replace(HMMA, signed_zero=True)) == 0x80000000


def test_rz_sum_past_the_largest_f32_gives_infinity():
    big = 2.0 ** 64                                                      # bf16: 2^64 * 2^64 = 2^128
    assert _dot([big] + [0] * 15, [big] + [0] * 15, 0.0, HMMA, itype="bf16") == np.inf


def test_f16_accumulator_nan_is_0x7fff():
    ab = encode_rn(np.array([np.inf] + [0] * 15), F16)
    bb = encode_rn(np.array([0.0] * 16), F16)
    assert M.dot(ab, bb, 0, "f16", "f16", "f16", M.hopper_model("mma", "f16", "f16", 16)) == 0x7FFF


def test_fp8_mma_sync_overflow_of_the_first_hmma_then_minus_inf_is_nan():
    model = M.hopper_model("mma", "e5m2", "f16", 32)
    a = np.zeros(32)
    b = np.zeros(32)
    a[0], b[0] = 57344.0, 57344.0                   # first HMMA (k % 4 < 2): overflows f16 to +inf
    a[2], b[2] = -np.inf, 1.0                       # second HMMA: -inf
    E5 = FORMATS["e5m2"]
    assert M.dot(encode_rn(a, E5), encode_rn(b, E5), 0, "e5m2", "e5m2", "f16", model) == 0x7FFF


def test_qgmma_f32_sum_keeps_14_significant_bits():
    E4 = FORMATS["e4m3"]
    c = 1 + 2.0 ** -13 + 2.0 ** -20                 # C alone: cut to 14 bits
    zeros = encode_rn(np.zeros(32), E4)
    got = M.dot(zeros, zeros, int(encode_rn(c, F32)), "e4m3", "e4m3", "f32", QGMMA)
    assert float(decode(got, F32)) == 1 + 2.0 ** -13


def test_qgmma_cuts_a_subnormal_c_below_its_window_from_emin():
    E4 = FORMATS["e4m3"]
    zeros = encode_rn(np.zeros(32), E4)
    assert M.dot(zeros, zeros, 0x1, "e4m3", "e4m3", "f32", QGMMA) == 0           # 2^-149 < 2^-139
    assert M.dot(zeros, zeros, 0x7FFFFF, "e4m3", "e4m3", "f32", QGMMA) == 0x7FFC00
