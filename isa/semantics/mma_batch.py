"""Tensor-core matrix multiply-accumulate over whole batches: the block-FMA arithmetic of the
scalar reference `isa.semantics.mma_numerics.dot`, bit for bit, for every `BlockFma` parameter
set, compiled (tests/isa/test_mma_batch.py compares the two on random and edge-rich inputs of
every form and on random parameter sets).

What it computes: `mma(A, B, C, atype, btype, ctype, model)` with A (..., M, K), B (..., K, N),
C (..., M, N) bit patterns and any leading batch shape (the warps of a warp instruction, and
anything else), D (..., M, N) accumulator bits; the warp instructions pass B transposed, C and
D in their registers' order (`c_pos`, `c_split`), wgmma's scale-d and imm-scale as arguments,
so that no numpy pass over the operands is needed. `mma_acc` is the same arithmetic with D
written over C in place, for accumulators the caller holds at fixed positions (a wgmma's
registers: no copies in or out). The arithmetic is one compiled pass, `mma_kernel._kernel`
(its docstring says why it is exact).

Sources: as `isa.semantics.mma_numerics` (the model); IEEE 754 float64 arithmetic.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit

from isa.semantics.mma_kernel import _kernel
from isa.semantics.mma_steps import NONE, _round  # noqa: F401  (_round: tests hold it to the reference)
from isa.semantics.mma_numerics import ACC, BlockFma
from isa.semantics.tensor_formats import FORMATS, decode


@lru_cache(maxsize=None)
def _table(name: str, emin: int) -> tuple[np.ndarray, np.ndarray]:
    """(float64 value, anchor exponent `in_exp`) of every bit pattern of an 8- or 16-bit format."""
    v = decode(np.arange(1 << FORMATS[name].bits, dtype=np.int64), FORMATS[name])
    e = in_exp(v, emin)
    v.flags.writeable = e.flags.writeable = False
    return v, e


def in_exp(v: np.ndarray, emin: int) -> np.ndarray:
    """The exponent each nonzero finite value gives an `exp_sum` anchor (a subnormal: emin);
    NONE for zero (and for NaN/inf, whose blocks are decided otherwise)."""
    ok = (v != 0) & np.isfinite(v)
    e = np.frexp(np.where(ok, v, 1.0))[1].astype(np.int32) - 1
    return np.where(ok, np.maximum(e, emin), NONE)


def operand(bits, name: str, emin: int | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Bit patterns (any integer dtype) -> (exact float64 values, `in_exp` exponents with this
    emin, or None without an emin); tf32 ignores its low 13 bits."""
    fmt = FORMATS[name]
    if fmt.bits <= 16:
        idx = np.asarray(bits).astype(np.intp) & ((1 << fmt.bits) - 1)
        v, e = _table(name, 0 if emin is None else emin)
        return v[idx], None if emin is None else e[idx]
    b = np.asarray(bits).astype(np.uint32)
    if fmt.shift:
        b = b & np.uint32(0xFFFFFFFF ^ ((1 << fmt.shift) - 1))
    with np.errstate(invalid="ignore"):                   # signalling NaNs stay NaN
        v = b.view(np.float32).astype(np.float64)
    return v, None if emin is None else in_exp(v, emin)



def _lead(x: np.ndarray, lead: tuple, tail: tuple) -> np.ndarray:
    """x broadcast to lead + tail and flattened to (-1,) + tail."""
    if x.shape[:-2] != lead:
        x = np.broadcast_to(x, lead + tail)
    return x.reshape((-1,) + tail)


def _tables(name: str, emin: int):
    """`_kernel`'s decoding arguments for format `name`: (value table, exponent table, 32-bit mask,
    class tables (`_classes`))."""
    fmt = FORMATS[name]
    if fmt.bits <= 16:
        return _table(name, emin) + (0, _classes(name, emin))
    return _DUMMY_V, _DUMMY_E, 0xFFFFFFFF ^ ((1 << fmt.shift) - 1), _NO_CLASSES


