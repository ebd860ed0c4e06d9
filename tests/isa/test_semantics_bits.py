"""Logic and bit-manipulation semantics (isa.semantics.bits, bitfields, dot): one property per test, with
concrete numbers or random lanes against a Python-int transcription of the PTX pseudocode."""
import numpy as np
import pytest

from isa.errors import UnsupportedInstruction
from isa.program import Imm, Instruction, Reg
from isa.semantics import bitfields, bits, dot
from isa.types import dtype, unsigned_dtype

OPS = {e.name: e for m in (bits, bitfields, dot) for e in m.ENTRIES}
RNG = np.random.default_rng(7)
AMOUNTS = [0, 1, 7, 31, 32, 33, 63, 64, 65, 255, 256, 2**32 - 1]


@pytest.fixture(autouse=True)
def _numpy_quiet():
    with np.errstate(all="ignore"):
        yield


def bound(mnemonic: str, n_operands: int, imm: int | None = None):
    op, *suffixes = mnemonic.split(".")
    ops = tuple(Reg(f"%r{i}") for i in range(n_operands)) + ((Imm(imm),) if imm is not None else ())
    return OPS[op].bind(Instruction(op, tuple(suffixes), ops))


def arr(values, t: str) -> np.ndarray:
    dt = dtype(t)
    if t == "pred":
        return np.array(values, dtype=bool)
    w = dt.itemsize * 8
    return np.array([v & ((1 << w) - 1) for v in values], dtype=unsigned_dtype(dt.itemsize)).view(dt)


def run(mnemonic, *srcs, imm=None):
    b = bound(mnemonic, len(srcs) + 1, imm)
    args = [arr(s, t) for s, t in zip(srcs, b.src_types)]
    if imm is not None:
        args.append(dtype(b.src_types[-1]).type(imm))
    return b.fn(*args)


def rand(bits: int, n: int = 400) -> list[int]:
    edges = [0, 1, (1 << bits) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1, 0xFF, 0x80]
    words = RNG.integers(0, 2**32, (n - len(edges), 2)).tolist()
    return edges + [((hi << 32) | lo) % (1 << bits) for hi, lo in words]


def signed(x: int, bits: int) -> int:
    return x - (1 << bits) if x >> (bits - 1) else x


# ----------------------------------------------------------------------------- logic
def test_pred_logic_ops_are_boolean():
    p, q = [True, True, False, False], [True, False, True, False]
    assert run("and.pred", p, q).tolist() == [True, False, False, False]
    assert run("or.pred", p, q).tolist() == [True, True, True, False]
    assert run("xor.pred", p, q).tolist() == [False, True, True, False]
    assert run("not.pred", p).tolist() == [False, False, True, True]


def test_not_b16_inverts_all_sixteen_bits():
    assert run("not.b16", [0x00F0]).tolist() == [0xFF0F]


def test_cnot_b32_maps_zero_to_one_and_everything_else_to_zero():
    assert run("cnot.b32", [0, 1, 0xFFFF_FFFF]).tolist() == [1, 0, 0]


def test_and_u32_is_unsupported_like_ptxas():
    with pytest.raises(UnsupportedInstruction):
        bound("and.u32", 3)


@pytest.mark.parametrize("lut", range(256))
def test_lop3_applies_the_lookup_table_bitwise(lut):
    a, b, c = rand(32, 64), rand(32, 64)[::-1], rand(32, 64)[5:] + rand(32, 64)[:5]

    def ref(x, y, z):
        return sum(((lut >> ((x >> i & 1) << 2 | (y >> i & 1) << 1 | (z >> i & 1))) & 1) << i for i in range(32))
    assert run("lop3.b32", a, b, c, imm=lut).tolist() == [ref(x, y, z) for x, y, z in zip(a, b, c)]


# ----------------------------------------------------------------------------- shifts
def test_shl_b32_gives_zero_at_and_past_the_width():
    assert run("shl.b32", [1] * 6, [0, 31, 32, 33, 255, 2**32 - 1]).tolist() == [1, 2**31, 0, 0, 0, 0]


def test_shr_s32_fills_with_the_sign_past_the_width():
    assert run("shr.s32", [-8] * 5, [1, 31, 32, 255, 2**32 - 1]).tolist() == [-4, -1, -1, -1, -1]


def test_shr_u32_and_shr_b32_are_logical():
    assert run("shr.u32", [0x8000_0000] * 3, [31, 32, 33]).tolist() == [1, 0, 0]
    assert run("shr.b32", [0x8000_0000], [4]).tolist() == [0x0800_0000]


