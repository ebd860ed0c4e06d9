"""add/sub/mul/div/sqrt/rcp, min/max/neg/abs, copysign, testp on f32/f64/f16/bf16 lanes."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from fp_reference import instr, is_nan_bits, random_bits, round_bits
from isa.errors import UnsupportedInstruction
from isa.semantics.floating import ENTRIES, bind_float, bind_rcp_sqrt

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # executor runs under errstate(all="ignore")

FT = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
UT = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32, "f64": np.uint64}
SPEC = {e.name: e for e in ENTRIES}


def _f(bits, t) -> float:
    if t == "bf16":
        return float((np.uint32(bits) << np.uint32(16)).view(np.float32))
    return float(np.asarray(bits, UT[t]).view(FT[t]))


def _special_bits(r: float, t: str) -> int | None:
    if math.isnan(r):
        return None
    if t == "bf16":
        return int(np.float32(r).view(np.uint32)) >> 16
    return int(np.asarray(r).astype(FT[t]).view(UT[t]))


def _reference(op, x, y, t, mode):
    """Expected bits (None = any NaN) of `op` on floats x, y in type t and mode."""
    if not (math.isfinite(x) and math.isfinite(y)) or (op == "div" and y == 0):
        with np.errstate(all="ignore"):
            r = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op](np.float64(x), np.float64(y))
        return _special_bits(float(r), t)
    fx, fy = Fraction(x), Fraction(y)
    q = {"add": fx + fy, "sub": fx - fy, "mul": fx * fy, "div": fx / fy if y else None}[op]
    if q == 0:
        if op in ("mul", "div"):
            neg = math.copysign(1, x) * math.copysign(1, y) < 0
        else:
            sx, sy = math.copysign(1, x) < 0, (math.copysign(1, y) < 0) != (op == "sub")
            neg = (sx and sy) if (x == 0 and y == 0 and mode != "rm") else \
                  (sx or sy) if (x == 0 and y == 0) else mode == "rm"
        return round_bits(q, t, mode, neg)
    return round_bits(q, t, mode)


def _check(op, t, mode, a, b, mnemonic=None):
    fn = bind_float(instr(mnemonic or f"{op}.{mode}.{t}")).fn
    got = np.asarray(fn(a, b) if t == "bf16" else fn(a.view(FT[t]), b.view(FT[t])))
    got = got if t == "bf16" else got.view(UT[t])
    bad = []
    for i in range(a.size):
        want = _reference(op, _f(a[i], t), _f(b[i], t), t, mode)
        g = int(got[i])
        if (want is None and not is_nan_bits(g, t)) or (want is not None and g != want):
            bad.append((_f(a[i], t), _f(b[i], t), hex(g), want if want is None else hex(want)))
    assert not bad, f"{len(bad)} of {a.size} differ, e.g. {bad[:3]}"


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_f32_rn_equals_exact_rounding_on_20000_random_pairs(op):
    rng = np.random.default_rng(10)
    _check(op, "f32", "rn", random_bits(rng, 20_000, "f32"), random_bits(rng, 20_000, "f32"))


@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_f32_directed_equals_exact_rounding_on_10000_random_pairs(op, mode):
    rng = np.random.default_rng(11)
    _check(op, "f32", mode, random_bits(rng, 10_000, "f32"), random_bits(rng, 10_000, "f32"))


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_f64_equals_exact_rounding_on_5000_random_pairs_including_overflow_and_underflow(op, mode):
    rng = np.random.default_rng(12)
    _check(op, "f64", mode, random_bits(rng, 5000, "f64"), random_bits(rng, 5000, "f64"))


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_half_rn_equals_exact_rounding_on_20000_random_pairs(op, t):
    rng = np.random.default_rng(13)
    _check(op, t, "rn", random_bits(rng, 20_000, t), random_bits(rng, 20_000, t), f"{op}.rn.{t}")


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_sqrt_equals_exact_rounding_on_5000_random_positive_values(t, mode):
    rng = np.random.default_rng(14)
    a = random_bits(rng, 5000, t) & UT[t]((1 << (8 * np.dtype(UT[t]).itemsize - 1)) - 1)
    got = np.asarray(bind_rcp_sqrt(instr(f"sqrt.{mode}.{t}", 1)).fn(a.view(FT[t]))).view(UT[t])
    for i in range(a.size):
        x = _f(a[i], t)
        want = _special_bits(math.sqrt(x) if not math.isfinite(x) else 0.0, t) if (not math.isfinite(x) or x == 0) \
            else _round_sqrt(Fraction(x), t, mode)
        assert want is None and is_nan_bits(int(got[i]), t) or int(got[i]) == want, (x, hex(int(got[i])))


def _round_sqrt(q: Fraction, t: str, mode: str) -> int:
    """Reference sqrt by bracketing with exact squares."""
    lo = round_bits(Fraction(math.sqrt(q)), t, "rz")
    while Fraction(_f(lo, t)) ** 2 > q:
        lo -= 1
    while Fraction(_f(lo + 1, t)) ** 2 <= q:
        lo += 1
    vlo, vhi = Fraction(_f(lo, t)), Fraction(_f(lo + 1, t))
    if vlo ** 2 == q:
        return lo
    if mode in ("rz", "rm"):
        return lo
    if mode == "rp":
        return lo + 1
    mid = (vlo + vhi) / 2
    return lo + 1 if q > mid ** 2 or (q == mid ** 2 and lo % 2) else lo


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_rcp_f32_equals_exact_rounding_of_one_over_a(mode):
    rng = np.random.default_rng(15)
    b = random_bits(rng, 5000, "f32")
    _check("div", "f32", mode, np.full(5000, 0x3F800000, np.uint32), b)  # 1/b reference
    got = np.asarray(bind_rcp_sqrt(instr(f"rcp.{mode}.f32", 1)).fn(b.view(np.float32))).view(np.uint32)
    want = np.asarray(bind_float(instr(f"div.{mode}.f32")).fn(np.float32(1), b.view(np.float32))).view(np.uint32)
    assert np.array_equal(got, want)


def test_f32_nan_result_is_canonical_7fffffff():
    fn = bind_float(instr("add.rn.f32")).fn
    nan_payload = np.uint32(0x7FC01234).view(np.float32)
    assert int(np.asarray(fn(nan_payload, np.float32(1))).view(np.uint32)) == 0x7FFFFFFF


def test_add_rm_of_x_and_minus_x_is_negative_zero_and_rz_positive_zero():
    one, m1 = np.float32(1), np.float32(-1)
    assert np.signbit(bind_float(instr("add.rm.f32")).fn(one, m1))
    assert not np.signbit(bind_float(instr("add.rz.f32")).fn(one, m1))


def test_mul_overflow_f32_rz_gives_max_rn_gives_inf():
    big, ten = np.float32(3e38), np.float32(10)
    assert bind_float(instr("mul.rz.f32")).fn(big, ten) == np.finfo(np.float32).max
    assert bind_float(instr("mul.rn.f32")).fn(big, ten) == np.inf
    assert bind_float(instr("mul.rp.f32")).fn(-big, ten) == -np.finfo(np.float32).max
    assert bind_float(instr("mul.rm.f32")).fn(-big, ten) == -np.inf


def test_mul_rp_f32_of_tiny_positives_is_min_subnormal_1p4e_45():
    r = bind_float(instr("mul.rp.f32")).fn(np.float32(1e-30), np.float32(1e-30))
    assert int(np.asarray(r).view(np.uint32)) == 1


def test_ftz_flushes_subnormal_input_and_result_to_signed_zero():
    add = bind_float(instr("add.ftz.f32")).fn
    mul = bind_float(instr("mul.rn.ftz.f32")).fn
    assert add(np.float32(1e-40), np.float32(0)) == 0
    r = mul(np.float32(-1e-20), np.float32(1e-20))
    assert r == 0 and np.signbit(r)


def test_mul_ftz_flushes_an_exact_result_below_2_pow_minus_126_that_rounds_up_to_it():
    # (1 - 2**-24) * 2**-126 rounds (tie, to even) to 2**-126; H100 flushes it to +0 all the same
    a, b = np.float32(1 - 2.0 ** -24), np.float32(2.0 ** -126)
    assert bind_float(instr("mul.rn.ftz.f32")).fn(a, b) == 0
    assert bind_float(instr("fma.rn.ftz.f32", 3)).fn(a, b, np.float32(0)) == 0
    assert bind_float(instr("mul.rn.f32")).fn(a, b) == b


def test_sat_clamps_to_unit_interval_and_nan_and_minus_zero_to_plus_zero():
    fn = bind_float(instr("add.sat.f32")).fn
    r = fn(np.array([0.75, np.nan, -0.25, -0.0], np.float32), np.array([0.5, 1, 0, -0.0], np.float32))
    assert r.tolist() == [1.0, 0.0, 0.0, 0.0] and not np.signbit(r).any()


def test_div_rz_and_rp_f32_of_one_third_differ_by_one_ulp():
    rz = bind_float(instr("div.rz.f32")).fn(np.float32(1), np.float32(3))
    rp = bind_float(instr("div.rp.f32")).fn(np.float32(1), np.float32(3))
    assert (int(np.asarray(rz).view(np.uint32)), int(np.asarray(rp).view(np.uint32))) == (0x3EAAAAAA, 0x3EAAAAAB)


def test_min_returns_the_non_nan_operand_and_canonical_nan_for_two_nans():
    fn = bind_float(instr("min.f32")).fn
    nan = np.float32(np.nan)
    assert fn(nan, np.float32(2)) == 2 and fn(np.float32(2), nan) == 2
    assert int(np.asarray(fn(nan, nan)).view(np.uint32)) == 0x7FFFFFFF


def test_min_of_plus_and_minus_zero_is_minus_zero_and_max_is_plus_zero():
    pz, nz = np.float32(0.0), np.float32(-0.0)
    assert np.signbit(bind_float(instr("min.f32")).fn(pz, nz))
    assert not np.signbit(bind_float(instr("max.f32")).fn(nz, pz))
    assert np.signbit(bind_float(instr("min.f64")).fn(np.float64(0.0), np.float64(-0.0)))


def test_min_nan_modifier_propagates_nan():
    r = bind_float(instr("min.NaN.f32")).fn(np.float32(np.nan), np.float32(2))
    assert int(np.asarray(r).view(np.uint32)) == 0x7FFFFFFF


def test_xorsign_abs_takes_magnitude_min_max_and_sign_xor():
    mn = bind_float(instr("min.xorsign.abs.f32")).fn
    mx = bind_float(instr("max.xorsign.abs.f32")).fn
    assert mn(np.float32(-3), np.float32(2)) == -2
    assert mx(np.float32(-3), np.float32(-2)) == 3


def test_three_input_max_is_max_of_all_three():
    assert bind_float(instr("max.f32", 3)).fn(np.float32(1), np.float32(7), np.float32(4)) == 7


def test_min_ftz_flushes_subnormal_operand():
    r = bind_float(instr("min.ftz.f32")).fn(np.float32(1e-40), np.float32(1))
    assert r == 0


def test_neg_f32_of_nan_is_the_canonical_nan_as_on_h100():
    r = bind_float(instr("neg.f32", 1)).fn(np.uint32(0x7F800001).view(np.float32))
    assert int(np.asarray(r).view(np.uint32)) == 0x7FFFFFFF


def test_neg_f64_of_nan_keeps_the_sign_and_sets_the_quiet_bit_as_on_h100():
    r = bind_float(instr("neg.f64", 1)).fn(np.uint64(0x7FF0000000000001).view(np.float64))
    assert int(np.asarray(r).view(np.uint64)) == 0x7FF8000000000001


def test_neg_f16_of_nan_is_the_canonical_nan_as_on_h100():
    r = bind_float(instr("neg.f16", 1)).fn(np.uint16(0x7C01).view(np.float16))
    assert int(np.asarray(r).view(np.uint16)) == 0x7FFF


def _f64(bits):
    return np.uint64(bits).view(np.float64)


@pytest.mark.parametrize("op,expected", [("add", 0xFFF8000000000007), ("sub", 0xFFF8000000000007),
                                         ("mul", 0xFFF8000000000007), ("div", 0x7FF8000000000001),
                                         ("min", 0xFFF8000000000007)])
def test_f64_result_of_two_nans_carries_the_operand_h100_picks_quieted(op, expected):
    # a = signalling NaN, payload 1; b = negative quiet NaN, payload 7
    r = bind_float(instr(f"{op}.rn.f64" if op not in ("min",) else "min.f64")).fn(_f64(0x7FF0000000000001), _f64(0xFFF8000000000007))
    assert int(np.asarray(r).view(np.uint64)) == expected


def test_f64_invalid_operation_gives_fff8000000000000():
    r = bind_float(instr("add.rn.f64")).fn(np.float64(np.inf), np.float64(-np.inf))
    assert int(np.asarray(r).view(np.uint64)) == 0xFFF8000000000000


def test_abs_f64_of_minus_zero_is_plus_zero():
    r = bind_float(instr("abs.f64", 1)).fn(np.float64(-0.0))
    assert int(np.asarray(r).view(np.uint64)) == 0


def test_neg_ftz_f32_of_subnormal_is_minus_zero():
    r = bind_float(instr("neg.ftz.f32", 1)).fn(np.float32(1e-40))
    assert int(np.asarray(r).view(np.uint32)) == 0x80000000


def test_copysign_takes_the_sign_of_the_first_operand():
    fn = SPEC["copysign"].bind(instr("copysign.f32")).fn
    assert fn(np.float32(-1), np.float32(2)) == -2 and fn(np.float32(1), np.float32(-2)) == 2


@pytest.mark.parametrize("prop,expected", [
    ("finite", [1, 1, 1, 0, 0]), ("infinite", [0, 0, 0, 1, 0]), ("number", [1, 1, 1, 1, 0]),
    ("notanumber", [0, 0, 0, 0, 1]), ("normal", [1, 1, 0, 0, 0]), ("subnormal", [0, 0, 1, 0, 0]),
])
def test_testp_classifies_zero_one_subnormal_inf_nan(prop, expected):
    b = SPEC["testp"].bind(instr(f"testp.{prop}.f32", 1))
    x = np.array([-0.0, 1.0, 1e-40, -np.inf, np.nan], np.float32)
    assert b.dst_types == ("pred",) and b.fn(x).tolist() == [bool(e) for e in expected]


def test_scalar_and_array_operands_mix_and_scalars_give_scalars():
    fn = bind_float(instr("fma.rz.f32", 3)).fn
    arr = fn(np.float32(2), np.arange(4, dtype=np.float32), np.float32(1))
    sc = fn(np.float32(2), np.float32(3), np.float32(1))
    assert arr.dtype == np.float32 and arr.shape == (4,) and type(sc) is np.float32 and sc == 7


def test_result_is_never_an_input_object():
    x = np.array([1.0, -2.0], np.float32)
    for m, n in [("max.f32", 2), ("abs.f32", 1), ("min.xorsign.abs.f32", 2), ("add.rn.f32", 2)]:
        args = [x] * n if m != "add.rn.f32" else [x, np.zeros(2, np.float32)]
        assert bind_float(instr(m, n)).fn(*args) is not x


def test_f16x2_add_computes_halves_independently():
    h = lambda v: int(np.float16(v).view(np.uint16))  # noqa: E731
    fn = bind_float(instr("add.rn.f16x2")).fn
    assert fn(np.uint32(h(1.5) << 16 | h(65504)), np.uint32(h(2) << 16 | h(65504))) == (h(3.5) << 16 | 0x7C00)


def test_add_ftz_f16_flushes_subnormal_inputs():
    fn = bind_float(instr("add.ftz.f16")).fn
    assert fn(np.float16(1e-6), np.float16(0)) == 0


def test_add_sat_f16_clamps_to_one():
    assert bind_float(instr("add.sat.f16")).fn(np.float16(0.75), np.float16(0.5)) == 1


def test_bf16_nan_result_is_canonical_7fff():
    assert bind_float(instr("mul.rn.bf16")).fn(np.uint16(0x7F81), np.uint16(0x3F80)) == 0x7FFF


def test_max_f16_orders_plus_zero_above_minus_zero():
    r = bind_float(instr("max.f16")).fn(np.float16(-0.0), np.float16(0.0))
    assert not np.signbit(r)


@pytest.mark.parametrize("mnemonic,unit", [("add.f32", "fp32"), ("mul.rn.f64", "fp64"), ("sub.f16", "fp16"),
                                           ("max.bf16x2", "fp16"), ("div.rn.f32", "fp32")])
def test_unit_class_follows_the_type(mnemonic, unit):
    assert bind_float(instr(mnemonic)).unit == unit


@pytest.mark.parametrize("mnemonic", ["add.rn.f32x2", "add.sat.f64", "fma.rz.f16", "add.ftz.bf16",
                                      "min.xorsign.f32", "fma.rn.oob.f16", "neg.rn.f32"])
def test_unsupported_combinations_raise(mnemonic):
    with pytest.raises(UnsupportedInstruction):
        bind_float(instr(mnemonic, 3 if mnemonic.startswith("fma") else 2))


# ----------------------------------------------------------------------------- PTX from Numba / NVRTC
def _numba_ptx():
    """PTX of float32/float64/float16 Numba kernels using + - * /, math.*, casts, abs, min/max, cuda.fma."""
    cuda = pytest.importorskip("numba.cuda")
    from numba import float32, int32, int64, uint32, uint8, int16
    from numba.core.types import float16

    def k32(out, a, b):
        i = cuda.grid(1)
        x, y = a[i], b[i]
        r = x + y - x * y / (y + float32(1)) + math.sqrt(x) + math.exp(y) + math.sin(x) + math.log(y)
        r += math.pow(x, y) + math.cos(x) + math.tan(x) + math.tanh(x) + math.atan2(x, y) + math.expm1(x)
        r += float32(int(x)) + abs(x) + min(x, y) + max(x, y) + cuda.fma(x, y, r) + math.floor(x) + math.ceil(y)
        r += math.fmod(x, y) + math.hypot(x, y) + math.erf(x) + math.lgamma(x) + float32(round(x))
        r += float32(int32(x)) + float32(uint32(y)) + float32(int64(x)) + float32(uint8(x)) + float32(int16(y))
        out[i] = r

    def k64(out, a, b):
        i = cuda.grid(1)
        x, y = a[i], b[i]
        r = x + y - x * y / (y + 1.0) + math.sqrt(x) + math.exp(y) + math.sin(x) + math.log(y) + math.pow(x, y)
        r += math.cos(x) + math.tanh(x) + math.atan2(x, y) + math.asin(x) + math.cosh(y) + math.log1p(y)
        r += float(int(x)) + abs(x) + min(x, y) + max(x, y) + cuda.fma(x, y, r) + math.floor(x) + math.trunc(x)
        r += math.copysign(x, y) + math.fmod(x, y) + math.hypot(x, y) + math.erfc(y) + math.gamma(y)
        r += float(int32(x)) + float(uint32(y)) + float(int64(x)) + float(float32(x)) + float(round(x))
        out[i] = r

    def k16(out, a, b):
        i = cuda.grid(1)
        x, y = a[i], b[i]
        out[i] = x + y * x - float16(float32(x) * float32(2.5)) + float16(int32(y))

    texts = []
    for f, t in [(k32, "float32"), (k64, "float64"), (k16, "float16")]:
        for fastmath in (False, True):
            ptx, _ = cuda.compile_ptx(f, f"void({t}[:], {t}[:], {t}[:])", cc=(9, 0), fastmath=fastmath)
            texts.append(ptx)
    return "\n".join(texts)


_FP16_SHIM = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void k(__half* o, __half* a, __nv_bfloat16* c, __half2* h2, float* f) {
  __half x = a[0], y = a[1];
  o[0] = x + y; o[1] = x - y; o[2] = x * y; o[3] = x / y; o[4] = __hfma(x, y, o[0]); o[5] = hsqrt(x);
  o[6] = hexp(x); o[7] = hsin(x); o[8] = hlog(y); o[9] = __habs(x); o[10] = __hneg(y); o[11] = __hmax(x, y);
  o[12] = __hmin(x, y); o[13] = hrsqrt(x); o[14] = hrcp(y); o[15] = hfloor(x); o[16] = hrint(x);
  o[17] = __float2half(f[0]); f[1] = __half2float(x); o[18] = __int2half_rn(3);
  __nv_bfloat16 p = c[0], q = c[1];
  c[2] = p + q; c[3] = p * q; c[4] = __hfma(p, q, c[2]); c[5] = __float2bfloat16(f[2]); f[3] = __bfloat162float(p);
  h2[2] = __hadd2(h2[0], h2[1]); h2[3] = __hmul2(h2[0], h2[1]); h2[4] = __hfma2(h2[0], h2[1], h2[2]);
}
"""


