"""Loads and stores of the fast core: the reference ops (`gpusim.functional.ops`) that
ask the fast load/store unit first and run as the reference when it declines."""
from __future__ import annotations

import numpy as np

from gpusim.functional.ops import LoadOp, StoreOp
from isa.program import Address, Imm, Reg, Sym, Vector
from isa.types import unsigned_dtype


def _slots(cls) -> list[str]:
    out = []
    for c in cls.__mro__:
        out.extend(getattr(c, "__slots__", ()))
    return out


def address_base(dec, ins, addr: Address):
    """(register slot, its view: uint32 or uint64, constant) of where `addr`'s base comes from: slot
    bslot read as that view, or the constant (a symbol's address, or 0) where bslot < 0; None
    for a register the compiled passes do not read (not 32 or 64 bits, or a predicate)."""
    if isinstance(addr.base, Reg):
        s = dec.slot(addr.base, ins)
        width = dec.reg_dtypes[s].itemsize
        if width not in (4, 8) or dec.reg_dtypes[s] == np.bool_:
            return None
        return s, np.dtype(np.uint64 if width == 8 else np.uint32), np.uint64(0)
    if isinstance(addr.base, Sym):
        return -1, np.dtype(np.uint64), np.uint64(dec.symbol_address(addr.base.name, ins))
    return -1, np.dtype(np.uint64), np.uint64(0)


def fast_copy(cls, op, dec, ins, addr: Address):
    """A copy of reference op `op` as fast class `cls` (FastLoadOp, FastStoreOp) with where its
    address comes from: register slot `bslot` read as `bview` (uint32 or uint64), or the
    constant `bconst` (a symbol or none) when bslot < 0; None if its address form is not compiled.
    (A function, not a base class: the fast ops are their reference ops plus four slots.)"""
    fast = cls.__new__(cls)
    for name in _slots(type(op)):
        if hasattr(op, name):
            setattr(fast, name, getattr(op, name))
    fast.fused = {}                         # (banks, bank width) -> `lsu_fused`'s constants of the op, or None
    where = address_base(dec, ins, addr)
    if where is None:
        return None
    fast.bslot, fast.bview, fast.bconst = where
    dsts = getattr(op, "dsts", ())
    if op.dt == np.bool_ or any(d is not None and dec.reg_dtypes[d] == np.bool_ for d in dsts):
        return None
    fast.uview = unsigned_dtype(op.dt.itemsize)
    if cls is FastStoreOp:
        fast.src_slots = _source_slots(dec, ins, op)
    return fast


NO_U64 = np.zeros(1, np.uint64)


def base_of(st, slot: int, view: np.dtype, const):
    """(register array as `view`, uniform value, uniform?) of an address base `address_base` found:
    register `slot` of batch state `st` (an array, or one value for every lane), or `const`
    where slot < 0: what the compiled passes take as (base, bval, buniform)."""
    if slot >= 0:
        v = st.regs[slot]
        if type(v) is np.ndarray:
            return v.view(view), np.uint64(0), False
        return NO_U64, np.uint64(int(np.asarray(v).view(view))), True
    return NO_U64, const, True


def _source_slots(dec, ins, op) -> tuple | None:
    """Per element of store `op`: the register slot it stores (as bits: the register as wide as the
    access type), or -1 for an immediate; None where an element is neither (`memory_run` then
    leaves the store to itself)."""
    elems = []
    for v in ins.operands[1:]:
        elems.extend(v.elems if isinstance(v, Vector) else (v,))
    out = []
    for e in elems:
        if isinstance(e, Reg):
            s = dec.slot(e, ins)
            if dec.reg_dtypes[s].itemsize != op.dt.itemsize or dec.reg_dtypes[s] == np.bool_:
                return None
            out.append(s)
        elif isinstance(e, Imm):
            out.append(-1)
        else:
            return None
    return tuple(out) if len(out) == len(op.srcs) else None


class FastLoadOp(LoadOp):
    __slots__ = ("bslot", "bview", "bconst", "uview", "fused")

    def run(self, x):
        g = self.guard_mask(x) if self.guard is not None else None
        if type(g) is not np.ndarray and g is not None:
            if not g:
                return
            g = None
        if not x.lsu.fast_load(self, g):
            LoadOp.run(self, x)


class FastStoreOp(StoreOp):
    __slots__ = ("bslot", "bview", "bconst", "uview", "fused", "src_slots")

    def run(self, x):
        g = self.guard_mask(x) if self.guard is not None else None
        if type(g) is not np.ndarray and g is not None:
            if not g:
                return
            g = None
        vals = [f(x.state, x) for f in self.srcs]
        if not x.lsu.fast_store(self, vals, g):
            StoreOp.run(self, x)
