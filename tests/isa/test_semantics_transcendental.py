"""Approximate (MUFU) ops stay within the error bounds the PTX ISA guarantees."""
from __future__ import annotations

import numpy as np
import pytest

from fp_reference import instr
from isa.errors import UnsupportedInstruction
from isa.semantics.floating import ENTRIES, bind_float

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # executor runs under errstate(all="ignore")

SPEC = {e.name: e for e in ENTRIES}
N = 100_000


def fn(mnemonic, nsrc=1):
    op = mnemonic.split(".")[0]
    bound = bind_float(instr(mnemonic, nsrc)) if op == "div" else SPEC[op].bind(instr(mnemonic, nsrc))
    assert bound.unit == "sfu"
    return bound.fn


def ulp_error(got, exact):
    """|got - exact| in units of the f32 ulp at the exact value (exact given in f64)."""
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / ulp


def uniform32(lo, hi, n=N, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, n).astype(np.float32)


def log_uniform32(lo_exp, hi_exp, n=N, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(1, 2, n) * 2.0 ** rng.integers(lo_exp, hi_exp, n)).astype(np.float32)


def test_ex2_approx_f32_is_within_2_ulp_of_exact_on_minus126_to_127():
    x = uniform32(-126, 127)
    assert ulp_error(fn("ex2.approx.f32")(x), np.exp2(x.astype(np.float64))).max() <= 2


def test_ex2_approx_ftz_f32_flushes_subnormal_result_and_plain_form_keeps_it():
    x = np.float32(-130)
    assert fn("ex2.approx.ftz.f32")(x) == 0 and fn("ex2.approx.f32")(x) == np.float32(2.0 ** -130)


def test_lg2_approx_f32_absolute_error_is_at_most_2_pow_minus_22_on_half_to_two():
    x = uniform32(0.5, 2)
    assert np.abs(fn("lg2.approx.f32")(x) - np.log2(x.astype(np.float64))).max() <= 2.0 ** -22


def test_lg2_approx_f32_relative_error_is_at_most_2_pow_minus_22_outside_half_to_two():
    x = np.concatenate([log_uniform32(1, 127), log_uniform32(-149, -1, seed=1)])
    exact = np.log2(x.astype(np.float64))
    assert (np.abs(fn("lg2.approx.f32")(x) - exact) / np.abs(exact)).max() <= 2.0 ** -22


@pytest.mark.parametrize("op", ["sin", "cos"])
def test_sin_cos_approx_f32_absolute_error_is_at_most_2_pow_minus_20_5_on_two_pi(op):
    x = uniform32(-2 * np.pi, 2 * np.pi)
    err = np.abs(fn(f"{op}.approx.f32")(x) - getattr(np, op)(x.astype(np.float64))).max()
    assert err <= 2.0 ** -20.5


@pytest.mark.parametrize("op", ["sin", "cos"])
def test_sin_cos_approx_f32_absolute_error_is_at_most_2_pow_minus_14_7_on_hundred_pi(op):
    x = uniform32(-100 * np.pi, 100 * np.pi)
    err = np.abs(fn(f"{op}.approx.ftz.f32")(x) - getattr(np, op)(x.astype(np.float64))).max()
    assert err <= 2.0 ** -14.7


def test_rcp_approx_f32_is_within_1_ulp_over_the_full_range():
    x = np.concatenate([log_uniform32(-126, 127), -log_uniform32(-126, 127, seed=1)])
    assert ulp_error(fn("rcp.approx.f32")(x), 1.0 / x.astype(np.float64)).max() <= 1


def test_sqrt_approx_f32_relative_error_is_at_most_2_pow_minus_23():
    x = log_uniform32(-149, 127)
    exact = np.sqrt(x.astype(np.float64))
    assert (np.abs(fn("sqrt.approx.f32")(x) - exact) / exact).max() <= 2.0 ** -23


def test_rsqrt_approx_f32_relative_error_is_at_most_2_pow_minus_22_9():
    x = log_uniform32(-126, 127)
    exact = 1.0 / np.sqrt(x.astype(np.float64))
    assert (np.abs(fn("rsqrt.approx.ftz.f32")(x) - exact) / exact).max() <= 2.0 ** -22.9


def test_tanh_approx_f32_relative_error_is_at_most_2_pow_minus_11():
    x = np.concatenate([uniform32(-10, 10), log_uniform32(-140, 3, seed=1)])
    exact = np.tanh(x.astype(np.float64))
    assert (np.abs(fn("tanh.approx.f32")(x) - exact) / np.abs(exact)).max() <= 2.0 ** -11


def test_tanh_approx_f32_passes_subnormal_inputs_through():
    x = np.float32(1e-40)
    assert fn("tanh.approx.f32")(x) == x


def test_div_approx_f32_is_within_2_ulp_for_divisor_in_2_pow_minus_126_to_126():
    a, b = log_uniform32(-126, 127), log_uniform32(-126, 126, seed=1)
    exact = a.astype(np.float64) / b
    keep = (np.abs(exact) < 3e38) & (np.abs(exact) > 1.2e-38)
    assert ulp_error(fn("div.approx.f32", 2)(a, b)[keep], exact[keep]).max() <= 2


def test_div_approx_f32_by_divisor_above_2_pow_126_is_zero_or_nan_for_infinite_dividend():
    d = fn("div.approx.f32", 2)
    b = np.float32(2.0 ** 127)
    assert d(np.float32(1e30), b) == 0 and np.isnan(d(np.float32(np.inf), b))


