"""The fast core's compiled ALU forms (gpusim/functional/fastpath/forms*.py) against the
reference semantics (isa.semantics), bit for bit, one form per test, on random bit patterns
rich in edge values (zeros, extremes, NaNs with payloads, subnormals, infinities)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
from llvmlite import binding as llvm
from llvmlite import ir

from gpusim.functional.fastpath import forms
from gpusim.functional.fastpath.alu_ir import I8, I64, IR, ir_type
from gpusim.functional.fastpath.segments import _llvm_target, _optimised
from isa import optable
from isa.parser import parse
from isa.types import dtype as ptx_dtype

N = 4096
INT_T = ("s16", "s32", "s64", "u16", "u32", "u64")


def instr(text: str):
    decls = (".reg .b16 %h<9>; .reg .b32 %r<9>; .reg .b64 %rd<9>; .reg .pred %p<9>; .reg .f32 %f<9>; "
             ".reg .f64 %fd<9>;")
    src = f".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{ {decls}\n{text}\n}}\n"
    (i,) = parse(src).kernel().instructions
    return i


def values(t: str, rng) -> np.ndarray:
    """N values of PTX type t: half random bit patterns, half edge values."""
    dt = ptx_dtype(t)
    if dt == np.bool_:
        return rng.random(N) < 0.5
    u = np.dtype(f"u{dt.itemsize}")
    bits = rng.integers(0, np.iinfo(u).max, N, dtype=u, endpoint=True)
    w = 8 * dt.itemsize
    if dt.kind == "f":
        f = np.finfo(dt)
        edge = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.0, np.inf, -np.inf, f.max, -f.max, f.tiny, -f.tiny,
                         f.smallest_subnormal, -f.smallest_subnormal, 3.0, 1e-3, 65504.0, 2.0 ** 31, -2.0 ** 31,
                         2.0 ** 63, 2.0 ** 64, -2.0 ** 63, 4294967295.0, 0.49999997, 2.5, -2.5], dt).view(u)
        nans = np.array([(0x7FF8 << 48) | 123, (0xFFF0 << 48) | 5, 0x7FF0000000000001] if w == 64 else
                        [0x7FC00000 | 77, 0xFF800001, 0x7F800001, 0x7FFFFFFF], u)
        edge = np.concatenate([edge, nans])
        small = (rng.integers(-64, 64, N) / 8.0).astype(dt).view(u)
        bits = np.where(rng.random(N) < 0.3, small, bits)
    else:
        lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
        edge = np.array([0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 255, hi, lo, lo + 1, -1, -2, hi - 1,
                         (1 << 16) - 1, 1 << 16, (1 << 31) - 1, 1 << 31, -(1 << 31)], object)
        edge = np.array([int(v) & ((1 << w) - 1) for v in edge], u)
        small = rng.integers(0, 70, N).astype(u)
        bits = np.where(rng.random(N) < 0.3, small, bits)
    pick = rng.random(N) < 0.4
    bits = np.where(pick, edge[rng.integers(0, len(edge), N)], bits)
    return bits.view(dt)


def compiled(ins, bound, emit, optimise: bool = False):
    """A machine-code function f(n, src pointers..., dst pointers...) running `emit` per element
    (with `optimise`, through the O3 pipeline that vectorises large segments' lane loops)."""
    srcs = [ptx_dtype(t) for t in bound.src_types]
    dsts = [ptx_dtype(t) for t in bound.dst_types]
    module = ir.Module("form")
    fty = ir.FunctionType(ir.VoidType(), [I64] + [ir.PointerType()] * (len(srcs) + len(dsts)))
    fn = ir.Function(module, fty, "f")
    entry, loop, done = (fn.append_basic_block(x) for x in ("entry", "loop", "done"))
    ir.IRBuilder(entry).branch(loop)
    b = ir.IRBuilder(loop)
    i = b.phi(I64)
    i.add_incoming(ir.Constant(I64, 0), entry)
    e = IR(b, module)
    vals = []
    for k, dt in enumerate(srcs):
        st = I8 if dt == np.bool_ else ir_type(dt)
        v = b.load(b.gep(fn.args[1 + k], [i], source_etype=st), typ=st)
        vals.append(b.icmp_unsigned("!=", v, ir.Constant(I8, 0)) if dt == np.bool_ else v)
    outs = emit(e, vals)
    for k, (v, dt) in enumerate(zip(outs, dsts)):
        st = I8 if dt == np.bool_ else ir_type(dt)
        b.store(b.zext(v, I8) if dt == np.bool_ else v, b.gep(fn.args[1 + len(srcs) + k], [i], source_etype=st))
    nxt = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, fn.args[0]), loop, done)
    ir.IRBuilder(done).ret_void()
    mod = llvm.parse_assembly(str(module))
    mod.verify()
    if optimise:
        mod = _optimised(mod)
    engine = llvm.create_mcjit_compiler(mod, _llvm_target())
    engine.finalize_object()
    cf = ctypes.CFUNCTYPE(None, ctypes.c_int64, *[ctypes.c_void_p] * (len(srcs) + len(dsts)))(
        engine.get_function_address("f"))
    return cf, engine, dsts