@lru_cache(maxsize=None)
def _classes(name: str, emin: int) -> tuple:
    """The small decoding tables of an 8- or 16-bit format that `mma_kernel._kernel` reads first:
    (significand bits `man`, and per class of sign and exponent bits its scale, implicit bit and
    exponent). Pattern x of class h = x >> man decodes as scale[h] * (implicit[h] + (x & (2^man -
    1))), exact (at most 12 bits times a power of two), with exponent[h], where implicit[h] >= 0;
    that is only so where it is exactly `_table`'s value and exponent for each pattern of the
    class (checked here, over every pattern): the normal numbers. The others (zeros, subnormals,
    infinities, NaNs) get implicit -1: `_table`'s entries. The class tables are a few KiB where a
    16-bit format's full tables are 768 KiB, most of which a launch's other work evicts between
    tensor-core instructions."""
    fmt = FORMATS[name]
    man = fmt.man_bits
    v, e = _table(name, emin)
    vv, ee = v.reshape(-1, 1 << man), e.reshape(-1, 1 << man)
    one = float(1 << man)
    scale = vv[:, 0] / one
    with np.errstate(invalid="ignore"):
        exact = (vv == scale[:, None] * (one + np.arange(1 << man))).all(1)
    ok = np.isfinite(vv).all(1) & (vv[:, 0] != 0) & exact & (ee == ee[:, :1]).all(1)
    out = (man, np.where(ok, scale, 0.0), np.where(ok, 1 << man, -1).astype(np.int64), ee[:, 0].copy())
    for a in out[1:]:
        a.flags.writeable = False
    return out


_DUMMY_V, _DUMMY_E = np.zeros(1, np.float64), np.zeros(1, np.int32)
_NO_CLASSES = (0, np.zeros(1, np.float64), np.full(1, -1, np.int64), np.zeros(1, np.int32))


@lru_cache(maxsize=None)
def _identity(size: int) -> np.ndarray:
    """0 .. size - 1 (int64, read-only: shared by every call)."""
    x = np.arange(size, dtype=np.int64)
    x.flags.writeable = False
    return x


