"""The ALU forms the fast core compiles: each PTX arithmetic form as LLVM IR on one lane.

`form(ins, bound)` returns an emitter for an instruction whose form is listed here, or
None (the reference op runs it). An emitter gets an `alu_ir.IR` (the builder of one
lane's code) and the source values, already of the PTX types `bound.src_types`, and
returns the destination values of the types `bound.dst_types`: the reference's
`bound.fn` contract (`isa.opcodes`), one lane at a time, bit for bit:

- integer arithmetic, logic, shifts and bfe (`forms_int`);
- floating-point arithmetic, div.full.f32 and cvt (`forms_float`);
- the approximate f32 forms rcp, sqrt, rsqrt, ex2 and div.approx (`forms_mufu`);
- here: setp (integer and f32/f64 comparisons, `.ftz` for f32, `.and/.or/.xor`, `p|q`),
  selp, mov (not the vector pack/unpack forms), cvta.

Not compiled (the reference runs them): f16/bf16/packed types (but cvt.rn.f16x2.f32), `.ftz`
arithmetic, other rounding modes, carry (`.cc`) forms, lg2/sin/cos/tanh and the f64 and
half-precision approximate forms (their reference computes in numpy's float64 functions, which
compiled code would not reproduce to the bit), bfi, prmt and other rarer opcodes, vector mov. A new form (tensor-core `mma` fragments, say) is one maker
here; tests/functional/test_fast_alu.py checks every listed form against the reference.

Source: the reference semantics in isa/semantics (which cite the PTX ISA).
"""
from __future__ import annotations

from llvmlite import ir

from gpusim.functional.fastpath.alu_ir import COMPILED_TYPES, I64, one_type as _one_type
from gpusim.functional.fastpath.forms_float import _cvt, _div_full, _float
from gpusim.functional.fastpath.forms_int import _bfe, _int_arith, _logic
from gpusim.functional.fastpath.forms_mufu import mufu
from isa.memory_map import WINDOWS
from isa.program import Vector
from isa.types import SIGNED

# ----------------------------------------------------------------------------- compare and select
_INT_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
            "lo": "<", "ls": "<=", "hi": ">", "hs": ">="}
_FLOAT_CMP = {"eq": ("o", "=="), "lt": ("o", "<"), "le": ("o", "<="), "gt": ("o", ">"), "ge": ("o", ">="),
              "ne": ("o", "!="), "equ": ("u", "=="), "neu": ("u", "!="), "ltu": ("u", "<"), "leu": ("u", "<="),
              "gtu": ("u", ">"), "geu": ("u", ">="), "num": ("o", "ord"), "nan": ("u", "uno")}
_INT_CMP_TYPES = frozenset({"b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64"})


def _setp(ins, bound):
    mods = list(ins.modifiers)
    ftz = "ftz" in mods
    if ftz:
        mods.remove("ftz")
    boolop = next((m for m in mods if m in ("and", "or", "xor")), None)
    if boolop:
        mods.remove(boolop)
    if len(mods) != 1 or len(ins.types) != 1:
        return None
    op, t = mods[0], ins.types[0]
    if t in _INT_CMP_TYPES and op in _INT_CMP and not ftz:
        signed = t in SIGNED

        def cmp(e, a, b_):
            return (e.b.icmp_signed if signed else e.b.icmp_unsigned)(_INT_CMP[op], a, b_)
    elif t in ("f32", "f64") and op in _FLOAT_CMP and (not ftz or t == "f32"):
        kind, pred = _FLOAT_CMP[op]

        def cmp(e, a, b_):
            if ftz:
                a, b_ = e.flush32(a), e.flush32(b_)
            return (e.b.fcmp_ordered if kind == "o" else e.b.fcmp_unordered)(pred, a, b_)
    else:
        return None
    pair = len(bound.dst_types) == 2
    f = {"and": "and_", "or": "or_", "xor": "xor"}.get(boolop)

    def fn(e, s):
        r = cmp(e, s[0], s[1])
        if not pair:
            return [getattr(e.b, f)(r, s[2]) if f else r]
        nr = e.b.not_(r)
        return [getattr(e.b, f)(r, s[2]), getattr(e.b, f)(nr, s[2])] if f else [r, nr]
    return fn


def _selp(ins, bound):
    if ins.modifiers or _one_type(ins, COMPILED_TYPES - {"pred"}) is None:
        return None
    return lambda e, s: [e.b.select(s[2], s[0], s[1])]


def _mov(ins, bound):
    if ins.modifiers or _one_type(ins, COMPILED_TYPES) is None or any(isinstance(o, Vector) for o in ins.operands):
        return None
    return lambda e, s: [s[0]]


def _cvta(ins, bound):
    if bound.dst_types != ("u64",) or bound.src_types != ("u64",):
        return None
    space = next((m.split("::", 1)[0] for m in ins.modifiers if m != "to"), None)
    if space not in WINDOWS or any(m.endswith("::cluster") for m in ins.modifiers):
        return None
    base = WINDOWS[space]
    if base == 0:
        return lambda e, s: [s[0]]
    if "to" in ins.modifiers:
        return lambda e, s: [e.b.sub(s[0], ir.Constant(I64, base))]
    return lambda e, s: [e.b.add(s[0], ir.Constant(I64, base))]


# ----------------------------------------------------------------------------- the table
_FORMS = {
    "add": (_int_arith, _float), "sub": (_int_arith, _float), "mul": (_int_arith, _float),
    "mad": (_int_arith, _float), "fma": (_float,), "neg": (_int_arith, _float), "abs": (_int_arith, _float),
    "min": (_int_arith, _float), "max": (_int_arith, _float), "div": (_int_arith, _div_full, mufu), "rem": (_int_arith,),
    "and": (_logic,), "or": (_logic,), "xor": (_logic,), "not": (_logic,), "shl": (_logic,), "shr": (_logic,),
    "setp": (_setp,), "selp": (_selp,), "mov": (_mov,), "cvta": (_cvta,), "cvt": (_cvt,), "bfe": (_bfe,),
    "rcp": (mufu,), "sqrt": (mufu,), "rsqrt": (mufu,), "ex2": (mufu,),
}
# operand types compiled for one opcode only (its makers check the form): f16x2 results of cvt
_EXTRA_TYPES = {"cvt": frozenset({"f16x2"})}


def form(ins, bound):
    """The emitter of `ins` (bound as `bound`), or None when the fast core does not compile it."""
    makers = _FORMS.get(ins.opcode)
    if makers is None:
        return None
    types = COMPILED_TYPES | _EXTRA_TYPES.get(ins.opcode, frozenset())
    if any(t not in types for t in bound.src_types + bound.dst_types):
        return None
    if any(isinstance(o, Vector) for o in ins.operands):
        return None
    for make in makers:
        f = make(ins, bound)
        if f is not None:
            return f
    return None