def check(text: str, seed: int = 0, optimise: bool = False) -> None:
    ins = instr(text)
    _, bound = optable.bind(ins)
    emit = forms.form(ins, bound)
    assert emit is not None, f"{text} is not compiled"
    rng = np.random.default_rng(seed)
    args = [values(t, rng) for t in bound.src_types]
    with np.errstate(all="ignore"):
        want = bound.fn(*args)
    want = list(want) if isinstance(want, tuple) else [want]
    fn, engine, dsts = compiled(ins, bound, emit, optimise)
    got = [np.zeros(N, dt) for dt in dsts]
    fn(N, *[a.ctypes.data for a in args], *[g.ctypes.data for g in got])
    for k, (g, w) in enumerate(zip(got, want)):
        w = np.broadcast_to(np.asarray(w, dsts[k]), (N,))
        bad = np.flatnonzero(g.view(f"u{g.itemsize}") != np.ascontiguousarray(w).view(f"u{w.itemsize}"))
        if len(bad):
            j = bad[0]
            raise AssertionError(f"{text}: destination {k} differs at {len(bad)} of {N} lanes; first: sources "
                                 f"{[a[j] for a in args]} -> compiled {g[j]!r}, reference {w[j]!r}")


def reg(t: str) -> str:
    special = {"pred": "%p", "f32": "%f", "f64": "%fd"}
    return special[t] if t in special else {2: "%h", 4: "%r", 8: "%rd"}[ptx_dtype(t).itemsize]


def ops3(mnemonic: str, t: str, dt: str | None = None, n: int = 2) -> str:
    d = reg(dt or t)
    return f"{mnemonic} {d}1, " + ", ".join(f"{reg(t)}{k + 2}" for k in range(n)) + ";"


INT_FORMS = ([ops3(f"{op}.{t}", t) for op in ("add", "sub", "mul.lo", "mul.hi", "div", "rem", "min", "max")
              for t in INT_T]
             + [ops3(f"mul.wide.{t}", t, {"s16": "s32", "u16": "u32", "s32": "s64", "u32": "u64"}[t])
                for t in ("s16", "u16", "s32", "u32")]
             + [ops3(f"mad.lo.{t}", t, n=3) for t in INT_T] + [ops3(f"mad.hi.{t}", t, n=3) for t in INT_T]
             + ["mad.wide.s32 %rd1, %r2, %r3, %rd4;", "mad.wide.u32 %rd1, %r2, %r3, %rd4;",
                "mad.wide.s16 %r1, %h2, %h3, %r4;", "add.sat.s32 %r1, %r2, %r3;", "sub.sat.s32 %r1, %r2, %r3;"]
             + [ops3(f"{op}.{t}", t, n=1) for op in ("neg", "abs") for t in ("s16", "s32", "s64")])
