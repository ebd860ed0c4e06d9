"""Integer arithmetic semantics (isa.semantics.integer, isa.semantics.carry): each test states
one property with concrete numbers or checks random lanes against a Python-int reference."""
import numpy as np
import pytest

from isa.errors import UnsupportedInstruction
from isa.program import Instruction, Reg
from isa.semantics.carry import CARRY_FLAG, implicit_operands
from isa.semantics.integer import ENTRIES
from isa.types import dtype, unsigned_dtype

OPS = {e.name: e for e in ENTRIES}
RNG = np.random.default_rng(20261121)
WIDTH = {"s16": 16, "u16": 16, "s32": 32, "u32": 32, "s64": 64, "u64": 64}


@pytest.fixture(autouse=True)
def _numpy_quiet():
    """The executor runs semantics under np.errstate(all='ignore'); so do these tests."""
    with np.errstate(all="ignore"):
        yield


def bound(mnemonic: str, n_operands: int):
    op, *suffixes = mnemonic.split(".")
    instr = Instruction(op, tuple(suffixes), tuple(Reg(f"%r{i}") for i in range(n_operands)))
    return OPS[op].bind(instr)


def arr(values, t: str) -> np.ndarray:
    """Python ints (any sign) as an array of PTX type t, by their low bits."""
    dt = dtype(t)
    w = dt.itemsize * 8
    return np.array([v & ((1 << w) - 1) for v in values], dtype=unsigned_dtype(dt.itemsize)).view(dt)


def run(mnemonic, *srcs):
    b = bound(mnemonic, len(srcs) + 1)
    return b.fn(*(arr(s, t) for s, t in zip(srcs, b.src_types)))


def wrap(x: int, t: str) -> int:
    w = WIDTH[t]
    x &= (1 << w) - 1
    return x - (1 << w) if t[0] == "s" and x >> (w - 1) else x


def lanes(t: str, n: int = 512) -> list[int]:
    """Random values of type t with the edges (0, +-1, MIN, MAX, all ones) at the front."""
    w = WIDTH[t]
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if t[0] == "s" else (0, (1 << w) - 1)
    edges = [0, 1, hi, lo, hi - 1, lo + 1, 2, 3, 7] + ([-1, -2, -7] if t[0] == "s" else [])
    rand = [int(v) for v in RNG.integers(lo, hi, n - len(edges), endpoint=True, dtype=np.int64
                                         if w < 64 or t[0] == "s" else np.uint64)]
    return edges + rand


def pairs(t: str):
    a = lanes(t)
    b = lanes(t)
    b = b[3:] + b[:3]
    return a, b


# ----------------------------------------------------------------------------- add / sub / mul
@pytest.mark.parametrize("t", sorted(WIDTH))
@pytest.mark.parametrize("op,ref", [("add", lambda a, b: a + b), ("sub", lambda a, b: a - b),
                                    ("mul.lo", lambda a, b: a * b)])
def test_wrapping_ops_match_python_ints_modulo_width(op, ref, t):
    a, b = pairs(t)
    got = run(f"{op}.{t}", a, b)
    assert got.tolist() == [wrap(ref(x, y), t) for x, y in zip(a, b)]


def test_add_s32_overflow_wraps_to_int_min():
    assert run("add.s32", [2**31 - 1], [1]).tolist() == [-2**31]


def test_add_sat_s32_clamps_both_ways():
    assert run("add.sat.s32", [2**31 - 1, -2**31, 5], [1, -1, -3]).tolist() == [2**31 - 1, -2**31, 2]


def test_sub_sat_s32_clamps_int_min_minus_one():
    assert run("sub.sat.s32", [-2**31, 2**31 - 1], [1, -1]).tolist() == [-2**31, 2**31 - 1]


def test_add_u16x2_wraps_each_half_separately():
    assert run("add.u16x2", [0xFFFF_0001], [0x0001_FFFF]).tolist() == [0x0000_0000]


