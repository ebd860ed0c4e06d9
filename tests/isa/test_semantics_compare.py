"""Comparison and selection semantics (isa.semantics.compare): setp, set, selp, slct."""
import operator

import numpy as np
import pytest

from isa.errors import UnsupportedInstruction
from isa.program import Instruction, PredPair, Reg
from isa.semantics.compare import ENTRIES
from isa.types import dtype, unsigned_dtype

OPS = {e.name: e for e in ENTRIES}
RNG = np.random.default_rng(11)
NAN = float("nan")


@pytest.fixture(autouse=True)
def _numpy_quiet():
    with np.errstate(all="ignore"):
        yield


def bound(mnemonic: str, n_operands: int, pair: bool = False):
    op, *suffixes = mnemonic.split(".")
    first = PredPair(Reg("%p"), Reg("%q")) if pair else Reg("%p")
    ops = (first,) + tuple(Reg(f"%r{i}") for i in range(n_operands - 1))
    return OPS[op].bind(Instruction(op, tuple(suffixes), ops))


def arr(values, t: str) -> np.ndarray:
    dt = dtype(t)
    if t == "pred" or dt.kind == "f":
        return np.array(values, dtype=dt)
    w = dt.itemsize * 8
    return np.array([v & ((1 << w) - 1) for v in values], dtype=unsigned_dtype(dt.itemsize)).view(dt)


def run(mnemonic, *srcs, pair=False):
    b = bound(mnemonic, len(srcs) + 1, pair)
    return b.fn(*(arr(s, t) for s, t in zip(srcs, b.src_types)))


def ints(t: str, n: int = 300) -> list[int]:
    w = int(t[1:])
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if t[0] == "s" else (0, (1 << w) - 1)
    edges = [0, 1, lo, hi, lo + 1, hi - 1] + ([-1] if t[0] == "s" else [])
    return edges + [lo + int(v) % (hi - lo + 1) for v in RNG.integers(0, 2**62, n)]


# ----------------------------------------------------------------------------- integer setp
INT_REFS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
            "gt": operator.gt, "ge": operator.ge, "lo": operator.lt, "ls": operator.le,
            "hi": operator.gt, "hs": operator.ge}


@pytest.mark.parametrize("cmp,t", [(c, t) for t in ("s16", "u16", "s32", "u32", "s64", "u64")
                                   for c in sorted(INT_REFS) if t[0] == "u" or c not in ("lo", "ls", "hi", "hs")])
def test_integer_setp_matches_python_comparisons(cmp, t):
    a = ints(t)
    b = a[2:] + a[:2]
    b[10:20] = a[10:20]                              # some equal pairs
    assert run(f"setp.{cmp}.{t}", a, b).tolist() == [INT_REFS[cmp](x, y) for x, y in zip(a, b)]


def test_setp_lo_on_a_signed_type_is_rejected_like_ptxas():
    with pytest.raises(UnsupportedInstruction):
        bound("setp.lo.s32", 3)


def test_setp_lt_on_a_bit_type_is_rejected_like_ptxas():
    with pytest.raises(UnsupportedInstruction):
        bound("setp.lt.b32", 3)


def test_setp_eq_b16_compares_bits():
    assert run("setp.eq.b16", [0xFFFF, 3], [0xFFFF, 4]).tolist() == [True, False]


# ----------------------------------------------------------------------------- float setp
# expected result for (1.0 vs NaN), (NaN vs NaN), (1.0 vs 2.0), (2.0 vs 2.0), (-0.0 vs 0.0)
FLOAT_TABLE = {
    "eq": [False, False, False, True, True], "ne": [False, False, True, False, False],
    "lt": [False, False, True, False, False], "le": [False, False, True, True, True],
    "gt": [False, False, False, False, False], "ge": [False, False, False, True, True],
    "equ": [True, True, False, True, True], "neu": [True, True, True, False, False],
    "ltu": [True, True, True, False, False], "leu": [True, True, True, True, True],
    "gtu": [True, True, False, False, False], "geu": [True, True, False, True, True],
    "num": [False, False, True, True, True], "nan": [True, True, False, False, False],
}


@pytest.mark.parametrize("t", ["f16", "f32", "f64"])
@pytest.mark.parametrize("cmp", sorted(FLOAT_TABLE))
def test_float_setp_ordered_and_unordered_forms(cmp, t):
    a, b = [1.0, NAN, 1.0, 2.0, -0.0], [NAN, NAN, 2.0, 2.0, 0.0]
    assert run(f"setp.{cmp}.{t}", a, b).tolist() == FLOAT_TABLE[cmp]


def test_setp_ftz_f32_flushes_a_negative_subnormal_to_zero():
    assert run("setp.lt.f32", [-1e-40], [0.0]).tolist() == [True]
    assert run("setp.lt.ftz.f32", [-1e-40], [0.0]).tolist() == [False]


def test_setp_ftz_f64_is_rejected_like_ptxas():
    with pytest.raises(UnsupportedInstruction):
        bound("setp.lt.ftz.f64", 3)


def test_setp_bf16_compares_the_bfloat_values_of_the_bits():
    # 0x3F80 = 1.0, 0x3F00 = 0.5, 0xBF80 = -1.0, 0x7FC0 = NaN
    assert run("setp.gt.bf16", [0x3F80, 0xBF80, 0x7FC0], [0x3F00, 0x3F00, 0x3F00]).tolist() == [True, False, False]


