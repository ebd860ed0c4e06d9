"""Executable ops: one object per decoded instruction, with `run(executor)`.

An op reads its sources over the executor's current lane span, computes, and
writes its destinations under the active mask (and its guard predicate). ALU ops
call the opcode table's bound function; memory ops go through the load/store unit
(`gpusim.functional.lsu`); warp collectives and barriers act on whole warps
(`gpusim.functional.collectives`). Branches, `ret` and `exit` are not ops: they end
a basic block and the executor's reconvergence stacks carry them out.
"""
from __future__ import annotations

import numpy as np

from isa.errors import UnsupportedInstruction
from isa.semantics.carry import implicit_operands
from isa.program import Address, Imm, Instruction, Reg, Sym
from isa.types import dtype as ptx_dtype

U64 = np.dtype(np.uint64)
# The simulator's grid-wide barrier (cooperative groups' this_grid().sync(), defined in PTX by
# gpusim/frontend/cg.py) is written `barrier.sync GRID_BARRIER_ID`: PTX barrier ids are 0..15 and
# ptxas rejects any other, so no kernel compiled for a GPU contains this one.
GRID_BARRIER_ID = 0x6772


class Op:
    __slots__ = ("index", "guard", "info")
    is_cta_barrier = False

    def guard_mask(self, x):
        """None (no guard), or the guard predicate over the span (array or numpy bool)."""
        s, neg = self.guard
        g = x.state.read(s, np.dtype(np.bool_))
        return ~g if neg else g


class AluOp(Op):
    __slots__ = ("fn", "srcs", "dsts")

    def __init__(self, index, guard, fn, srcs, dsts):
        self.index, self.guard, self.fn, self.srcs, self.dsts = index, guard, fn, srcs, dsts

    def run(self, x):
        st = x.state
        g = None
        if self.guard is not None:
            g = self.guard_mask(x)
            if type(g) is not np.ndarray:
                if not g:
                    return
                g = None
        out = self.fn(*[f(st, x) for f in self.srcs])
        if len(self.dsts) == 1:
            st.write(self.dsts[0], out, g)
        else:
            for d, v in zip(self.dsts, out):
                if d is not None:
                    st.write(d, v, g)


class AddressOp(Op):
    """Base of ops with a `[base+offset]` operand: computes per-lane u64 addresses."""
    __slots__ = ("base", "offset", "space")

    def set_address(self, dec, ins: Instruction, addr: Address):
        self.offset = np.uint64(addr.offset & 0xFFFFFFFFFFFFFFFF)
        if isinstance(addr.base, Reg):
            s = dec.slot(addr.base, ins)
            width = dec.reg_dtypes[s].itemsize
            want = np.dtype(np.uint64) if width == 8 else np.dtype(np.uint32)
            self.base = lambda st, x: st.read(s, want).astype(U64, copy=False) if width != 8 else st.read(s, want)
        elif isinstance(addr.base, Sym):
            v = np.uint64(dec.symbol_address(addr.base.name, ins))
            self.base = lambda st, x: v
        else:
            self.base = lambda st, x: np.uint64(0)

    def addresses(self, x):
        a = self.base(x.state, x) + self.offset
        return a


class LoadOp(AddressOp):
    __slots__ = ("dsts", "dt", "param")

    def run(self, x):
        g = self.guard_mask(x) if self.guard is not None else None
        if self.param is not None:                       # ld.param [sym+off]: uniform
            vals = x.lsu.load_param(self.param, int(self.offset), self.dt, len(self.dsts))
            for d, v in zip(self.dsts, vals):
                if d is not None:
                    x.state.write(d, v, g if type(g) is np.ndarray else None)
            return
        x.lsu.load(self, self.addresses(x), g)


class StoreOp(AddressOp):
    __slots__ = ("srcs", "dt")

    def run(self, x):
        g = self.guard_mask(x) if self.guard is not None else None
        vals = [f(x.state, x) for f in self.srcs]
        x.lsu.store(self, self.addresses(x), vals, g)


class AtomOp(AddressOp):
    __slots__ = ("dst", "srcs", "combine", "dt", "opname")

    def run(self, x):
        g = self.guard_mask(x) if self.guard is not None else None
        vals = [f(x.state, x) for f in self.srcs]
        x.lsu.atomic(self, self.addresses(x), vals, g)


class WarpOp(Op):
    """shfl / vote / activemask / match / bar.warp.sync: carried out by collectives."""
    __slots__ = ("kind", "mods", "dsts", "srcs")

    def run(self, x):
        g = self.guard_mask(x) if self.guard is not None else None
        x.collectives.run(self, g)


