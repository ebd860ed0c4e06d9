"""The batched tensor-core numerics (isa.semantics.mma_batch) equal the scalar reference
(isa.semantics.mma_numerics.mma / dot) bit for bit: every fitted Hopper form on random and
edge-rich inputs (zeros of both signs, subnormals, the largest and smallest exponents, NaN,
infinities, tf32 low bits, products and C that cancel), and random parameter sets of the model."""
import dataclasses
import zlib

import numpy as np
import pytest

from isa.semantics import mma_batch as MB
from isa.semantics import mma_numerics as M
from isa.semantics.tensor_formats import FORMATS, encode_rn

FP8 = ("e4m3", "e5m2")
#: (instruction, A type, B type, accumulator, K) of every fitted form and K the instructions use
FORMS = ([("mma", t, t, c, k) for t, c, k in (("f16", "f32", 16), ("f16", "f32", 8), ("f16", "f16", 16),
                                              ("f16", "f16", 8), ("bf16", "f32", 16), ("bf16", "f32", 8),
                                              ("tf32", "f32", 8), ("tf32", "f32", 4))]
         + [("mma", a, b, c, 32) for a in FP8 for b in FP8 for c in ("f32", "f16")]
         + [("wgmma", t, t, c, k) for t, c, k in (("f16", "f32", 16), ("f16", "f16", 16), ("bf16", "f32", 16),
                                                  ("tf32", "f32", 8))]
         + [("wgmma", a, b, c, 32) for a in FP8 for b in FP8 for c in ("f32", "f16")])


def edge_bits(rng, name: str, shape, special: float) -> np.ndarray:
    """Bit patterns of format `name` drawn from edge-rich classes; `special` is the share of
    NaN / infinity patterns."""
    f = FORMATS[name]
    top = (1 << f.exp_bits) - 1
    n = int(np.prod(shape))
    cls = rng.choice(7, n, p=np.array([0.1, 0.12, 0.38, 0.2, 0.1, 0.1 - special, special]) / 1.0)
    expf = np.select([cls == 0, cls == 1, cls == 2, cls == 3, cls == 4, cls == 5],
                     [0, 0, f.bias + rng.integers(-3, 4, n), rng.integers(1, top, n), top - 1, 1], top)
    man = rng.integers(0, 1 << f.man_bits, n)
    man = np.select([cls == 0, cls == 1, cls == 4], [0, np.maximum(man, 1), (1 << f.man_bits) - 1 - (man & 1)], man)
    if f.ocp_e4m3:                                 # e4m3: top exponent is finite except S.1111.111
        man = np.where((cls == 6) | (expf < top), man, np.minimum(man, (1 << f.man_bits) - 2))
        man = np.where(cls == 6, (1 << f.man_bits) - 1, man)
    else:
        man = np.where(cls == 6, np.where(rng.random(n) < 0.5, 0, man | 1), man)
    bits = (rng.integers(0, 2, n) << (f.exp_bits + f.man_bits)) | (expf << f.man_bits) | man
    bits = bits.astype(np.uint64) << np.uint64(f.shift)
    if f.shift:                                     # tf32: garbage in the ignored low bits
        bits |= rng.integers(0, 1 << f.shift, n).astype(np.uint64)
    return bits.reshape(shape)


def tiny_bits(rng, name: str, shape) -> np.ndarray:
    """Patterns of format `name` with the exponent field 0 to 2: subnormals and the smallest normals."""
    f = FORMATS[name]
    n = int(np.prod(shape))
    bits = (rng.integers(0, 2, n) << (f.exp_bits + f.man_bits)) | (rng.integers(0, 3, n) << f.man_bits) \
        | rng.integers(0, 1 << f.man_bits, n)
    return (bits.astype(np.uint64) << np.uint64(f.shift)).reshape(shape)