def mma(A, B, C, atype: str, btype: str, ctype: str, model: BlockFma, *, b_transposed: bool = False,
        zero_c=None, negate_a: bool = False, negate_b: bool = False, c_pos=None, b_index=None,
        c_split=None) -> np.ndarray:
    """D (..., M, N) uint64 accumulator bits for A (..., M, K), B (..., K, N) (or, with
    `b_transposed`, B^T (..., N, K)), C (..., M, N) bit patterns: `mma_numerics.mma` (the scalar
    reference) over a whole batch at once. `zero_c` (bool, the leading shape) takes C as +0 where
    set (wgmma's scale-d false); `negate_a` / `negate_b` flip the inputs' signs (imm-scale -1).
    With `c_pos` (M N int64, a permutation), C is (..., M N) elements in some other order
    (a fragment's registers, viewed as the accumulator's unsigned type), element (i, j) at
    c_pos[i N + j], and D is returned in that order and dtype. With `c_split` = (reg, col) (M N
    int64 each) instead, C is (R, T, L) (a fragment's registers of T batch elements, register
    major: what the executor holds, one array per register), element (i, j) of batch element t
    at C[reg[i N + j], t, col[i N + j]], and D is returned in that layout and dtype (the leading
    shape is then (T,)). With `b_index` (int, the leading
    shape), B is (NB, K, N) (or (NB, N, K) transposed) and batch element t uses B[b_index[t]]
    (the warps of a warpgroup share one B: read and decoded once)."""
    A, B, C = np.asarray(A), np.asarray(B), np.asarray(C)
    if b_transposed:
        B = np.swapaxes(B, -1, -2)
    m, k = A.shape[-2:]
    n = B.shape[-1]
    c_lead = C.shape[1:2] if c_split is not None else C.shape[:-1] if c_pos is not None else C.shape[:-2]
    lead = np.broadcast_shapes(A.shape[:-2], () if b_index is not None else B.shape[:-2], c_lead)
    plan = kernel_plan(atype, btype, ctype, model, k)
    a = _lead(A, lead, (m, k))
    if b_index is None:
        bt = np.swapaxes(_lead(B, lead, (k, n)), 1, 2)
        bidx = _identity(a.shape[0])
    else:
        bt = np.swapaxes(B.reshape((-1, k, n)), 1, 2)
        bidx = np.broadcast_to(np.asarray(b_index, np.int64), lead).reshape(-1)
    nt = a.shape[0]
    if c_split is not None:                                  # element (t, q) at flat reg[q] T L + t L + col[q]
        if len(lead) != 1:
            raise ValueError("c_split takes one leading axis")
        r, L = C.shape[0], C.shape[2]
        c = np.ascontiguousarray(C if C.shape[1] == nt else np.broadcast_to(C, (r, nt, L)))
        cpos, tstride = c_split[0] * (nt * L) + c_split[1], L
        out = np.empty(c.shape, C.dtype)
    elif c_pos is not None:
        c = np.ascontiguousarray((C if C.shape[:-1] == lead else np.broadcast_to(C, lead + C.shape[-1:])))
        cpos, tstride = c_pos, m * n
        out = np.empty((nt, m * n), C.dtype)
    else:                                                    # (C widened to D's uint64: one kernel form fewer)
        c = np.ascontiguousarray(_lead(C, lead, (m, n)), dtype=np.uint64)
        cpos, tstride = _identity(m * n), m * n
        out = np.empty((nt, m * n), np.uint64)
    zc = np.zeros(nt, np.bool_) if zero_c is None else np.broadcast_to(np.asarray(zero_c, bool), lead).reshape(nt)
    _run(plan, a, bt, bidx, c.reshape(-1), cpos, _strided(nt, tstride), zc, out.reshape(-1), negate_a, negate_b)
    if c_split is not None:
        return out
    return out.reshape(lead + ((m, n) if c_pos is None else (m * n,)))


def mma_acc(A, Bt, b_index, acc, cpos, tpos, zero_c, plan, negate_a: bool = False, negate_b: bool = False) -> None:
    """`mma` with D written over C in place: A (T, M, K) and Bt (NB, N, K) bit patterns (B
    transposed), batch element t using Bt[b_index[t]]; `acc` a flat array of the accumulator's
    unsigned type holding element (i, j) of batch element t at tpos[t] + cpos[i N + j] (C, read,
    then D, written there); `zero_c` (bool, T) takes C as +0; `plan` is `kernel_plan`'s."""
    _run(plan, A, Bt, b_index, acc, cpos, tpos, zero_c, acc, negate_a, negate_b)


@lru_cache(maxsize=None)
def kernel_plan(atype: str, btype: str, ctype: str, model: BlockFma, k: int) -> tuple:
    """What `_kernel` takes for these formats and this model, besides the operands (checked and
    built once per form), packed for `_packed` (`_pack`): (float64 tables, int32 tables, int64
    tables, int64 parameters, A's and B's sign bits that imm-scale flips)."""
    if model.rounding not in ("rz", "rne") or model.anchor not in ("exp_sum", "leading") \
            or model.truncate not in ("magnitude", "floor"):
        raise ValueError(f"unknown model parameter in {model}")
    fa, fb, fc = FORMATS[atype], FORMATS[btype], ACC[ctype]
    if model.promote:                                        # exact: the values stay, subnormals may not
        fa = fb = FORMATS[model.promote]
    order = np.arange(k) if model.order is None else np.asarray(model.order, np.int64)
    params = (model.block, model.window_bits, model.rounding == "rne", model.anchor == "exp_sum",
              model.truncate == "floor", model.c_last_rn, model.signed_zero, model.sum_bits or 0,
              model.rounding == "rne", model.overflow_inf, fc.man_bits, fc.exp_bits, fc.bias, fc.emin,
              model.nan_bits if ctype == "f32" else model.nan_bits_f16,
              _f32_products(atype, btype, fa.emin, fb.emin, fc, model))
    return _pack(_tables(atype, fa.emin), _tables(btype, fb.emin), (fa.emin, fb.emin), order, params) + \
        ((1 << (FORMATS[atype].bits - 1), 1 << (FORMATS[btype].bits - 1)),)