def _nvrtc_fp16_ptx():
    """PTX of the CUDA fp16/bf16 header operators Numba links for float16 code (compiled by NVRTC)."""
    import importlib.util
    import os
    try:
        from cuda.bindings import nvrtc
        inc = os.path.join(os.path.dirname(importlib.util.find_spec("nvidia").submodule_search_locations[0]),
                           "nvidia", "cu13", "include")
    except Exception:                                   # noqa: BLE001
        pytest.skip("NVRTC or the CUDA headers are not installed")
    _, prog = nvrtc.nvrtcCreateProgram(_FP16_SHIM.encode(), b"shim.cu", 0, [], [])
    opts = [b"-arch=compute_90", f"-I{inc}".encode()]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        pytest.skip(f"NVRTC failed: {err}")
    _, n = nvrtc.nvrtcGetPTXSize(prog)
    buf = b" " * n
    nvrtc.nvrtcGetPTX(prog, buf)
    return buf.decode().rstrip("\0")


_FLOAT_TYPES = {"f16", "bf16", "f32", "f64", "f16x2", "bf16x2"}
_DELEGATED = {"add", "sub", "mul", "mad", "div", "min", "max", "neg", "abs"}


def _float_instructions(ptx: str):
    """(mnemonic, source count) of every float instruction this module binds."""
    import re
    from isa.program import TYPE_NAMES
    found = {}
    for line in ptx.splitlines():
        line = line.split("//")[0].strip().lstrip("{").strip()
        m = re.match(r"(?:@!?%\w+\s+)?([a-z][\w.]*)\s+([^;]*);", line)
        if not m:
            continue
        mnemonic, ops = m.groups()
        op, *suf = mnemonic.split(".")
        types = {s for s in suf if s in TYPE_NAMES}
        if op == "cvt" or op in SPEC or (op in _DELEGATED and types & _FLOAT_TYPES):
            found[mnemonic] = len([o for o in ops.split(",") if o.strip()]) - 1
    return found