def inputs(rng, atype, btype, ctype, cases: int, m: int, n: int, k: int, special: float):
    A = edge_bits(rng, atype, (cases, m, k), special)
    B = edge_bits(rng, btype, (cases, k, n), special)
    C = edge_bits(rng, ctype, (cases, m, n), special)
    sa = np.uint64(1 << (FORMATS[atype].bits - 1))
    # rows 0-3: odd k repeat the even k with A negated (cancelling pairs), but for one leftover
    # term; rows 4-7: C = -(a_0 b_0); row 8: A zero, C alone (QGMMA's cut of a subnormal C);
    # row 9 x columns 0-1: tiny products, sums below the smallest subnormal; rows 10-11: exact
    # cancellation; rows 9-11 onto a zero C of either sign
    A[:, 9, :] = tiny_bits(rng, atype, (cases, k))
    B[:, :, :2] = tiny_bits(rng, btype, (cases, k, 2))
    B[:, 1::2, 2:] = B[:, 0::2, 2:]
    A[:, :4, 1::2] = A[:, :4, 0::2] ^ sa
    A[:, 10:12, 1::2] = A[:, 10:12, 0::2] ^ sa
    A[:, :4, -1] = A[:, :4, 0]
    A[:, 8, :] = 0
    C[:, 9:12, :] = rng.integers(0, 2, (cases, 3, n)).astype(np.uint64) << np.uint64(FORMATS[ctype].bits - 1)
    with np.errstate(invalid="ignore", over="ignore"):
        from_a = MB.operand(A[:, 4:8, :1], atype, -1000)[0] * MB.operand(B[:, :1, :], btype, -1000)[0]
        C[:, 4:8, :] = encode_rn(-from_a, FORMATS[ctype])
    return A, B, C


def reference(A, B, C, atype, btype, ctype, model):
    return np.stack([M.mma(a, b, c, atype, btype, ctype, model) for a, b, c in zip(A, B, C)])


@pytest.mark.parametrize("form", FORMS, ids=lambda f: "_".join(map(str, f)))
def test_batch_equals_reference_on_edge_rich_inputs(form):
    instr, atype, btype, ctype, k = form
    model = M.hopper_model(instr, atype, ctype, k)
    rng = np.random.default_rng(zlib.crc32("_".join(map(str, form)).encode()))
    A, B, C = inputs(rng, atype, btype, ctype, 2, 16, 8, k, 0.08 / k)
    got = MB.mma(A, B, C, atype, btype, ctype, model)
    want = reference(A, B, C, atype, btype, ctype, model)
    f = FORMATS[ctype]
    special = (want >> np.uint64(f.man_bits) & np.uint64((1 << f.exp_bits) - 1)) == (1 << f.exp_bits) - 1
    assert special.any() and (~special).sum() >= want.size // 8    # NaN / inf results, and finite ones
    assert np.array_equal(got, want), np.argwhere(got != want)[:5]


@pytest.mark.parametrize("ctype", ["f32", "f16"])
def test_batch_equals_reference_on_finite_cancelling_inputs(ctype):
    """No NaN or infinity: every element goes through the block sums and roundings."""
    model = M.hopper_model("mma", "f16", ctype, 16)
    rng = np.random.default_rng(7)
    A, B, C = inputs(rng, "f16", "f16", ctype, 2, 16, 8, 16, 0.0)
    got = MB.mma(A, B, C, "f16", "f16", ctype, model)
    assert np.array_equal(got, reference(A, B, C, "f16", "f16", ctype, model))


def random_model(rng, k: int) -> M.BlockFma:
    order = tuple(int(x) for x in rng.permutation(k)) if rng.random() < 0.5 else None
    return M.BlockFma(block=int(rng.choice([2, 4, 8, 16])), window_bits=int(rng.integers(8, 31)),
                      rounding=str(rng.choice(["rz", "rne"])), anchor=str(rng.choice(["leading", "exp_sum"])),
                      truncate=str(rng.choice(["magnitude", "floor"])), order=order,
                      c_last_rn=bool(rng.random() < 0.3), signed_zero=bool(rng.random() < 0.5),
                      sum_bits=[None, 10, 14][int(rng.integers(3))], overflow_inf=bool(rng.random() < 0.5))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_batch_equals_reference_for_random_model_parameters(seed):
    rng = np.random.default_rng(100 + seed)
    itype, ctype = [("f16", "f32"), ("bf16", "f32"), ("f16", "f16"), ("tf32", "f32")][seed % 4]
    model = random_model(rng, 16)
    A, B, C = inputs(rng, itype, itype, ctype, 2, 16, 8, 16, 0.01)
    got = MB.mma(A, B, C, itype, itype, ctype, model)
    assert np.array_equal(got, reference(A, B, C, itype, itype, ctype, model)), model


