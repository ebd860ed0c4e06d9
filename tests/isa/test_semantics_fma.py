"""fma / mad: one rounding of a*b+c, bit-exact against an exact Fraction reference."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from fp_reference import bits_of, instr, is_nan_bits, random_bits, round_bits
from isa.semantics.floating import ENTRIES, bind_float

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # the executor runs under errstate(all="ignore")

FLOAT = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
UINT = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32, "f64": np.uint64}


def _value(bits, t):
    """Exact Fraction of a finite value given as raw bits of type t."""
    if t == "bf16":
        return Fraction(float((np.uint32(bits) << np.uint32(16)).view(np.float32)))
    return Fraction(float(np.asarray(bits, UINT[t]).view(FLOAT[t])))


def _reference(a, b, c, t, mode):
    """Expected result bits (None for NaN) of fma on raw bit patterns a, b, c."""
    vals = [float(np.asarray(x, UINT[t]).view(FLOAT[t])) if t != "bf16"
            else float((np.uint32(x) << np.uint32(16)).view(np.float32)) for x in (a, b, c)]
    x, y, z = vals
    if not all(np.isfinite(v) for v in vals):
        r = z if (np.isinf(z) and np.isfinite(x) and np.isfinite(y)) else x * y + z
        if np.isnan(r):
            return None
        if t == "bf16":
            return int(np.asarray(r, np.float32).view(np.uint32)) >> 16
        return bits_of(np.asarray(r).astype(FLOAT[t]))
    q = Fraction(x) * Fraction(y) + Fraction(z)
    if q == 0:
        pz = x == 0 or y == 0
        pneg, cneg = bool(np.signbit(x) ^ np.signbit(y)), bool(np.signbit(z))
        if pz and z == 0:
            neg = (pneg or cneg) if mode == "rm" else (pneg and cneg)
        else:
            neg = mode == "rm"
        return round_bits(q, t, mode, neg)
    return round_bits(q, t, mode)


def _run(mnemonic, t, a, b, c):
    bound = bind_float(instr(mnemonic, 3))
    if t == "bf16":
        return np.asarray(bound.fn(a, b, c))
    dt = FLOAT[t]
    return np.asarray(bound.fn(a.view(dt), b.view(dt), c.view(dt))).view(UINT[t])


def _check(mnemonic, t, mode, a, b, c):
    got = _run(mnemonic, t, a, b, c)
    bad = []
    for i in range(a.size):
        want = _reference(a[i], b[i], c[i], t, mode)
        g = int(got[i])
        if want is None:
            ok = is_nan_bits(g, t)
        else:
            ok = g == want
        if not ok:
            bad.append((hex(int(a[i])), hex(int(b[i])), hex(int(c[i])), hex(g), want if want is None else hex(want)))
    assert not bad, f"{len(bad)} mismatches of {a.size}, first: {bad[:3]}"


def _tie_triples(rng, n, t):
    """a*b lands on half an ulp of c, or beside it by as little as 2**-2p ulp: the cases
    where rounding a*b (or a*b + c) first and then again goes wrong."""
    ft, ut = FLOAT[t], UINT[t]
    eps = 2.0 ** -({"f32": 24, "f64": 53}[t] - 1)
    c = rng.uniform(1, 2, n) * 2.0 ** rng.integers(-20, 20, n)
    c = np.where(rng.random(n) < 0.5, -c, c).astype(ft)
    half_ulp = np.spacing(np.abs(c)).astype(np.float64) / 2
    kb = rng.integers(-2, 3, n)
    ka = np.where(rng.random(n) < 0.5, -kb, rng.integers(-1, 3, n))    # -kb: (1 - kb^2 eps^2)
    shift = np.where(rng.random(n) < 0.3, 2.0 ** -rng.integers(0, 20, n), 1.0)
    a = (1.0 + ka * eps * np.where(ka > 0, 1.0 / shift, 1.0)).astype(ft)
    b = (half_ulp * (1.0 + kb * eps) * np.where(rng.random(n) < 0.5, -1, 1)).astype(ft)
    return a.view(ut), b.view(ut), c.view(ut)


def test_fma_rn_f32_equals_exact_rounding_on_100000_triples_including_ties():
    rng = np.random.default_rng(1)
    a, b, c = (random_bits(rng, 80_000, "f32") for _ in range(3))
    ta, tb, tc = _tie_triples(rng, 20_000, "f32")
    _check("fma.rn.f32", "f32", "rn", np.concatenate([a, ta]), np.concatenate([b, tb]), np.concatenate([c, tc]))


@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
def test_fma_directed_f32_equals_exact_rounding_on_30000_triples(mode):
    rng = np.random.default_rng(2)
    a, b, c = (random_bits(rng, 20_000, "f32") for _ in range(3))
    ta, tb, tc = _tie_triples(rng, 10_000, "f32")
    _check(f"fma.{mode}.f32", "f32", mode, np.concatenate([a, ta]), np.concatenate([b, tb]), np.concatenate([c, tc]))


def _f64_triples(rng, n):
    """Random doubles of moderate and extreme exponents, plus tie-making triples."""
    a, b, c = (random_bits(rng, n, "f64") for _ in range(3))
    m = n // 2                                  # moderate exponents: the fast path
    for x in (a, b, c):
        mant = x[:m] & np.uint64((1 << 63) | ((1 << 52) - 1))
        x[:m] = mant | (rng.integers(1023 - 60, 1023 + 60, m, dtype=np.uint64) << np.uint64(52))
    ta, tb, tc = _tie_triples(rng, n // 2, "f64")
    return np.concatenate([a, ta]), np.concatenate([b, tb]), np.concatenate([c, tc])


def test_fma_rn_f64_equals_exact_rounding_on_60000_triples_including_ties_and_extremes():
    a, b, c = _f64_triples(np.random.default_rng(3), 40_000)
    _check("fma.rn.f64", "f64", "rn", a, b, c)


@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
def test_fma_directed_f64_equals_exact_rounding_on_15000_triples(mode):
    a, b, c = _f64_triples(np.random.default_rng(4), 10_000)
    _check(f"fma.{mode}.f64", "f64", mode, a, b, c)


def test_fma_rn_f64_subnormal_product_plus_min_subnormal_is_twice_min_subnormal():
    fn = bind_float(instr("fma.rn.f64", 3)).fn
    tiny = np.float64(2.0 ** -1074)
    assert fn(np.float64(2.0 ** -537), np.float64(2.0 ** -537), tiny) == np.float64(2.0 ** -1073)


def test_fma_rn_f64_product_overflow_cancelled_by_c_is_finite():
    fn = bind_float(instr("fma.rn.f64", 3)).fn
    big = np.float64(1.5e308)
    assert fn(big, np.float64(2.0), -big) == np.float64(1.5e308)


def test_fma_rn_f64_finite_product_plus_minus_inf_is_minus_inf():
    fn = bind_float(instr("fma.rn.f64", 3)).fn
    assert fn(np.float64(1e308), np.float64(10.0), np.float64(-np.inf)) == -np.inf


def test_fma_rm_exact_zero_is_negative_zero_and_rn_positive_zero():
    rm = bind_float(instr("fma.rm.f64", 3)).fn
    rn = bind_float(instr("fma.rn.f32", 3)).fn
    assert np.signbit(rm(np.float64(3.0), np.float64(1.0), np.float64(-3.0)))
    assert not np.signbit(rn(np.float32(3.0), np.float32(1.0), np.float32(-3.0)))


def test_fma_rn_of_negative_zero_product_and_negative_zero_is_negative_zero():
    fn = bind_float(instr("fma.rn.f64", 3)).fn
    assert np.signbit(fn(np.float64(-0.0), np.float64(5.0), np.float64(-0.0)))


def test_fma_rn_f32_keeps_the_low_product_bits_that_mul_then_add_loses():
    # a*a = 1 + 2**-22 + 2**-46 exactly; RN(a*a) drops 2**-46, so mul+add gives 0
    a = np.float32(1 + 2.0 ** -23)
    fn = bind_float(instr("fma.rn.f32", 3)).fn
    assert fn(a, a, np.float32(-(1 + 2.0 ** -22))) == np.float32(2.0 ** -46)


def test_fma_sat_f32_clamps_to_one_and_nan_to_zero():
    fn = bind_float(instr("fma.rn.sat.f32", 3)).fn
    out = fn(np.array([2, np.inf, -1], np.float32), np.array([1, 0, 1], np.float32), np.float32(0.5))
    assert out.tolist() == [1.0, 0.0, 0.0]


def test_fma_ftz_f32_flushes_subnormal_input_and_result():
    fn = bind_float(instr("fma.rn.ftz.f32", 3)).fn
    sub = np.float32(1e-40)
    assert fn(sub, np.float32(1e30), np.float32(0)) == 0.0                  # input flushed
    assert fn(np.float32(1e-20), np.float32(1e-20), np.float32(0)) == 0.0   # 1e-40 result flushed


def test_mad_rn_f32_is_fma_rn_f32():
    rng = np.random.default_rng(5)
    a, b, c = (random_bits(rng, 5000, "f32").view(np.float32) for _ in range(3))
    got = bind_float(instr("mad.rn.f32", 3)).fn(a, b, c).view(np.uint32)
    want = bind_float(instr("fma.rn.f32", 3)).fn(a, b, c).view(np.uint32)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_fma_rn_half_equals_exact_rounding_on_30000_triples(t):
    rng = np.random.default_rng(6)
    a, b, c = (random_bits(rng, 30_000, t) for _ in range(3))
    _check(f"fma.rn.{t}", t, "rn", a, b, c)


def test_fma_rn_f16x2_computes_each_half_independently():
    fn = bind_float(instr("fma.rn.f16x2", 3)).fn
    h = lambda x: int(np.float16(x).view(np.uint16))       # noqa: E731
    pack = lambda hi, lo: np.uint32((h(hi) << 16) | h(lo))  # noqa: E731
    assert fn(pack(2, 3), pack(4, 5), pack(1, -15)) == pack(9, 0)


def test_fma_relu_bf16_maps_negative_to_zero_and_nan_to_canonical():
    fn = bind_float(instr("fma.rn.relu.bf16", 3)).fn
    one = np.uint16(0x3F80)
    assert fn(one, np.uint16(0xBF80), np.uint16(0)) == 0            # 1 * -1 + 0 -> +0
    assert fn(np.uint16(0x7FC1), one, one) == 0x7FFF


def test_fma_f64_nan_result_carries_b_then_c_then_a_quieted_as_on_h100():
    fn = bind_float(instr("fma.rn.f64", 3)).fn
    n = lambda p: np.uint64(0x7FF0000000000000 | p).view(np.float64)    # noqa: E731  signalling NaNs
    got = [fn(n(1), n(2), n(3)), fn(n(1), np.float64(1), n(3)), fn(n(1), np.float64(1), np.float64(1))]
    assert [int(np.asarray(g).view(np.uint64)) & 0xF for g in got] == [2, 3, 1]
    assert all(int(np.asarray(g).view(np.uint64)) >> 51 == 0xFFF for g in got)


def test_fma_entry_is_registered_with_alu_kind():
    spec = next(e for e in ENTRIES if e.name == "fma")
    assert spec.kind == "alu" and spec.bind(instr("fma.rn.f64", 3)).unit == "fp64"