def test_div_approx_f32_by_a_subnormal_divisor_stays_accurate_as_on_h100():
    a, b = np.float32(1e-13), np.float32(1e-45)
    exact = np.float64(a) / np.float64(b)
    assert ulp_error(np.asarray(fn("div.approx.f32", 2)(a, b)), np.asarray(exact)) <= 2


def test_div_full_f32_is_within_2_ulp_over_the_full_range():
    a, b = log_uniform32(-149, 127), log_uniform32(-149, 127, seed=1)
    exact = a.astype(np.float64) / b
    keep = (np.abs(exact) < 3e38) & (np.abs(exact) > 1.2e-38)
    assert ulp_error(fn("div.full.f32", 2)(a, b)[keep], exact[keep]).max() <= 2


@pytest.mark.parametrize("mnemonic,inputs,expected", [
    ("ex2.approx.f32", [-np.inf, -0.0, np.inf], [0.0, 1.0, np.inf]),
    ("lg2.approx.f32", [-0.0, 0.0, np.inf, -1.0], [-np.inf, -np.inf, np.inf, np.nan]),
    ("sin.approx.f32", [-0.0, np.inf], [-0.0, np.nan]),
    ("cos.approx.f32", [-0.0, -np.inf], [1.0, np.nan]),
    ("rsqrt.approx.f32", [-0.0, 0.0, np.inf, -1.0], [-np.inf, np.inf, 0.0, np.nan]),
    ("sqrt.approx.f32", [-0.0, np.inf, -np.inf], [-0.0, np.inf, np.nan]),
    ("rcp.approx.f32", [-np.inf, -0.0], [-0.0, -np.inf]),
    ("tanh.approx.f32", [-np.inf, -0.0], [-1.0, -0.0]),
])
def test_special_values_follow_the_ptx_tables(mnemonic, inputs, expected):
    got = fn(mnemonic)(np.array(inputs, np.float32))
    exp = np.array(expected, np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(exp))
    ok = ~np.isnan(exp)
    assert np.array_equal(got[ok].view(np.uint32), exp[ok].view(np.uint32))


def test_approx_nan_result_is_canonical_f32_nan():
    assert int(fn("lg2.approx.f32")(np.float32(-1)).view(np.uint32)) == 0x7FFFFFFF


def test_rcp_approx_ftz_f64_uses_the_high_word_and_zeroes_the_low_word():
    x = np.random.default_rng(3).uniform(-1e6, 1e6, 10_000)
    got = fn("rcp.approx.ftz.f64")(x)
    assert not (got.view(np.uint64) & np.uint64(0xFFFFFFFF)).any()
    hi = (x.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(np.float64)
    assert (np.abs(got * hi - 1)).max() <= 2.0 ** -21


def test_rcp_approx_ftz_f64_maps_nan_to_7fffffff00000000_and_subnormal_to_inf():
    f = fn("rcp.approx.ftz.f64")
    assert int(np.asarray(f(np.float64(np.nan))).view(np.uint64)) == 0x7FFFFFFF00000000
    assert f(np.float64(-1e-310)) == -np.inf


def test_rsqrt_approx_ftz_f64_relative_error_is_at_most_2_pow_minus_20():
    x = np.random.default_rng(4).uniform(1e-3, 1e6, 10_000)
    assert (np.abs(fn("rsqrt.approx.ftz.f64")(x) * np.sqrt(x) - 1)).max() <= 2.0 ** -20


def test_rsqrt_approx_f64_is_within_2_ulp():
    x = np.random.default_rng(5).uniform(1e-3, 1e6, 10_000)
    got = fn("rsqrt.approx.f64")(x)
    assert (np.abs(got - 1 / np.sqrt(x)) / np.spacing(got)).max() <= 2


def test_ex2_approx_f16_relative_error_is_at_most_2_pow_minus_9_9():
    x = np.random.default_rng(6).uniform(-14, 15, 20_000).astype(np.float16)
    exact = np.exp2(x.astype(np.float64))
    assert (np.abs(fn("ex2.approx.f16")(x).astype(np.float64) - exact) / exact).max() <= 2.0 ** -9.9


def test_tanh_approx_bf16_absolute_error_is_at_most_2_pow_minus_8():
    x = np.random.default_rng(7).uniform(-8, 8, 20_000).astype(np.float32)
    bits = (x.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    xv = (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    got = (fn("tanh.approx.bf16")(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)
    assert np.abs(got - np.tanh(xv)).max() <= 2.0 ** -8


def test_ex2_approx_f16x2_computes_halves_independently():
    h = lambda v: int(np.float16(v).view(np.uint16))  # noqa: E731
    assert fn("ex2.approx.f16x2")(np.uint32(h(3) << 16 | h(-1))) == (h(8) << 16 | h(0.5))


@pytest.mark.parametrize("mnemonic", ["sin.approx.f64", "ex2.approx.ftz.f16", "ex2.approx.bf16", "tanh.approx.ftz.f32",
                                      "rcp.approx.f64", "sqrt.approx.f64", "lg2.approx.f16"])
def test_undefined_approximate_forms_raise(mnemonic):
    with pytest.raises(UnsupportedInstruction):
        SPEC[mnemonic.split(".")[0]].bind(instr(mnemonic, 1))