def test_batch_takes_any_leading_shape_and_broadcasts():
    model = M.hopper_model("mma", "bf16", "f32", 16)
    rng = np.random.default_rng(3)
    A, B, C = inputs(rng, "bf16", "bf16", "f32", 6, 16, 8, 16, 0.0)
    flat = MB.mma(A, B, C, "bf16", "bf16", "f32", model)
    got = MB.mma(A.reshape(2, 3, 16, 16), B[:1], C.reshape(2, 3, 16, 8), "bf16", "bf16", "f32", model)
    want = MB.mma(A, np.repeat(B[:1], 6, 0), C, "bf16", "bf16", "f32", model)
    assert got.shape == (2, 3, 16, 8) and np.array_equal(got.reshape(6, 16, 8), want)
    assert not np.array_equal(flat, want)           # B differs between cases: the broadcast was used


@pytest.mark.parametrize("fmt", ["f32", "f16"])
@pytest.mark.parametrize("mode", ["rz", "rne"])
def test_compiled_rounding_equals_round_to_format(fmt, mode):
    f = FORMATS[fmt]
    rng = np.random.default_rng(11)
    for s, e in zip(rng.integers(-(1 << 40), 1 << 40, 400) >> rng.integers(0, 40, 400),
                    rng.integers(f.emin - f.man_bits - 45, f.emax + 5, 400)):
        for over in (False, True):
            want = M.round_to_format(int(s), int(e), f, mode, False, over)
            got = MB._round(np.int64(s), np.int64(e), f.man_bits, f.exp_bits, f.bias, f.emin, mode == "rne", over,
                            False)
            assert got == want, (s, e, over)


def test_batched_integer_sums_wrap_and_saturate_like_python_integers():
    rng = np.random.default_rng(4)
    A = rng.choice([0, 1, 0x7F, 0x80, 0xFF], (3, 16, 32)).astype(np.uint64)
    B = rng.choice([0, 1, 0x7F, 0x80, 0xFF], (3, 32, 8)).astype(np.uint64)
    C = rng.choice([0, 1, 0x7FFFFFFF, 0x80000000, 0x7FFF0000, 0x80010000], (3, 16, 8)).astype(np.uint64)
    s8 = lambda v: int(v) - 256 * (int(v) >= 128)                              # noqa: E731
    s32 = lambda v: int(v) - (1 << 32) * (int(v) >= 1 << 31)                   # noqa: E731
    for sat in (False, True):
        got = M.mma_int(A, B, C, "s8", "u8", sat)
        for t in range(3):
            for i in range(16):
                for j in range(8):
                    d = s32(C[t, i, j]) + sum(s8(A[t, i, k]) * int(B[t, k, j]) for k in range(32))
                    d = min(max(d, -(1 << 31)), (1 << 31) - 1) if sat else d
                    assert int(got[t, i, j]) == d % (1 << 32)


def test_unknown_model_parameter_is_refused():
    model = dataclasses.replace(M.hopper_model("mma", "f16", "f32", 16), rounding="rn")
    z = np.zeros((16, 16), np.uint64)
    with pytest.raises(ValueError, match="unknown model parameter"):
        MB.mma(z, z[:, :8], z[:, :8], "f16", "f16", "f32", model)