@pytest.mark.parametrize("t,bits", [("b16", 16), ("b32", 32), ("b64", 64)])
def test_shl_matches_reference_for_every_amount(t, bits):
    vals = rand(bits, len(AMOUNTS))
    got = run(f"shl.{t}", vals, AMOUNTS)
    assert got.tolist() == [(v << n) % (1 << bits) if n < bits else 0 for v, n in zip(vals, AMOUNTS)]


@pytest.mark.parametrize("t,bits", [("s16", 16), ("s32", 32), ("s64", 64)])
def test_shr_signed_matches_reference_for_every_amount(t, bits):
    vals = [signed(v, bits) for v in rand(bits, len(AMOUNTS))]
    got = run(f"shr.{t}", vals, AMOUNTS)
    assert got.tolist() == [v >> min(n, bits - 1) for v, n in zip(vals, AMOUNTS)]


def test_shr_s16_by_sixteen_of_a_negative_value_is_minus_one():
    assert run("shr.s16", [-2], [16]).tolist() == [-1]


def test_shf_l_wrap_uses_the_amount_mod_32():
    # {b:a} = 0x00000001_80000000 << (33 & 31 = 1): high word = 3
    assert run("shf.l.wrap.b32", [0x8000_0000], [1], [33]).tolist() == [3]


def test_shf_l_clamp_at_32_returns_a_and_shf_r_clamp_returns_b():
    assert run("shf.l.clamp.b32", [0x1234], [0x5678], [40]).tolist() == [0x1234]
    assert run("shf.r.clamp.b32", [0x1234], [0x5678], [40]).tolist() == [0x5678]


@pytest.mark.parametrize("mode", ["l.wrap", "r.wrap", "l.clamp", "r.clamp"])
def test_shf_matches_reference(mode):
    a, b = rand(32, 200), rand(32, 200)[::-1]
    c = [int(v) for v in RNG.integers(0, 70, 200)]
    n = [min(x, 32) if "clamp" in mode else x & 31 for x in c]
    v = [(y << 32) | x for x, y in zip(a, b)]
    ref = [((w << k) >> 32) & 0xFFFF_FFFF if mode[0] == "l" else (w >> k) & 0xFFFF_FFFF for w, k in zip(v, n)]
    assert run(f"shf.{mode}.b32", a, b, c).tolist() == ref


# ----------------------------------------------------------------------------- counting
@pytest.mark.parametrize("t,bits", [("b32", 32), ("b64", 64)])
def test_popc_and_clz_match_reference(t, bits):
    vals = rand(bits) + [(1 << k) - 1 for k in range(bits + 1)] + [1 << k for k in range(bits)]
    assert run(f"popc.{t}", vals).tolist() == [bin(v).count("1") for v in vals]
    assert run(f"clz.{t}", vals).tolist() == [bits - v.bit_length() for v in vals]


def test_popc_b64_result_is_u32():
    assert bound("popc.b64", 2).dst_types == ("u32",)


def test_clz_b64_of_two_to_the_53_plus_one_is_ten():
    # 2^53 + 1 rounds in float64; the count must not
    assert run("clz.b64", [2**53 + 1, 2**64 - 1]).tolist() == [10, 0]


def test_bfind_returns_all_ones_when_there_is_no_non_sign_bit():
    assert run("bfind.u32", [0]).tolist() == [0xFFFF_FFFF]
    assert run("bfind.s32", [0, -1]).tolist() == [0xFFFF_FFFF, 0xFFFF_FFFF]


def test_bfind_s32_of_minus_two_finds_bit_zero():
    assert run("bfind.s32", [-2, -2**31, 2**30]).tolist() == [0, 30, 30]


def test_bfind_shiftamt_u64_counts_from_the_top():
    assert run("bfind.shiftamt.u64", [1, 2**63, 0]).tolist() == [63, 0, 0xFFFF_FFFF]


@pytest.mark.parametrize("t,bits", [("b32", 32), ("b64", 64)])
def test_brev_matches_reference(t, bits):
    vals = rand(bits)
    assert run(f"brev.{t}", vals).tolist() == [int(f"{v:0{bits}b}"[::-1], 2) for v in vals]


