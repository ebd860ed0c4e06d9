"""cvt between integer and float types, bit-exact against exact Fraction references."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from fp_reference import LAYOUT, instr, is_nan_bits, random_bits, round_bits
from isa.errors import UnsupportedInstruction
from isa.semantics.convert import ENTRIES, bind_cvt
from isa.types import dtype

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # executor runs under errstate(all="ignore")

INTS = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
UT = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32, "f64": np.uint64}


def cvt(mnemonic, *args):
    return np.asarray(bind_cvt(instr(mnemonic, len(args))).fn(*args))


def _raw(x, t):
    """Raw bits of a result of float type t."""
    return np.asarray(x).view(UT[t]) if t != "bf16" else np.asarray(x, np.uint16)


def _as_type(bits, t):
    return bits.view(dtype(t)) if t in ("f16", "f32", "f64") else bits


def _value(b: int, t: str) -> float:
    if t == "bf16":
        return float((np.uint32(b) << np.uint32(16)).view(np.float32))
    return float(np.asarray(b, UT[t]).view(dtype(t)))


def _int_range(t):
    n = np.dtype(dtype(t)).itemsize * 8
    return (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t[0] == "s" else (0, (1 << n) - 1)


def _random_ints(rng, n, t):
    lo, hi = _int_range(t)
    bits = np.dtype(dtype(t)).itemsize * 8
    raw = rng.integers(0, 1 << 63, n, dtype=np.uint64) | (rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63))
    raw = raw >> rng.integers(0, 64, n).astype(np.uint64)          # all magnitudes
    vals = [(int(v) % (1 << bits)) for v in raw]
    vals = [v - (1 << bits) if (t[0] == "s" and v > hi) else v for v in vals]
    ties = [(1 << k) + (1 << max(k - 25, 0)) + s for k in range(20, bits - 1) for s in (-1, 0, 1)]
    vals += [v for v in ties if lo <= v <= hi] + [-v for v in ties if lo <= -v <= hi] + [lo, hi, 0]
    return np.array(vals, dtype=dtype(t))


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("st", INTS)
def test_int_to_float_equals_exact_rounding(st, dt, mode):
    x = _random_ints(np.random.default_rng(20), 1500, st)
    got = _raw(cvt(f"cvt.{mode}.{dt}.{st}", x), dt)
    want = [round_bits(Fraction(int(v)), dt, mode) for v in x]
    bad = [(int(v), hex(int(g)), hex(w)) for v, g, w in zip(x, got, want) if int(g) != w]
    assert not bad, f"{len(bad)} differ, e.g. {bad[:3]}"


NARROW = [("f32", "f64"), ("f16", "f64"), ("bf16", "f64"), ("f16", "f32"), ("bf16", "f32"), ("bf16", "f16"), ("f16", "bf16")]


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
@pytest.mark.parametrize("dt,st", NARROW)
def test_float_narrowing_equals_exact_rounding_on_6000_random_patterns(dt, st, mode):
    rng = np.random.default_rng(21)
    src = random_bits(rng, 6000, st)
    if st in ("f64", "f32"):      # also land near the destination's range and precision
        scale = {"f16": 2.0 ** -10, "bf16": 1.0, "f32": 1.0}[dt]
        near = (rng.uniform(-1, 1, 3000) * 2.0 ** rng.integers(-30, 20, 3000) * scale).astype(dtype(st))
        src[:3000] = near.view(UT[st])
    got = _raw(cvt(f"cvt.{mode}.{dt}.{st}", _as_type(src, st)), dt)
    bad = []
    for b, g in zip(src, got):
        x = _value(int(b), st)
        if math.isnan(x):
            ok = is_nan_bits(int(g), dt)
        elif math.isinf(x):
            ok = _value(int(g), dt) == x
        else:
            ok = int(g) == round_bits(Fraction(x), dt, mode, math.copysign(1, x) < 0)
        if not ok:
            bad.append((x, hex(int(g))))
    assert not bad, f"{len(bad)} differ, e.g. {bad[:3]}"


@pytest.mark.parametrize("dt,st", [("f32", "f16"), ("f32", "bf16"), ("f64", "f16"), ("f64", "bf16")])
def test_widening_is_exact_for_all_65536_half_patterns(dt, st):
    src = np.arange(65536, dtype=np.uint64).astype(np.uint16)
    got = cvt(f"cvt.{dt}.{st}", _as_type(src, st))
    want = np.array([_value(int(b), st) for b in src])
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].astype(np.float64).view(np.uint64), want[~nan].view(np.uint64))


def test_widening_f32_to_f64_is_exact_on_random_patterns():
    src = random_bits(np.random.default_rng(22), 20_000, "f32", specials=False).view(np.float32)
    got = cvt("cvt.f64.f32", src)
    ok = ~np.isnan(src)
    assert np.array_equal(got[ok], src[ok].astype(np.float64))


def _ref_f2i(x: float, st: str, dt: str, irnd: str) -> int:
    lo, hi = _int_range(dt)
    if math.isnan(x):
        n = np.dtype(dtype(dt)).itemsize * 8
        return 0 if (st != "f64" and n < 64) else (lo if dt[0] == "s" else 1 << (n - 1))
    if math.isinf(x):
        return hi if x > 0 else lo
    q = Fraction(x)
    r = {"rni": round, "rzi": math.trunc, "rmi": math.floor, "rpi": math.ceil}[irnd](q)
    return min(max(r, lo), hi)


@pytest.mark.parametrize("irnd", ["rni", "rzi", "rmi", "rpi"])
@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("st", FLOATS)
def test_float_to_int_rounds_then_clamps_like_exact_reference(st, dt, irnd):
    rng = np.random.default_rng(23)
    src = random_bits(rng, 1500, st)
    n = np.dtype(dtype(dt)).itemsize * 8
    near = rng.uniform(-1, 1, 1000) * 2.0 ** rng.integers(-2, n + 2, 1000)
    near[:100] = np.round(near[:100] * 2) / 2                       # halfway cases
    near = near.astype(np.float32 if st in ("bf16", "f16") else dtype(st))
    src[:1000] = near.astype(np.float16).view(np.uint16) if st == "f16" else \
        (near.view(np.uint32) >> np.uint32(16)).astype(np.uint16) if st == "bf16" else near.view(UT[st])
    got = cvt(f"cvt.{irnd}.{dt}.{st}", _as_type(src, st))
    assert got.dtype == dtype(dt)
    bad = [(_value(int(b), st), int(g)) for b, g in zip(src, got) if int(g) != _ref_f2i(_value(int(b), st), st, dt, irnd)]
    assert not bad, f"{len(bad)} differ, e.g. {bad[:3]}"


def test_cvt_rzi_s32_f32_of_3e9_saturates_to_2147483647():
    assert cvt("cvt.rzi.s32.f32", np.float32(3.0e9)) == 2147483647


@pytest.mark.parametrize("mnemonic,expected", [
    ("cvt.rzi.s32.f32", 0), ("cvt.rzi.u16.f32", 0), ("cvt.rzi.s64.f64", -(1 << 63)),
    ("cvt.rzi.u32.f64", 0x80000000), ("cvt.rzi.s64.f32", -(1 << 63)), ("cvt.rzi.u64.f32", 1 << 63),
])
def test_nan_to_int_is_zero_unless_f64_source_or_64_bit_destination(mnemonic, expected):
    src = np.float64(np.nan) if mnemonic.endswith("f64") else np.float32(np.nan)
    assert int(cvt(mnemonic, src)) == expected


def test_rni_rounds_halfway_to_even():
    assert cvt("cvt.rni.s32.f32", np.array([2.5, 3.5, -2.5, -0.5], np.float32)).tolist() == [2, 4, -2, 0]


@pytest.mark.parametrize("mnemonic,src,expected", [
    ("cvt.u64.s32", np.int32(-1), 0xFFFFFFFFFFFFFFFF),      # sign-extends by source type
    ("cvt.s64.u32", np.uint32(0xFFFFFFFF), 4294967295),     # zero-extends by source type
    ("cvt.u8.u32", np.uint32(0x1234), 0x34),                # narrowing truncates
    ("cvt.s16.s64", np.int64(-70000), -4464),
    ("cvt.sat.s8.s32", np.int32(300), 127),
    ("cvt.sat.s8.s32", np.int32(-300), -128),
    ("cvt.sat.u32.s32", np.int32(-5), 0),
    ("cvt.sat.s32.u64", np.uint64(1 << 40), 2147483647),
    ("cvt.sat.u16.u64", np.uint64(1 << 63), 65535),
])
def test_int_to_int_extends_by_source_truncates_or_saturates(mnemonic, src, expected):
    assert int(cvt(mnemonic, src)) == expected


def test_ftz_flushes_f32_subnormal_before_integer_rounding():
    tiny = np.uint32(1).view(np.float32)
    assert cvt("cvt.rpi.s32.f32", tiny) == 1 and cvt("cvt.rpi.ftz.s32.f32", tiny) == 0


def test_rni_f32_to_f32_keeps_the_sign_of_zero():
    r = cvt("cvt.rni.f32.f32", np.float32(-0.4))
    assert r == 0 and np.signbit(r)


@pytest.mark.parametrize("irnd,expected", [("rni", [2, -2, 3]), ("rzi", [2, -2, 2]), ("rmi", [2, -3, 2]), ("rpi", [3, -2, 3])])
def test_round_to_integral_f16(irnd, expected):
    assert cvt(f"cvt.{irnd}.f16.f16", np.array([2.5, -2.5, 2.75], np.float16)).tolist() == expected


def test_sat_f32_f32_clamps_to_unit_interval_and_nan_to_zero():
    assert cvt("cvt.sat.f32.f32", np.array([1.5, np.nan, -2, 0.25], np.float32)).tolist() == [1, 0, 0, 0.25]


def test_relu_f16_maps_negative_to_zero_and_nan_to_canonical():
    r = cvt("cvt.rn.relu.f16.f32", np.array([-3, np.nan, 2], np.float32)).view(np.uint16)
    assert r.tolist() == [0, 0x7FFF, 0x4000]


def test_satfinite_f16_clamps_large_and_infinite_to_65504():
    r = cvt("cvt.rn.satfinite.f16.f32", np.array([1e6, -np.inf], np.float32))
    assert r.tolist() == [65504, -65504]


def test_rz_overflow_to_f16_gives_max_not_inf():
    assert cvt("cvt.rz.f16.f32", np.float32(1e6)) == 65504


def test_bf16x2_packs_first_source_in_the_high_half():
    r = cvt("cvt.rn.bf16x2.f32", np.float32(1.0), np.float32(-2.0))
    assert int(r) == 0x3F80C000


def test_tf32_rna_rounds_ties_away_and_rn_to_even():
    x = np.float32(1 + 2.0 ** -11)        # halfway between two 10-bit mantissas
    assert int(cvt("cvt.rna.tf32.f32", x)) == int(np.float32(1 + 2.0 ** -10).view(np.uint32))
    assert int(cvt("cvt.rn.tf32.f32", x)) == 0x3F800000


def test_f64_to_f32_nan_keeps_the_top_payload_bits_quieted_as_on_h100():
    r = cvt("cvt.rn.f32.f64", np.uint64(0xFFF4000000000003).view(np.float64))
    assert int(r.view(np.uint32)) == 0xFFE00000


def test_f64_to_f16_and_bf16_nan_keep_the_top_payload_bits_quieted_as_on_h100():
    x = np.uint64(0x7FF17B9A694F2736).view(np.float64)
    assert int(cvt("cvt.rn.f16.f64", x).view(np.uint16)) == 0x7E5E
    assert int(cvt("cvt.rn.bf16.f64", x)) == 0x7FCB


def test_bf16_to_f32_is_a_plain_shift_even_for_signalling_nan_as_on_h100():
    assert int(cvt("cvt.f32.bf16", np.uint16(0x7F81)).view(np.uint32)) == 0x7F810000


def test_f16_to_f32_nan_is_canonical_as_on_h100():
    assert int(cvt("cvt.f32.f16", np.uint16(0x7C01).view(np.float16)).view(np.uint32)) == 0x7FFFFFFF


def test_cvt_ftz_f32_f64_flushes_after_rounding_as_on_h100():
    r = cvt("cvt.rn.ftz.f32.f64", np.array([2.0 ** -126 - 2.0 ** -151, 2.0 ** -126 - 2.0 ** -149]))
    assert r.tolist() == [2.0 ** -126, 0.0]


def test_ftz_f64_f32_flushes_subnormal_input():
    assert cvt("cvt.ftz.f64.f32", np.float32(1e-40)) == 0


def test_rn_ftz_f32_f64_flushes_subnormal_result():
    r = cvt("cvt.rn.ftz.f32.f64", np.float64(-1e-40))
    assert r == 0 and np.signbit(r)


def test_f32_to_f16_rn_is_exact_rounding_at_ties_subnormals_and_overflow():
    # (1 + j/2**13) * 2**e: three bits below f16 precision, so every eighth value is a tie
    j = np.arange(1 << 13)
    x = np.concatenate([(1 + j / 2.0 ** 13) * 2.0 ** e for e in (-26, -24, -15, -14, -1, 15, 16)])
    x = np.concatenate([x, -x]).astype(np.float32)
    got = cvt("cvt.rn.f16.f32", x).view(np.uint16)
    want = [round_bits(Fraction(float(v)), "f16", "rn") for v in x]
    assert got.tolist() == want


@pytest.mark.parametrize("mnemonic,unit", [("cvt.u32.u16", "int"), ("cvt.rn.f32.f64", "fp64"),
                                           ("cvt.rn.f16.f32", "fp32"), ("cvt.rni.f16.f16", "fp16"),
                                           ("cvt.rzi.s32.f32", "fp32")])
def test_unit_class(mnemonic, unit):
    assert bind_cvt(instr(mnemonic, 1)).unit == unit


@pytest.mark.parametrize("mnemonic", ["cvt.rn.s32.s16", "cvt.ftz.f64.f16", "cvt.rna.f32.f64",
                                      "cvt.rn.satfinite.e2m1x2.f32", "cvt.rni.f32.f64", "cvt.rn.s32.f32"])
def test_unsupported_forms_raise(mnemonic):
    with pytest.raises(UnsupportedInstruction):
        bind_cvt(instr(mnemonic, 1))


def test_cvt_entry_is_alu():
    assert [(e.name, e.kind) for e in ENTRIES] == [("cvt", "alu")]


def test_layout_table_matches_isa_types():
    for t, (nb, _, _) in LAYOUT.items():
        if t != "tf32":
            assert np.dtype(dtype(t)).itemsize * 8 == nb