@pytest.mark.parametrize("t", sorted(WIDTH))
def test_mul_hi_is_the_upper_half_of_the_exact_product(t):
    a, b = pairs(t)
    assert run(f"mul.hi.{t}", a, b).tolist() == [wrap((x * y) >> WIDTH[t], t) for x, y in zip(a, b)]


def test_mul_hi_u64_of_all_ones_squared_is_all_ones_minus_one():
    assert run("mul.hi.u64", [2**64 - 1], [2**64 - 1]).tolist() == [2**64 - 2]


def test_mul_hi_s64_of_int_min_squared_is_two_to_the_62():
    assert run("mul.hi.s64", [-2**63], [-2**63]).tolist() == [2**62]


@pytest.mark.parametrize("t", ["s16", "u16", "s32", "u32"])
def test_mul_wide_gives_the_exact_double_width_product(t):
    a, b = pairs(t)
    assert run(f"mul.wide.{t}", a, b).tolist() == [x * y for x, y in zip(a, b)]


def test_mul_wide_s32_dst_type_is_s64():
    assert bound("mul.wide.s32", 3).dst_types == ("s64",)


def test_mul_wide_u64_is_unsupported():
    with pytest.raises(UnsupportedInstruction):
        bound("mul.wide.u64", 3)


# ----------------------------------------------------------------------------- mad / mul24 / sad
@pytest.mark.parametrize("t", sorted(WIDTH))
def test_mad_lo_and_hi_add_c_to_the_chosen_half(t):
    a, b = pairs(t)
    c = lanes(t)[::-1]
    w = WIDTH[t]
    assert run(f"mad.lo.{t}", a, b, c).tolist() == [wrap(x * y + z, t) for x, y, z in zip(a, b, c)]
    assert run(f"mad.hi.{t}", a, b, c).tolist() == [wrap((x * y >> w) + z, t) for x, y, z in zip(a, b, c)]


def test_mad_wide_s32_adds_a_64_bit_c():
    assert run("mad.wide.s32", [-3], [2**31 - 1], [2**40]).tolist() == [-3 * (2**31 - 1) + 2**40]


def test_mad_hi_sat_s32_clamps_the_sum():
    # hi(2^30 * 2^30) = 2^28; 2^28 + (2^31 - 1) saturates
    assert run("mad.hi.sat.s32", [2**30], [2**30], [2**31 - 1]).tolist() == [2**31 - 1]


def test_mad_lo_sat_is_unsupported():
    with pytest.raises(UnsupportedInstruction):
        bound("mad.lo.sat.s32", 4)


def test_mul24_hi_u32_returns_bits_47_to_16():
    assert run("mul24.hi.u32", [0xFF_FFFF], [0xFF_FFFF]).tolist() == [(0xFF_FFFF ** 2 >> 16) & 0xFFFF_FFFF]


def test_mul24_lo_s32_sign_extends_bit_23_and_ignores_the_top_byte():
    # 0x7F800000 has low 24 bits 0x800000 = -2^23
    assert run("mul24.lo.s32", [0x7F80_0000], [2]).tolist() == [-2**24]


def test_mad24_hi_sat_s32_clamps():
    assert run("mad24.hi.sat.s32", [0x7F_FFFF], [0x7F_FFFF], [2**31 - 100]).tolist() == [2**31 - 1]


def test_sad_s32_absolute_difference_of_extremes_wraps():
    # |INT_MIN - INT_MAX| = 2^32 - 1, + 5 wraps to 4
    assert run("sad.s32", [-2**31], [2**31 - 1], [5]).tolist() == [4]


@pytest.mark.parametrize("t", sorted(WIDTH))
def test_sad_matches_reference(t):
    a, b = pairs(t)
    c = lanes(t)[::-1]
    assert run(f"sad.{t}", a, b, c).tolist() == [wrap(z + abs(x - y), t) for x, y, z in zip(a, b, c)]