# ----------------------------------------------------------------------------- bit fields
def bfe_ref(a, pos, ln, bits, is_signed):
    """PTX pseudocode; 64-bit forms take pos/len from all 32 bits (as H200 does)."""
    if bits == 32:
        pos, ln = pos & 0xFF, ln & 0xFF
    msb = bits - 1
    sbit = 0 if (not is_signed or ln == 0) else a >> min(pos + ln - 1, msb) & 1
    return sum(((a >> (pos + i) & 1) if (i < ln and pos + i <= msb) else sbit) << i for i in range(bits))


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
def test_bfe_matches_the_ptx_pseudocode(t):
    bits = int(t[1:])
    a = rand(bits, 300)
    pos = [int(v) for v in RNG.integers(0, 70, 300)] + [0x10F, 0x100, 2**32 - 1]
    ln = [int(v) for v in RNG.integers(0, 70, 300)] + [4, 0x108, 3]
    a += [a[5], a[6], a[7]]
    got = run(f"bfe.{t}", a, pos, ln)
    ref = [bfe_ref(x, p, n, bits, t[0] == "s") for x, p, n in zip(a, pos, ln)]
    assert got.view(unsigned_dtype(bits // 8)).tolist() == ref


def test_bfe_s32_sign_extends_the_field():
    assert run("bfe.s32", [0x0000_0F00], [8], [4]).tolist() == [-1]


def test_bfe_u32_takes_position_mod_256():
    assert run("bfe.u32", [0xF0], [0x104], [4]).tolist() == [0xF]


def test_bfe_u64_position_0x104_is_past_the_word():
    # 64-bit bfe does not reduce pos mod 256 on hardware (H200)
    assert run("bfe.u64", [0xF0], [0x104], [4]).tolist() == [0]


def bfi_ref(a, b, pos, ln, bits):
    if bits == 32:
        pos, ln = pos & 0xFF, ln & 0xFF
    f = b
    for i in range(min(ln, max(bits - pos, 0))):
        f = (f & ~(1 << (pos + i))) | ((a >> i & 1) << (pos + i))
    return f


@pytest.mark.parametrize("t,bits", [("b32", 32), ("b64", 64)])
def test_bfi_matches_the_ptx_pseudocode(t, bits):
    a, b = rand(bits, 300), rand(bits, 300)[::-1]
    pos = [int(v) for v in RNG.integers(0, 70, 300)]
    ln = [int(v) for v in RNG.integers(0, 70, 300)]
    assert run(f"bfi.{t}", a, b, pos, ln).tolist() == [bfi_ref(*x, bits) for x in zip(a, b, pos, ln)]


def test_bfi_b32_inserts_low_bits_of_a():
    assert run("bfi.b32", [0b101], [0xFFFF_FFFF], [4], [3]).tolist() == [0xFFFF_FFDF]


# ----------------------------------------------------------------------------- prmt / fns / dp
def test_prmt_selector_0x3210_returns_a():
    assert run("prmt.b32", [0x4433_2211], [0x8877_6655], imm=0x3210).tolist() == [0x4433_2211]


def test_prmt_selector_0x7654_returns_b():
    assert run("prmt.b32", [0x4433_2211], [0x8877_6655], [0x7654]).tolist() == [0x8877_6655]


def test_prmt_sign_flag_replicates_the_byte_msb():
    # selector nibbles 8, 9, 0, 1: byte 0 = 0x80 replicated (0xFF), byte 1 = 0x7F replicated
    # (0x00), then literal copies of bytes 0 and 1
    assert run("prmt.b32", [0x0000_7F80], [0], imm=0x1098).tolist() == [0x7F80_00FF]


def test_prmt_immediate_and_register_selectors_agree():
    a, b, c = rand(32, 300), rand(32, 300)[::-1], rand(32, 300)[7:] + rand(32, 300)[:7]
    for sel in c[:20]:
        assert run("prmt.b32", a, b, imm=sel).tolist() == run("prmt.b32", a, b, [sel] * len(a)).tolist()


@pytest.mark.parametrize("mode,ref", [
    ("f4e", [0x4433_2211, 0x5544_3322, 0x6655_4433, 0x7766_5544]),
    ("b4e", [0x6677_8811, 0x7788_1122, 0x8811_2233, 0x1122_3344]),
    ("rc8", [0x1111_1111, 0x2222_2222, 0x3333_3333, 0x4444_4444]),
    ("ecl", [0x4433_2211, 0x4433_2222, 0x4433_3333, 0x4444_4444]),
    ("ecr", [0x1111_1111, 0x2222_2211, 0x3333_2211, 0x4433_2211]),
    ("rc16", [0x2211_2211, 0x4433_4433, 0x2211_2211, 0x4433_4433]),
])
def test_prmt_modes_follow_the_ptx_table(mode, ref):
    assert run(f"prmt.b32.{mode}", [0x4433_2211] * 4, [0x8877_6655] * 4, [0, 1, 2, 3]).tolist() == ref


def test_fns_examples_from_the_ptx_isa():
    got = run("fns.b32", [0xAAAA_AAAA] * 4, [3, 3, 2, 2], [1, -1, 1, -1])
    assert got.tolist() == [3, 3, 3, 1]


def test_fns_hardware_edges_base_past_31_and_int_min_offset():
    got = run("fns.b32", [0xFFFF_FFFF] * 3, [32, 5, 40], [1, -2**31, 0])
    assert got.tolist() == [0xFFFF_FFFF, 0, 0xFFFF_FFFF]


def test_fns_matches_reference():
    def ref(mask, base, off):
        if off == 0:
            return base if mask >> base & 1 else 0xFFFF_FFFF
        order = range(base, 32) if off > 0 else range(base, -1, -1)
        hits = [p for p in order if mask >> p & 1]
        return hits[abs(off) - 1] if abs(off) <= len(hits) else 0xFFFF_FFFF
    m = rand(32, 300)
    base = [int(v) for v in RNG.integers(0, 32, 300)]
    off = [int(v) for v in RNG.integers(-40, 40, 300)]
    assert run("fns.b32", m, base, off).tolist() == [ref(*x) for x in zip(m, base, off)]


@pytest.mark.parametrize("at", ["u32", "s32"])
@pytest.mark.parametrize("bt", ["u32", "s32"])
def test_dp4a_and_dp2a_match_reference(at, bt):
    a, b, c = rand(32, 200), rand(32, 200)[::-1], rand(32, 200)[3:] + rand(32, 200)[:3]

    def part(x, k, size, sgn):
        v = x >> (size * k) & ((1 << size) - 1)
        return signed(v, size) if sgn else v
    out = "u32" if (at, bt) == ("u32", "u32") else "s32"
    cc = c if out == "u32" else [signed(z, 32) for z in c]
    wrap = (lambda v: v % 2**32) if out == "u32" else (lambda v: signed(v % 2**32, 32))
    ref4 = [wrap(z + sum(part(x, k, 8, at[0] == "s") * part(y, k, 8, bt[0] == "s") for k in range(4)))
            for x, y, z in zip(a, b, cc)]
    ref2 = [wrap(z + sum(part(x, k, 16, at[0] == "s") * part(y, 2 + k, 8, bt[0] == "s") for k in range(2)))
            for x, y, z in zip(a, b, cc)]
    assert run(f"dp4a.{at}.{bt}", a, b, c).tolist() == ref4
    assert run(f"dp2a.hi.{at}.{bt}", a, b, c).tolist() == ref2


# ----------------------------------------------------------------------------- contract
MIXES = [("shl.b64", 2), ("shr.s32", 2), ("shf.r.clamp.b32", 3), ("bfe.s64", 3), ("bfi.b32", 4),
         ("prmt.b32", 3), ("prmt.b32.b4e", 3), ("bfind.s32", 1), ("clz.b64", 1), ("brev.b64", 1),
         ("fns.b32", 3), ("dp4a.s32.u32", 3), ("cnot.b16", 1)]


@pytest.mark.parametrize("mnemonic,n", MIXES)
def test_scalar_and_array_inputs_give_the_same_lanes(mnemonic, n):
    b = bound(mnemonic, n + 1)
    vals = [arr([0xF0F0_1234_8001_0003, 3, 0x8000_0077, 5], t) for t in b.src_types]
    for k in range(n if n > 1 else 0):         # one uniform operand among arrays
        mixed = b.fn(*(v[1] if j == k else v for j, v in enumerate(vals)))
        spread = b.fn(*(np.full_like(v, v[1]) if j == k else v for j, v in enumerate(vals)))
        assert mixed.tolist() == spread.tolist() and mixed.dtype == spread.dtype
    uniform = np.asarray(b.fn(*(v[1] for v in vals)))
    assert uniform == b.fn(*vals)[1] and uniform.dtype == dtype(b.dst_types[0])


def test_logic_ops_run_on_the_int_unit():
    assert {bound(m, n).unit for m, n in (("and.b32", 3), ("shl.b64", 3), ("popc.b32", 2))} == {"int"}