class BarrierOp(Op):
    """bar.sync / barrier.sync / bar.red: the warps of the step wait at this barrier.
    `scope` is 'cta', or 'grid' for the grid barrier (GRID_BARRIER_ID): it releases when
    every block of the launch waits at a grid barrier (`collectives.Collectives.release`), or
    'cluster' for barrier.cluster.wait (`gpusim.functional.cluster`)."""
    __slots__ = ("red", "dst", "pred", "scope")
    is_cta_barrier = True

    def run(self, x):
        if self.red is not None:
            x.collectives.barrier_red_arrive(self)


class ClusterArriveOp(Op):
    """barrier.cluster.arrive: the active threads arrive in their cluster's current phase
    (`gpusim.functional.cluster`)."""
    __slots__ = ()

    def run(self, x):
        st = x.state
        m = np.ones(st.hi - st.lo, bool) if st.m is None else st.m
        if self.guard is not None:
            m = m & self.guard_mask(x)
        lanes = st.lo + np.flatnonzero(m)
        if len(lanes):
            x.cluster_unit().arrive(self, lanes)


def _cluster_barrier(dec, ins: Instruction, i: int, guard):
    """barrier.cluster.arrive (an op) or barrier.cluster.wait (a barrier of scope 'cluster')."""
    if "arrive" in ins.modifiers:
        op = ClusterArriveOp()
        op.index, op.guard = i, guard
        return op
    if guard is not None:
        raise UnsupportedInstruction(ins.mnemonic, ptx_line=ins.ptx_line, kernel=dec.kernel.name,
                                     reason="a guarded barrier.cluster.wait is not supported")
    op = BarrierOp()
    op.index, op.guard, op.red, op.dst, op.pred, op.scope = i, None, None, None, None, "cluster"
    return op


class FenceOp(Op):
    """membar / fence: no functional effect (memory here is sequentially consistent); the
    sanitizer (racecheck) orders accesses through it, so it hears which lanes ran it."""
    __slots__ = ()

    def run(self, x):
        if x.san is None:
            return
        st = x.state
        m = np.ones(st.hi - st.lo, bool) if st.m is None else st.m
        if self.guard is not None:
            m = m & self.guard_mask(x)
        x.san.fence(self, st.lo + np.flatnonzero(m))


class NopOp(Op):
    __slots__ = ()

    def run(self, x):
        pass


class TrapOp(Op):
    __slots__ = ("overflow",)

    def run(self, x):
        g = self.guard_mask(x) if self.guard is not None else None
        if g is not None and not np.any(g if x.state.m is None else (g & x.state.m)):
            return
        if self.overflow:                 # isa.recursion's stack check
            x.fail_stack_overflow(self.index, g)
        x.fail_trap(self.index)


