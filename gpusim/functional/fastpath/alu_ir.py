"""LLVM IR for one lane of the fast core's compiled ALU forms: types, constants, the
register conversions, and the float helpers the forms share (`forms` lists the forms).

`IR` wraps an llvmlite builder positioned in one lane's code. `IR.convert` is
`gpusim.functional.state.convert` on one value (the conversion between a register's
dtype and an instruction's operand type); `convertible` says which pairs it handles.
NaN results are selected explicitly (canonical f32 NaN, f64 payload rules), so LLVM's
constant folding of immediates cannot change them.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from isa.types import SIGNED

I1, I8, I16, I32, I64, I128 = (ir.IntType(n) for n in (1, 8, 16, 32, 64, 128))
F32, F64 = ir.FloatType(), ir.DoubleType()
COMPILED_TYPES = frozenset({"pred", "b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64",
                            "s8", "s16", "s32", "s64", "f32", "f64"})
COMPILED_DTYPES = frozenset(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                                  np.uint16, np.uint32, np.uint64, np.float32, np.float64))
CANON32 = 0x7FFFFFFF
DEFAULT_NAN64 = 0xFFF8000000000000
QUIET64 = 1 << 51


def ir_type(dt: np.dtype) -> ir.Type:
    """The IR type of a value of numpy dtype `dt` (bool: i1)."""
    if dt == np.bool_:
        return I1
    if dt.kind == "f":
        return F32 if dt.itemsize == 4 else F64
    return ir.IntType(8 * dt.itemsize)


class IR:
    """The builder of one lane's code, with the conversions and constants the forms use."""

    def __init__(self, builder: ir.IRBuilder, module: ir.Module):
        self.b = builder
        self.module = module

    # ------------------------------------------------------------------ constants and bits
    def const(self, dt: np.dtype, value) -> ir.Value:
        """A constant of dtype `dt` with the bits of numpy scalar `value` (floats through
        their bits, so NaN payloads survive)."""
        v = np.asarray(value, dt)
        if dt == np.bool_:
            return ir.Constant(I1, int(bool(v)))
        if dt.kind == "f":
            bits = int(v.view(np.uint32 if dt.itemsize == 4 else np.uint64))
            return self.b.bitcast(ir.Constant(ir.IntType(8 * dt.itemsize), bits), ir_type(dt))
        return ir.Constant(ir_type(dt), int(v.astype(np.uint64 if dt.itemsize == 8 else np.int64)) &
                           ((1 << 8 * dt.itemsize) - 1))

    def int_const(self, ty: ir.IntType, value: int) -> ir.Value:
        return ir.Constant(ty, value & ((1 << ty.width) - 1))

    def bits(self, v: ir.Value) -> ir.Value:
        """A float's bits as an integer (integers unchanged)."""
        if v.type == F32:
            return self.b.bitcast(v, I32)
        if v.type == F64:
            return self.b.bitcast(v, I64)
        return v

    def intrinsic(self, name: str, ty: ir.Type, *args) -> ir.Value:
        fn = self.module.declare_intrinsic(name, [ty], ir.FunctionType(ty, [ty] * len(args)))
        return self.b.call(fn, list(args))

    # ------------------------------------------------------------------ register conversions
    def convert(self, v: ir.Value, have: np.dtype, want: np.dtype) -> ir.Value:
        """`gpusim.functional.state.convert` on one lane: same size keeps the bits,
        narrower truncates, wider sign- or zero-extends by the source's kind; bool
        (which the reference converts with astype) only to and from wider integers."""
        b = self.b
        if have == want:
            return v
        if have == np.bool_ or want == np.bool_:
            if have == np.bool_ and want.kind in "iu":
                return b.zext(v, ir_type(want))
            if want == np.bool_ and have.kind in "iu":
                return b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))
            raise NotCompiled("bool conversion")   # (`convertible` rules these out before any IR is built)
        wt = ir_type(want)
        if have.itemsize == want.itemsize:
            return v if v.type == wt else b.bitcast(v, wt)
        iv = self.bits(v)
        it = ir.IntType(8 * want.itemsize)
        if want.itemsize < have.itemsize:
            r = b.trunc(iv, it)
        else:
            r = b.sext(iv, it) if have.kind == "i" else b.zext(iv, it)
        return r if wt == it else b.bitcast(r, wt)

    # ------------------------------------------------------------------ float helpers
    def is_nan(self, v):
        return self.b.fcmp_unordered("uno", v, v)

    def canon32(self, v):
        """Any f32 NaN becomes the canonical NaN."""
        return self.b.select(self.is_nan(v), self.const(np.dtype(np.float32), np.uint32(CANON32).view(np.float32)), v)

    def quiet64(self, v):
        return self.b.bitcast(self.b.or_(self.b.bitcast(v, I64), ir.Constant(I64, QUIET64)), F64)

    def nan64(self, r, operands):
        """f64 NaN choice: where r is NaN, the first NaN of `operands` quieted, else the
        default NaN (`fp_exact.nan_operand` over numpy's result)."""
        b = self.b
        out = b.bitcast(ir.Constant(I64, DEFAULT_NAN64), F64)
        for x in reversed(operands):
            out = b.select(self.is_nan(x), self.quiet64(x), out)
        return b.select(self.is_nan(r), out, r)

    def signbit(self, v):
        iv = self.bits(v)
        return self.b.icmp_signed("<", iv, ir.Constant(iv.type, 0))

    def flush32(self, v):
        """.ftz on an f32: subnormals (exponent field 0) become zero of the same sign."""
        b = self.b
        iv = b.bitcast(v, I32)
        tiny = b.icmp_unsigned("<", b.and_(iv, ir.Constant(I32, 0x7FFFFFFF)), ir.Constant(I32, 0x00800000))
        return b.select(tiny, b.bitcast(b.and_(iv, ir.Constant(I32, 0x80000000)), F32), v)


def convertible(have: np.dtype, want: np.dtype) -> bool:
    """Whether `IR.convert` handles have -> want (both dtypes of compiled types)."""
    if have == want:
        return True
    if have == np.bool_ or want == np.bool_:
        other = want if have == np.bool_ else have
        return other.kind in "iu" and other.itemsize > 1          # a 1-byte int would be a bit view in numpy
    return True


class NotCompiled(Exception):
    """A form (or a conversion it needs) that the fast core leaves to the reference."""


def ext(e: IR, v, t: str, ty):
    """v of PTX integer type t widened to `ty`: sign extension for signed types."""
    return e.b.sext(v, ty) if t in SIGNED else e.b.zext(v, ty)


def one_type(ins, allowed) -> str | None:
    """The instruction's only type suffix if it is in `allowed`, else None."""
    return ins.types[0] if len(ins.types) == 1 and ins.types[0] in allowed else None