# ----------------------------------------------------------------------------- div / rem
def _trunc_div(x, y):
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


@pytest.mark.parametrize("t", sorted(WIDTH))
def test_div_and_rem_truncate_toward_zero(t):
    a, b = pairs(t)
    keep = [i for i in range(len(a)) if b[i] != 0]
    a, b = [a[i] for i in keep], [b[i] for i in keep]
    q = [wrap(_trunc_div(x, y), t) for x, y in zip(a, b)]
    r = [wrap(x - _trunc_div(x, y) * y, t) for x, y in zip(a, b)]
    assert run(f"div.{t}", a, b).tolist() == q
    assert run(f"rem.{t}", a, b).tolist() == r


def test_div_s32_minus_seven_by_two_is_minus_three_remainder_minus_one():
    assert (run("div.s32", [-7], [2]).tolist(), run("rem.s32", [-7], [2]).tolist()) == ([-3], [-1])


@pytest.mark.parametrize("t", sorted(WIDTH))
def test_division_by_zero_gives_all_ones_like_h200(t):
    ones = wrap(-1, t)
    assert run(f"div.{t}", [0, 5, wrap(-9, t)], [0, 0, 0]).tolist() == [ones] * 3
    assert run(f"rem.{t}", [0, 5, wrap(-9, t)], [0, 0, 0]).tolist() == [ones] * 3


@pytest.mark.parametrize("t", ["s16", "s32", "s64"])
def test_int_min_divided_by_minus_one_is_int_min_remainder_zero(t):
    lo = -(1 << (WIDTH[t] - 1))
    assert (run(f"div.{t}", [lo], [-1]).tolist(), run(f"rem.{t}", [lo], [-1]).tolist()) == ([lo], [0])


# ----------------------------------------------------------------------------- abs / neg / min / max
def test_abs_s32_of_int_min_is_int_min():
    assert run("abs.s32", [-2**31, -5, 5]).tolist() == [-2**31, 5, 5]


def test_neg_s64_of_int_min_is_int_min():
    assert run("neg.s64", [-2**63, 3]).tolist() == [-2**63, -3]


def test_neg_u32_is_unsupported():
    with pytest.raises(UnsupportedInstruction):
        bound("neg.u32", 2)


def test_min_is_signed_for_s32_and_unsigned_for_u32():
    assert run("min.s32", [-1], [1]).tolist() == [-1]
    assert run("min.u32", [0xFFFF_FFFF], [1]).tolist() == [1]


def test_max_relu_s32_clamps_negative_results_to_zero():
    assert run("max.relu.s32", [-5, -5], [-3, 4]).tolist() == [0, 4]


def test_min_s16x2_takes_the_signed_minimum_of_each_half():
    # low halves: 0x8000 (-32768) vs 1; high halves: 0x0002 vs 0xFFFF (-1)
    assert run("min.s16x2", [0x0002_8000], [0xFFFF_0001]).tolist() == [0xFFFF_8000]


def test_max_relu_s16x2_clamps_each_half():
    assert run("max.relu.s16x2", [0xFFFE_0003], [0xFFFF_0001]).tolist() == [0x0000_0003]


# ----------------------------------------------------------------------------- carry chains
def test_add_cc_u32_carries_out_of_all_ones_plus_one():
    d, cf = run("add.cc.u32", [0xFFFF_FFFF, 5], [1, 6])
    assert (d.tolist(), cf.tolist()) == ([0, 11], [True, False])


def test_addc_adds_the_carry_in():
    b = bound("addc.u32", 3)
    assert b.src_types == ("u32", "u32", "pred")
    assert b.fn(np.array([7], np.uint32), np.array([8], np.uint32), np.array([True])).tolist() == [16]


def test_sub_cc_writes_not_borrow_like_h200():
    d, cf = run("sub.cc.u32", [0, 5], [1, 5])
    assert (d.tolist(), cf.tolist()) == ([0xFFFF_FFFF, 0], [False, True])