def _f32_products(atype: str, btype: str, aemin: int, bemin: int, fc, model: BlockFma) -> bool:
    """Whether `_kernel`'s vector loops may cut a block's products in float32 and sum them in
    int32 (8 columns a vector where float64 and int64 take 4), exactly as in float64: every
    product of two inputs is a normal float32 (at most 24 significand bits, 2^-126 <= |a b| <
    2^128); the scale 2^(window - 1 - anchor) is a float32 wherever a column has a nonzero
    product (the anchor at least the smallest exponent sum; a larger scale, where every product
    is 0, is clamped) and down to the largest anchor (C's exponent, or the largest exponent
    sum); so a scaled product is exact, or below 2^-126 in magnitude, where its cut is 0 (under
    `floor`, every nonzero one at least 2^-149, its sign kept); and a block's cut products, each
    below 2^(window + 1), sum to less than 2^31. f16 and fp8 inputs (H100's HMMA and QGMMA
    models) qualify; bf16 and tf32 do not (their products underflow float32)."""
    fa, fb = FORMATS[atype], FORMATS[btype]
    if fa.bits > 16 or fb.bits > 16 or fa.precision + fb.precision > 24 or model.anchor != "exp_sum":
        return False
    (va, ea), (vb, eb) = _table(atype, aemin), _table(btype, bemin)
    nza, nzb = (va != 0) & np.isfinite(va), (vb != 0) & np.isfinite(vb)
    pmin = np.abs(va[nza]).min() * np.abs(vb[nzb]).min()
    pmax = np.abs(va[nza]).max() * np.abs(vb[nzb]).max()
    emin_sum, emax_sum = int(ea[nza].min() + eb[nzb].min()), int(ea[nza].max() + eb[nzb].max())
    xmax = max(emax_sum, fc.emax)                            # the largest anchor (C's exponent at most emax)
    w = model.window_bits
    low = int(np.log2(pmin)) + w - 1 - xmax if model.truncate == "floor" else -149
    return bool(pmin >= 2.0 ** -126 and pmax < 2.0 ** 128 and w - 1 - emin_sum <= 127 and w - 1 - xmax >= -149
                and low >= -149 and model.block * ((1 << (w + 1)) - 1) < 1 << 31)


# where `_pack` puts `_kernel`'s scalars in its int64 parameters (after the tables' bounds, P_BOUNDS of them)
P_BOUNDS = 14
P_MASK, P_EMIN, P_MAN, P_MODEL = P_BOUNDS, P_BOUNDS + 2, P_BOUNDS + 4, P_BOUNDS + 6


def _pack(ta, tb, emins, order, model: tuple) -> tuple:
    """`_kernel`'s tables and scalars for one form in four arrays (`_packed` slices them): the
    float64 tables (A's values, B's, A's class scales, B's), the int32 ones (exponents, class
    exponents), the int64 ones (class implicit bits, the k order), and the parameters: the three
    groups' bounds, then the 32-bit masks, the emins, the class significand bits and the model's
    16 parameters (`_kernel`'s order: the 15 of the model, then `_f32_products`). Read-only: shared by every call of the form."""
    (atv, ate, amask, asplit), (btv, bte, bmask, bsplit) = ta, tb
    groups = ([atv, btv, asplit[1], bsplit[1]], [ate, bte, asplit[3], bsplit[3]], [asplit[2], bsplit[2], order])
    dtypes = (np.float64, np.int32, np.int64)
    out, bounds = [], []
    for arrays, dt in zip(groups, dtypes):
        arrays = [np.asarray(a) for a in arrays]
        if any(a.dtype != dt for a in arrays):               # pragma: no cover - the tables' dtypes are fixed
            raise ValueError(f"_kernel table of dtype {[a.dtype for a in arrays]}, {np.dtype(dt)} expected")
        out.append(np.concatenate(arrays))
        bounds += list(np.cumsum([0] + [len(a) for a in arrays]))
    p = np.array(bounds + [amask, bmask, emins[0], emins[1], asplit[0], bsplit[0]] + [int(v) for v in model],
                 np.int64)
    for a in out + [p]:
        a.flags.writeable = False
    return tuple(out) + (p,)