def _bind_any(mnemonic, nsrc):
    from isa.semantics.convert import bind_cvt
    ins = instr(mnemonic, nsrc)
    op = mnemonic.split(".")[0]
    return bind_cvt(ins) if op == "cvt" else SPEC[op].bind(ins) if op in SPEC else bind_float(ins)


def _exercise(bound):
    from isa.types import dtype
    rng = np.random.default_rng(0)
    args = [rng.integers(0, 256, 32 * dtype(t).itemsize, dtype=np.uint8).view(dtype(t)) for t in bound.src_types]
    out = bound.fn(*args)
    out = out if isinstance(out, tuple) else (out,)
    assert [np.asarray(o).dtype for o in out] == [dtype(t) for t in bound.dst_types]


@pytest.mark.parametrize("source", ["numba", "nvrtc_fp16"])
def test_every_float_mnemonic_in_generated_ptx_binds_and_runs(source):
    ptx = _numba_ptx() if source == "numba" else _nvrtc_fp16_ptx()
    found = _float_instructions(ptx)
    expect = {"numba": {"fma.rn.f32", "fma.rn.f64", "ex2.approx.ftz.f32", "cvt.rni.s32.f32", "div.rn.f64"},
              "nvrtc_fp16": {"add.f16", "fma.rn.f16", "fma.rn.f16x2", "mul.bf16", "cvt.rn.bf16.f32"}}[source]
    assert expect <= set(found)
    failures = []
    for mnemonic, nsrc in sorted(found.items()):
        try:
            _exercise(_bind_any(mnemonic, nsrc))
        except Exception as e:                          # noqa: BLE001
            failures.append(f"{mnemonic}: {e}")
    assert not failures, failures