LOGIC_FORMS = ([ops3(f"{op}.{t}", t) for op in ("and", "or", "xor") for t in ("pred", "b16", "b32", "b64")]
               + [ops3(f"not.{t}", t, n=1) for t in ("pred", "b16", "b32", "b64")]
               + [f"shl.{t} {reg(t)}1, {reg(t)}2, %r3;" for t in ("b16", "b32", "b64")]
               + [f"shr.{t} {reg(t)}1, {reg(t)}2, %r3;" for t in ("b16", "b32", "b64", "s16", "s32", "s64", "u16",
                                                                   "u32", "u64")])
CMP_FORMS = ([f"setp.{c}.{t} %p1, {reg(t)}2, {reg(t)}3;" for t in ("s32", "u64", "s16")
              for c in ("eq", "ne", "lt", "le", "gt", "ge")]
             + [f"setp.{c}.u32 %p1, %r2, %r3;" for c in ("lo", "ls", "hi", "hs")]
             + ["setp.eq.b32 %p1, %r2, %r3;", "setp.ne.b64 %p1, %rd2, %rd3;",
                "setp.lt.and.s32 %p1|%p2, %r2, %r3, %p4;", "setp.ge.or.u32 %p1, %r2, %r3, %p4;",
                "setp.ne.xor.s64 %p1|%p2, %rd2, %rd3, %p4;", "setp.gt.s32 %p1|%p2, %r2, %r3;"]
             + [f"setp.{c}.{t} %p1, {reg(t)}2, {reg(t)}3;" for t in ("f32", "f64")
                for c in ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")]
             + ["setp.lt.ftz.f32 %p1, %f2, %f3;", "setp.equ.ftz.f32 %p1, %f2, %f3;",
                "setp.gt.and.f64 %p1|%p2, %fd2, %fd3, %p4;"]
             + [f"selp.{t} {reg(t)}1, {reg(t)}2, {reg(t)}3, %p4;" for t in ("b16", "s32", "u64", "f32", "f64")]
             + [f"mov.{t} {reg(t)}1, {reg(t)}2;" for t in ("pred", "b16", "u32", "s64", "f32", "f64")]
             + ["cvta.to.global.u64 %rd1, %rd2;", "cvta.shared.u64 %rd1, %rd2;", "cvta.to.local.u64 %rd1, %rd2;",
                "cvta.const.u64 %rd1, %rd2;"])
CVT_INT = ("s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64")


def _cvt_reg(t):
    return reg({"s8": "s16", "u8": "u16"}.get(t, t))


CVT_FORMS = ([f"cvt.{d}.{s} {_cvt_reg(d)}1, {_cvt_reg(s)}2;" for d in CVT_INT for s in CVT_INT if d != s]
             + [f"cvt.sat.{d}.{s} {_cvt_reg(d)}1, {_cvt_reg(s)}2;" for d in ("s8", "u16", "s32", "u32", "u64")
                for s in ("s16", "u32", "s64", "u64") if d != s]
             + [f"cvt.{r}.{d}.{s} {_cvt_reg(d)}1, {reg(s)}2;" for r in ("rzi", "rni", "rmi", "rpi")
                for d in ("s32", "u32", "s64", "u64", "s16") for s in ("f32", "f64")]
             + [f"cvt.rn.{d}.{s} {reg(d)}1, {_cvt_reg(s)}2;" for d in ("f32", "f64") for s in CVT_INT]
             + ["cvt.f64.f32 %fd1, %f2;", "cvt.rn.f32.f64 %f1, %fd2;"])
FLOAT_FORMS = ([ops3(f"{op}.{t}", t) for op in ("add", "sub", "mul", "add.rn", "sub.rn", "mul.rn", "min", "max")
                for t in ("f32", "f64")]
               + [ops3(f"{op}.{t}", t, n=3) for op in ("fma.rn", "mad.rn") for t in ("f32", "f64")]
               + ["add.sat.f32 %f1, %f2, %f3;", "fma.rn.sat.f32 %f1, %f2, %f3, %f4;"]
               + [ops3(f"{op}.{t}", t, n=1) for op in ("neg", "abs") for t in ("f32", "f64")])


@pytest.mark.parametrize("text", INT_FORMS)
def test_integer_form_matches_reference(text):
    check(text)


@pytest.mark.parametrize("text", LOGIC_FORMS)
def test_logic_and_shift_form_matches_reference(text):
    check(text)


@pytest.mark.parametrize("text", CMP_FORMS)
def test_compare_select_move_form_matches_reference(text):
    check(text)


@pytest.mark.parametrize("text", CVT_FORMS)
def test_conversion_form_matches_reference(text):
    check(text)


@pytest.mark.parametrize("text", FLOAT_FORMS)
def test_float_form_matches_reference(text):
    check(text, seed=1)


@pytest.mark.parametrize("text", ["add.ftz.f32 %f1, %f2, %f3;", "add.rz.f32 %f1, %f2, %f3;",
                                  "mul.rn.ftz.f32 %f1, %f2, %f3;", "add.cc.u32 %r1, %r2, %r3;",
                                  "ex2.approx.f16 %h1, %h2;", "rcp.approx.ftz.f64 %fd1, %fd2;",
                                  "rcp.rn.f32 %f1, %f2;", "lg2.approx.f32 %f1, %f2;", "popc.b32 %r1, %r2;"])
def test_forms_left_to_the_reference_are_not_claimed(text):
    ins = instr(text)
    assert forms.form(ins, optable.bind(ins)[1]) is None


BITFIELD_DIV_HALF_FORMS = ([f"bfe.{t} {reg(t)}1, {reg(t)}2, %r3, %r4;" for t in ("u32", "s32", "u64", "s64")]
                           + ["div.full.f32 %f1, %f2, %f3;", "div.full.ftz.f32 %f1, %f2, %f3;",
                              "cvt.rn.f16x2.f32 %r1, %f2, %f3;"])


@pytest.mark.parametrize("text", BITFIELD_DIV_HALF_FORMS)
def test_bitfield_division_and_half_pair_form_matches_reference(text):
    check(text, seed=2)


MUFU_FORMS = ([f"{op}.approx{ftz}.f32 %f1, %f2;" for op in ("rcp", "sqrt", "rsqrt", "ex2") for ftz in ("", ".ftz")]
              + ["rcp.f32 %f1, %f2;", "sqrt.f32 %f1, %f2;",
                 "div.approx.f32 %f1, %f2, %f3;", "div.approx.ftz.f32 %f1, %f2, %f3;", "div.f32 %f1, %f2, %f3;"])


@pytest.mark.parametrize("optimise", [False, True], ids=["plain", "vectorised"])
@pytest.mark.parametrize("text", MUFU_FORMS)
def test_approximate_form_matches_reference(text, optimise):
    check(text, seed=3, optimise=optimise)


def test_ex2_reference_is_within_half_an_ulp_and_a_hair():
    """transcendental.exp2, rounded to f32, against 2^x rounded from a float64 exp2 of the C
    library: equal on a million f32 inputs over the whole range where 2^x is a finite nonzero
    f32 (the polynomial's float64 is within 2^-50 of 2^x; a disagreement needs 2^x within that
    of a rounding boundary)."""
    from isa.semantics.transcendental import exp2     # here: one function of the module
    import math                                       # here: the C library's exp2 as the yardstick
    x = np.random.default_rng(4).uniform(-149.9, 127.9, 1_000_000).astype(np.float32).astype(np.float64)
    want = np.array([math.exp2(v) for v in x]).astype(np.float32)
    got = exp2(x).astype(np.float32)
    assert np.array_equal(got, want)