@pytest.mark.parametrize("form", FORMS, ids=lambda f: "_".join(map(str, f)))
def test_batch_equals_reference_on_uniformly_random_bits(form):
    """Every bit pattern equally likely (NaN, infinities and subnormals at their natural rates),
    given as wgmma and mma.sync give them: B transposed, C and D in a permuted (register) order,
    some warps with scale-d false, both inputs negated; 13 columns (not a multiple of the
    compiled loops' vector width)."""
    instr, atype, btype, ctype, k = form
    model = M.hopper_model(instr, atype, ctype, k)
    rng = np.random.default_rng(zlib.crc32(("uniform_" + "_".join(map(str, form))).encode()))
    fa, fb, fc = FORMATS[atype], FORMATS[btype], FORMATS[ctype]
    t, m, n = 3, 16, 13
    bits = lambda f, shape: rng.integers(0, 1 << f.bits, shape, dtype=np.uint64)   # noqa: E731
    A, Bt, C = bits(fa, (t, m, k)), bits(fb, (t, n, k)), bits(fc, (t, m, n))
    pos = rng.permutation(m * n)
    frag = np.zeros((t, m * n), np.uint64)
    frag[:, pos] = C.reshape(t, -1)
    zero_c = np.array([False, True, False])
    got = MB.mma(A, Bt, frag.astype({16: np.uint16, 32: np.uint32}[fc.bits]), atype, btype, ctype, model,
                 b_transposed=True, zero_c=zero_c, negate_a=True, negate_b=True, c_pos=pos)
    sa, sb = np.uint64(1 << (fa.bits - 1)), np.uint64(1 << (fb.bits - 1))
    want = reference(A ^ sa, np.swapaxes(Bt ^ sb, 1, 2), np.where(zero_c[:, None, None], np.uint64(0), C),
                     atype, btype, ctype, model)
    assert got.dtype == np.dtype({16: np.uint16, 32: np.uint32}[fc.bits])
    assert np.array_equal(got[:, pos].reshape(t, m, n).astype(np.uint64), want), \
        np.argwhere(got[:, pos].reshape(t, m, n) != want)[:5]


@pytest.mark.parametrize("name, normal_classes", [("f16", 60), ("bf16", 508), ("e4m3", 28), ("e5m2", 60)])
def test_class_tables_decode_every_pattern_as_the_full_tables(name, normal_classes):
    """The kernel decodes an 8- or 16-bit input from its sign-and-exponent class where the class is
    one of normal numbers: value and anchor exponent equal the full tables' for every pattern, and
    only the classes of zeros and subnormals and of infinities and NaNs (e4m3: its top exponent, which
    holds its NaN) take the full tables."""
    fmt = FORMATS[name]
    emin = 1 - fmt.bias
    tv, te = MB._table(name, emin)
    man, scale, implicit, exp = MB._classes(name, emin)
    x = np.arange(1 << fmt.bits)
    h = x >> man
    ok = implicit[h] >= 0
    v = np.where(ok, scale[h] * (implicit[h] + (x & ((1 << man) - 1))), tv)
    assert int((implicit >= 0).sum()) == normal_classes
    assert np.array_equal(v.view(np.int64)[ok], tv.view(np.int64)[ok])
    assert np.array_equal(np.where(ok, exp[h], te), te)


@pytest.mark.parametrize("form, truncate", [(("wgmma", "f16", "f16", "f32", 16), "magnitude"),
                                            (("wgmma", "f16", "f16", "f16", 16), "floor"),
                                            (("wgmma", "e4m3", "e5m2", "f32", 32), "magnitude"),
                                            (("mma", "e5m2", "e4m3", "f16", 32), "floor")],
                         ids=lambda f: "_".join(map(str, f)) if isinstance(f, tuple) else f)
def test_batch_cuts_f16_and_fp8_products_in_float32_as_the_reference(form, truncate):
    """f16 and fp8 products (`mma_batch._f32_products`: cut in float32, summed in int32, where
    there are 16 columns or more) equal the reference, edge-rich and cancelling inputs, 24 columns."""
    instr, atype, btype, ctype, k = form
    model = dataclasses.replace(M.hopper_model(instr, atype, ctype, k), truncate=truncate)
    assert MB.kernel_plan(atype, btype, ctype, model, k)[3][-1] == 1
    assert MB.kernel_plan("bf16", "bf16", ctype, model, k)[3][-1] == 0     # bf16 products underflow float32
    rng = np.random.default_rng(zlib.crc32(("f32_products_" + "_".join(map(str, form)) + truncate).encode()))
    A, B, C = inputs(rng, atype, btype, ctype, 2, 16, 24, k, 0.02 / k)
    got = MB.mma(A, B, C, atype, btype, ctype, model)
    assert np.array_equal(got, reference(A, B, C, atype, btype, ctype, model))