class OpFactory:
    """Turns a bound instruction into an op (used by `decode.Decoder`)."""

    def trap(self, dec, ins, i):
        op = TrapOp()
        op.index, op.guard = i, dec.guard(ins)
        op.overflow = "gpusim_stack_overflow" in ins.suffixes
        return op

    def make(self, dec, ins: Instruction, i: int, spec, bound):
        guard = dec.guard(ins)
        kind = spec.kind
        if kind == "alu":
            hidden_dsts, hidden_srcs = implicit_operands(ins)        # the carry flag of add.cc/addc/...
            nd = dec.ndests(spec, len(bound.dst_types) - len(hidden_dsts), ins)
            dsts = dec.flat_dests(ins.operands[:nd] + hidden_dsts, ins)
            srcs = dec.flat_sources(ins.operands[nd:] + hidden_srcs, bound.src_types, ins)
            return AluOp(i, guard, bound.fn, srcs, dsts)
        if kind == "mem":
            return self._mem(dec, ins, i, guard, bound)
        if kind in ("tensor", "async"):
            # imported here: those modules build on Op/AddressOp of this one (a real cycle)
            from gpusim.functional import async_ops, tensor_ops, wgmma_ops, wmma_ops
        if kind == "tensor" and ins.opcode == "wgmma":
            return wgmma_ops.make(dec, ins, i, spec, bound, guard)
        if kind == "tensor" and ins.opcode == "wmma":
            return wmma_ops.make(dec, ins, i, spec, bound, guard)
        if kind == "tensor":
            op = tensor_ops.make(dec, ins, i, spec, bound, guard)
            if op is not None:
                return op
        if kind == "async":
            return async_ops.make(dec, ins, i, spec, bound, guard)
        if kind == "warp" or (ins.opcode == "bar" and "warp" in ins.modifiers):
            op = WarpOp()
            op.index, op.guard, op.kind, op.mods = i, guard, ins.opcode, ins.modifiers
            if ins.opcode == "bar":
                op.kind = "syncwarp"
                op.dsts, op.srcs = [], dec.flat_sources(ins.operands, ("u32",) * len(ins.operands), ins)
            else:
                nd = dec.ndests(spec, len(bound.dst_types), ins)
                op.dsts = dec.flat_dests(ins.operands[:nd], ins)
                op.srcs = dec.flat_sources(ins.operands[nd:], bound.src_types, ins)
            return op
        if kind == "sync" and "cluster" in ins.modifiers and ins.opcode == "barrier":
            return _cluster_barrier(dec, ins, i, guard)
        if kind == "sync" and ins.opcode in ("bar", "barrier"):
            if len(ins.operands) > 1 and "red" not in ins.modifiers:
                raise UnsupportedInstruction(ins.mnemonic, ptx_line=ins.ptx_line, kernel=dec.kernel.name,
                                             reason="barriers with a thread count are not supported")
            op = BarrierOp()
            op.index, op.guard, op.red, op.dst, op.pred = i, guard, None, None, None
            first = ins.operands[0] if ins.operands else None
            op.scope = "grid" if isinstance(first, Imm) and first.value == GRID_BARRIER_ID else "cta"
            if op.scope == "grid" and (guard is not None or "red" in ins.modifiers):
                raise UnsupportedInstruction(ins.mnemonic, ptx_line=ins.ptx_line, kernel=dec.kernel.name,
                                             reason="the grid barrier takes no guard and no reduction")
            if "red" in ins.modifiers:
                op.red = next(m for m in ins.modifiers if m in ("popc", "and", "or"))
                op.dst = dec.flat_dests(ins.operands[:1], ins)[0]
                op.pred = dec.fetcher(ins.operands[-1], "pred", ins)
            return op
        if kind == "sync":
            op = FenceOp() if ins.opcode in ("membar", "fence") and "proxy" not in ins.modifiers else NopOp()
            op.index, op.guard = i, guard
            return op
        raise UnsupportedInstruction(ins.mnemonic, ptx_line=ins.ptx_line, kernel=dec.kernel.name,
                                     reason=f"no executor for kind {kind}")

    def _mem(self, dec, ins: Instruction, i: int, guard, bound):
        info_space = ins.space
        if ins.opcode in ("prefetch", "prefetchu"):
            op = NopOp()
            op.index, op.guard = i, guard
            return op
        if ins.opcode in ("ld", "ldu"):
            op = LoadOp()
            op.index, op.guard = i, guard
            op.dsts = dec.flat_dests(ins.operands[:1], ins)
            op.dt = ptx_dtype(bound.dst_types[0])
            addr = ins.operands[1]
            op.param = None
            if info_space == "param":
                if not (isinstance(addr, Address) and isinstance(addr.base, Sym)):
                    raise UnsupportedInstruction(ins.mnemonic, ptx_line=ins.ptx_line, kernel=dec.kernel.name,
                                                 reason="ld.param through a register address")
                op.param = addr.base.name
            op.space = info_space
            op.set_address(dec, ins, addr)
            return op
        if ins.opcode == "st":
            op = StoreOp()
            op.index, op.guard = i, guard
            op.dt = ptx_dtype(bound.src_types[1])
            op.srcs = dec.flat_sources(ins.operands[1:], bound.src_types[1:], ins)
            op.space = info_space
            op.set_address(dec, ins, ins.operands[0])
            return op
        if ins.opcode in ("atom", "red"):
            op = AtomOp()
            op.index, op.guard = i, guard
            op.opname = ins.opcode
            has_dst = ins.opcode == "atom"
            op.dst = dec.flat_dests(ins.operands[:1], ins)[0] if has_dst else None
            addr = ins.operands[1 if has_dst else 0]
            rest = ins.operands[2 if has_dst else 1:]
            op.srcs = dec.flat_sources(rest, bound.src_types[1:], ins)      # src_types[0] is the address
            op.combine = bound.fn
            op.dt = ptx_dtype(bound.src_types[1])
            op.space = info_space
            op.set_address(dec, ins, addr)
            return op
        raise UnsupportedInstruction(ins.mnemonic, ptx_line=ins.ptx_line, kernel=dec.kernel.name,
                                     reason="memory instruction without an executor")
