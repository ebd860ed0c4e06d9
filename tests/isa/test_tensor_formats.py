"""Tensor-core element formats (isa.semantics.tensor_formats) decode and round like the
references: numpy's float16 / float32, and the fp8 conversions of isa.semantics.fp8."""
import numpy as np
import pytest

from isa.semantics import fp8
from isa.semantics.tensor_formats import FORMATS, decode, encode_exact, encode_rn


def test_f16_decodes_all_65536_patterns_as_numpy():
    b = np.arange(1 << 16)
    want = b.astype(np.uint16).view(np.float16).astype(np.float64)
    assert np.array_equal(decode(b, FORMATS["f16"]), want, equal_nan=True)


@pytest.mark.parametrize("name,fmt", [("e4m3", fp8.E4M3), ("e5m2", fp8.E5M2)])
def test_fp8_decodes_all_256_patterns_as_the_cvt_semantics(name, fmt):
    b = np.arange(256)
    assert np.array_equal(decode(b, FORMATS[name]), fp8.decode(b, fmt), equal_nan=True)


def test_f16_round_to_nearest_matches_numpy_including_overflow():
    rng = np.random.default_rng(9)
    x = np.concatenate([rng.standard_normal(20000) * np.exp2(rng.integers(-30, 18, 20000)), [65519.9, 65520.0]])
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    assert np.array_equal(encode_rn(x, FORMATS["f16"]).astype(np.uint16), want)


def test_tf32_sits_in_the_top_19_bits_and_ignores_the_low_13():
    one = int(encode_exact(1.0, FORMATS["tf32"]))
    assert one == 0x3F800000
    assert decode(one | 0x1FFF, FORMATS["tf32"]) == 1.0


def test_encode_exact_refuses_a_value_needing_rounding():
    with pytest.raises(ValueError):
        encode_exact(1 + 2.0 ** -8, FORMATS["bf16"])
