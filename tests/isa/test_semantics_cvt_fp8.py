"""cvt to and from fp8 pairs (.e4m3x2, .e5m2x2), bit-exact against an exact Fraction reference."""
from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np
import pytest

from fp_reference import instr
from isa.errors import UnsupportedInstruction
from isa.semantics.convert import bind_cvt

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# (exponent bits, mantissa bits, bias, MAX_NORM, has infinities)
FMT = {"e4m3x2": (4, 3, 7, 448, False), "e5m2x2": (5, 2, 15, 57344, True)}


def cvt(mnemonic, *args):
    return np.asarray(bind_cvt(instr(mnemonic, len(args))).fn(*args))


@functools.lru_cache(maxsize=None)
def ref_values(name):
    """Every finite fp8 value with its byte, from the format's definition."""
    e, m, bias, _, has_inf = FMT[name]
    out = {}
    for b in range(256):
        s, ef, mf = b >> 7, (b >> m) & ((1 << e) - 1), b & ((1 << m) - 1)
        if ef == (1 << e) - 1 and (has_inf or mf == (1 << m) - 1):
            continue
        v = Fraction(mf, 1 << m) * Fraction(2) ** (1 - bias) if ef == 0 else \
            (1 + Fraction(mf, 1 << m)) * Fraction(2) ** (ef - bias)
        out[b] = -v if s else v
    return out


def ref_round(x: float, name: str) -> int:
    """Nearest fp8 byte (ties to the even mantissa), saturating at MAX_NORM."""
    vals = ref_values(name)
    if x != x:
        return 0x7F
    mx = FMT[name][3]
    x = max(-mx, min(mx, x))
    fx = Fraction(x)
    best = min(vals.items(), key=lambda kv: (abs(kv[1] - fx), kv[0] & 1, kv[0] >> 7 != (x < 0 or str(x) == "-0.0")))
    return best[0]


@pytest.mark.parametrize("name", ["e4m3x2", "e5m2x2"])
def test_f32_pairs_round_to_nearest_even_and_saturate(name):
    rng = np.random.default_rng(7)
    mx = FMT[name][3]
    a = np.concatenate([rng.uniform(-1.2 * mx, 1.2 * mx, 60), rng.uniform(-2.0, 2.0, 60),
                        rng.uniform(-2.0 ** -6, 2.0 ** -6, 60), [np.inf, -np.inf, np.nan, 0.0, -0.0]])
    a = a.astype(np.float32)
    b = a[::-1].copy()
    d = cvt(f"cvt.rn.satfinite.{name}.f32", a, b).astype(np.uint16)
    want_hi = np.array([ref_round(float(x), name) for x in a])
    want_lo = np.array([ref_round(float(x), name) for x in b])
    assert ((d >> 8) == want_hi).all() and ((d & 0xFF) == want_lo).all()


def test_e4m3_ties_and_limits():
    a = np.array([464.0, 2.0 ** -10, 3 * 2.0 ** -10, 17.0, np.inf], np.float32)   # 17 is a tie: 16 | 18
    d = cvt("cvt.rn.satfinite.e4m3x2.f32", a, np.zeros_like(a)) >> 8
    assert [int(x) for x in d] == [0x7E, 0x00, 0x02, 0x58, 0x7E]


def test_f16x2_to_e5m2x2_keeps_half_positions():
    halves = np.array([1.5, -3.0], np.float16).view(np.uint16).astype(np.uint32)
    a = (halves[1] << np.uint32(16)) | halves[0]                  # hi = -3.0, lo = 1.5
    d = int(cvt("cvt.rn.satfinite.e5m2x2.f16x2", np.array([a], np.uint32))[0])
    assert d == (0xC2 << 8) | 0x3E


@pytest.mark.parametrize("name", ["e4m3x2", "e5m2x2"])
def test_every_fp8_value_widens_exactly_to_f16(name):
    vals = ref_values(name)
    bytes_ = np.array(sorted(vals), np.uint16)
    d = cvt(f"cvt.rn.f16x2.{name}", (bytes_ << np.uint16(8)) | bytes_).astype(np.uint32)
    hi = (d >> np.uint32(16)).astype(np.uint16).view(np.float16)
    lo = (d & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)
    want = np.array([np.copysign(float(vals[int(b)]), -1.0 if b & 0x80 else 1.0) for b in bytes_], np.float16)
    assert (hi.view(np.uint16) == want.view(np.uint16)).all() and (lo == hi).all()


def test_e4m3_nan_widens_to_canonical_f16_nan():
    d = int(cvt("cvt.rn.f16x2.e4m3x2", np.array([0x7F7F], np.uint16))[0])
    assert d == 0x7FFF7FFF


def test_fp8_destination_needs_satfinite():
    with pytest.raises(UnsupportedInstruction):
        bind_cvt(instr("cvt.rn.e4m3x2.f32", 2))