@njit(cache=True, nogil=True)
def _packed(a, bt, bidx, cflat, cpos, tpos, zc, oflat, fl, i32, i64, p, aflip, bflip):
    """`_kernel` with its tables and scalars as `_pack` packed them: 14 arguments where it takes
    36 (each costs about 0.1 us to pass from Python, and the 64-sized Triton attention default
    calls it 8 times a launch)."""
    asplit = (p[P_MAN], fl[p[2]:p[3]], i64[p[10]:p[11]], i32[p[7]:p[8]])
    bsplit = (p[P_MAN + 1], fl[p[3]:p[4]], i64[p[11]:p[12]], i32[p[8]:p[9]])
    m = P_MODEL
    _kernel(a, bt, bidx, cflat, cpos, tpos, fl[p[0]:p[1]], i32[p[5]:p[6]], fl[p[1]:p[2]], i32[p[6]:p[7]],
            p[P_MASK], p[P_MASK + 1], aflip, bflip, p[P_EMIN], p[P_EMIN + 1], asplit, bsplit, i64[p[12]:p[13]], zc,
            oflat, p[m], p[m + 1], p[m + 2] != 0, p[m + 3] != 0, p[m + 4] != 0, p[m + 5] != 0, p[m + 6] != 0,
            p[m + 7], p[m + 8] != 0, p[m + 9] != 0, p[m + 10], p[m + 11], p[m + 12], p[m + 13], p[m + 14],
            p[m + 15] != 0)


def _run(plan, a, bt, bidx, cflat, cpos, tpos, zc, oflat, negate_a: bool, negate_b: bool) -> None:
    """`_packed` on the operands in one form of each (`_writable`, `_readonly`), the form
    `gpusim.functional.wgmma_operands`' compiled calls pass: numba compiles the kernel once per
    form of its arguments (about 14 s a form), and the layouts and read-only flags callers
    happened to pass made 20 forms in a CI run (session 53: the mma tests from a cold cache, 11
    with this and `mma`'s C widened, element types alone apart)."""
    fl, i32, i64, p, (asign, bsign) = plan
    _packed(_writable(a), _writable(bt), _writable(bidx), cflat, _readonly(cpos), _writable(tpos), _writable(zc),
            oflat, fl, i32, i64, p, asign if negate_a else 0, bsign if negate_b else 0)


def _writable(x: np.ndarray) -> np.ndarray:
    """`x` if it is a writable C-contiguous array, else a copy that is (the kernel only reads it)."""
    return x if x.flags.c_contiguous and x.flags.writeable else np.array(x, order="C")


def _readonly(x: np.ndarray) -> np.ndarray:
    """`x` if it is a read-only C-contiguous array, else a read-only C-contiguous view (or copy) of it."""
    if x.flags.c_contiguous and not x.flags.writeable:
        return x
    x = np.ascontiguousarray(x).view()
    x.flags.writeable = False
    return x


@lru_cache(maxsize=256)
def _strided(nt: int, stride: int) -> np.ndarray:
    """t * stride for t < nt (int64, read-only: shared by every call)."""
    x = np.arange(nt, dtype=np.int64) * stride
    x.flags.writeable = False
    return x