def test_128_bit_add_through_add_cc_and_addc_matches_python():
    x, y = (3 << 64) | (2**64 - 5), (7 << 64) | 9
    lo, cf = bound("add.cc.u64", 3).fn(np.uint64(x % 2**64), np.uint64(y % 2**64))
    hi = bound("addc.u64", 3).fn(np.uint64(x >> 64), np.uint64(y >> 64), cf)
    assert (int(hi) << 64) | int(lo) == x + y


def test_128_bit_sub_through_sub_cc_and_subc_matches_python():
    x, y = (9 << 64) | 4, (2 << 64) | 10
    lo, cf = bound("sub.cc.u64", 3).fn(np.uint64(x % 2**64), np.uint64(y % 2**64))
    hi = bound("subc.u64", 3).fn(np.uint64(x >> 64), np.uint64(y >> 64), cf)
    assert (int(hi) << 64) | int(lo) == x - y


def test_mad_lo_cc_then_madc_hi_gives_a_64_bit_product_plus_addend():
    a, b, c = 0xDEAD_BEEF, 0xFEED_FACE, 0xFFFF_FFFF
    lo, cf = bound("mad.lo.cc.u32", 4).fn(np.uint32(a), np.uint32(b), np.uint32(c))
    hi = bound("madc.hi.u32", 4).fn(np.uint32(a), np.uint32(b), np.uint32(0), cf)
    assert (int(hi) << 32) | int(lo) == a * b + c


def test_implicit_operands_name_the_carry_flag():
    cc = Reg(CARRY_FLAG)
    add_cc = Instruction("add", ("cc", "u32"), (Reg("%r1"), Reg("%r2"), Reg("%r3")))
    madc = Instruction("madc", ("hi", "u32"), (Reg("%r1"), Reg("%r2"), Reg("%r3"), Reg("%r4")))
    plain = Instruction("add", ("u32",), (Reg("%r1"), Reg("%r2"), Reg("%r3")))
    assert implicit_operands(add_cc) == ((cc,), ())
    assert implicit_operands(madc) == ((), (cc,))
    assert implicit_operands(plain) == ((), ())


# ----------------------------------------------------------------------------- contract
MIXES = ["add.s32", "sub.u16", "mul.lo.s64", "mul.hi.u64", "mul.hi.s64", "mul.wide.s32", "div.s64",
         "rem.u32", "div.s16", "sad.s32", "mul24.hi.s32", "min.s16x2", "add.sat.s32", "mad.hi.sat.s32"]


@pytest.mark.parametrize("mnemonic", MIXES)
def test_scalar_and_array_inputs_give_the_same_lanes(mnemonic):
    n = 3 if mnemonic.startswith(("mad", "sad")) else 2
    b = bound(mnemonic, n + 1)
    vals = [arr([-7, 3, 2**31 - 1, 0], t) for t in b.src_types]
    full = b.fn(*vals)
    for k in range(n):                          # one uniform (scalar) operand at a time
        mixed = b.fn(*(v[2] if j == k else v for j, v in enumerate(vals)))
        spread = b.fn(*(np.full_like(v, v[2]) if j == k else v for j, v in enumerate(vals)))
        assert mixed.tolist() == spread.tolist() and mixed.dtype == spread.dtype
    uniform = b.fn(*(v[2] for v in vals))       # all uniform
    assert np.asarray(uniform) == full[2] and np.asarray(uniform).dtype == dtype(b.dst_types[0])


def test_float_forms_of_shared_opcodes_are_delegated():
    b = bound("add.f32", 3)
    assert b.src_types == ("f32", "f32") and b.unit == "fp32"


def test_integer_ops_run_on_the_int_unit():
    assert {bound(m, 3).unit for m in ("add.s32", "mul.wide.u32", "div.u64", "min.s16")} == {"int"}
