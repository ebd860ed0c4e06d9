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