def test_setp_f16x2_pair_gives_low_and_high_half_results():
    # low halves: 1.0 (0x3C00) < 2.0 (0x4000); high halves: 2.0 < 1.0 is false
    p, q = run("setp.lt.f16x2", [0x4000_3C00], [0x3C00_4000], pair=True)
    assert (p.tolist(), q.tolist()) == ([True], [False])


def test_setp_f16x2_single_destination_is_the_low_half_like_h200():
    assert run("setp.lt.f16x2", [0x3C00_4000, 0x4000_3C00], [0x4000_3C00, 0x3C00_4000]).tolist() == [False, True]


def test_scalar_f16_setp_with_a_pair_is_rejected_like_ptxas():
    with pytest.raises(UnsupportedInstruction):
        bound("setp.lt.f16", 3, pair=True)


# ----------------------------------------------------------------------------- pairs and bool ops
def test_setp_pair_without_bool_op_writes_the_complement_to_q():
    p, q = run("setp.lt.s32", [1, 5], [2, 2], pair=True)
    assert (p.tolist(), q.tolist()) == ([True, False], [False, True])


@pytest.mark.parametrize("bop,ref", [("and", operator.and_), ("or", operator.or_), ("xor", operator.xor)])
def test_setp_bool_op_combines_t_and_not_t_with_c(bop, ref):
    a, b = [1, 1, 5, 5], [2, 2, 2, 2]
    c = [True, False, True, False]
    t = [x < y for x, y in zip(a, b)]
    p, q = run(f"setp.lt.{bop}.s32", a, b, c, pair=True)
    assert p.tolist() == [ref(x, z) for x, z in zip(t, c)]
    assert q.tolist() == [ref(not x, z) for x, z in zip(t, c)]


def test_setp_pair_with_a_sink_second_is_a_single_destination():
    op = Instruction("setp", ("lt", "s32"), (PredPair(Reg("%p"), None), Reg("%r1"), Reg("%r2")))
    b = OPS["setp"].bind(op)
    assert b.dst_types == ("pred",) and b.fn(np.int32(1), np.int32(2)) == np.bool_(True)


def test_setp_bool_op_reads_c_as_a_pred_source():
    assert bound("setp.ne.or.f32", 4).src_types == ("f32", "f32", "pred")


# ----------------------------------------------------------------------------- set
def test_set_u32_writes_all_ones_for_true():
    assert run("set.lt.u32.s32", [-1, 3], [0, 3]).tolist() == [0xFFFF_FFFF, 0]


def test_set_f32_writes_one_point_zero_for_true():
    assert run("set.gtu.f32.f32", [NAN, 1.0, 3.0], [0.0, 2.0, 2.0]).tolist() == [1.0, 0.0, 1.0]


# ----------------------------------------------------------------------------- selp / slct
def test_selp_picks_a_where_c_is_true():
    assert run("selp.b32", [1, 2], [10, 20], [True, False]).tolist() == [1, 20]


def test_selp_f64_keeps_nan_payload_bits():
    payload = np.array([0x7FF0_0000_0000_0123], dtype=np.uint64).view(np.float64)
    b = bound("selp.f64", 4)
    out = b.fn(payload, np.float64(0.0), np.array([True]))
    assert out.view(np.uint64).tolist() == [0x7FF0_0000_0000_0123]


def test_selp_f16_is_rejected_like_ptxas():
    with pytest.raises(UnsupportedInstruction):
        bound("selp.f16", 4)


def test_slct_s32_selects_a_for_non_negative_c():
    assert run("slct.b32.s32", [1, 1, 1], [2, 2, 2], [0, -1, 7]).tolist() == [1, 2, 1]


def test_slct_f32_treats_minus_zero_as_non_negative_and_nan_as_negative():
    assert run("slct.u32.f32", [1, 1], [2, 2], [-0.0, NAN]).tolist() == [1, 2]


def test_slct_ftz_f32_flushes_a_negative_subnormal_c():
    assert run("slct.b32.f32", [1], [2], [-1e-40]).tolist() == [2]
    assert run("slct.ftz.b32.f32", [1], [2], [-1e-40]).tolist() == [1]


# ----------------------------------------------------------------------------- contract
def test_units_follow_the_compared_type():
    units = {t: bound(f"setp.lt.{t}", 3).unit for t in ("s32", "u64", "f32", "f64", "f16")}
    assert units == {"s32": "int", "u64": "int", "f32": "fp32", "f64": "fp64", "f16": "fp16"}


@pytest.mark.parametrize("mnemonic,n", [("setp.lt.s64", 2), ("setp.ltu.f32", 2), ("selp.u64", 3),
                                        ("slct.s32.f32", 3), ("setp.ge.xor.u32", 3)])
def test_scalar_and_array_inputs_give_the_same_lanes(mnemonic, n):
    b = bound(mnemonic, n + 1)
    vals = [arr([True, False, True] if t == "pred" else
                ([1.5, NAN, -2.0] if dtype(t).kind == "f" else [7, 3, 0]), t) for t in b.src_types]
    for k in range(n):
        mixed = b.fn(*(v[0] if j == k else v for j, v in enumerate(vals)))
        spread = b.fn(*(np.full_like(v, v[0]) if j == k else v for j, v in enumerate(vals)))
        assert mixed.tolist() == spread.tolist()
    assert np.asarray(b.fn(*(v[0] for v in vals))) == b.fn(*vals)[0]
