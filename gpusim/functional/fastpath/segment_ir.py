"""The code of one compiled ALU segment (`segments`): which registers it reads, writes and
stores, and the LLVM function that runs it over the lanes of a step."""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from gpusim.functional.fastpath.alu_ir import I8, I64, IR, ir_type

BOOL = np.dtype(np.bool_)
U32 = np.dtype(np.uint32)
# special registers the executor gives as one value for every lane (BatchExecutor.special);
# the others are per-lane uint32 arrays (SpecialRegisters.lanes, specials.py)
UNIFORM_SPECIALS = frozenset({"%ntid.x", "%ntid.y", "%ntid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "%nwarpid",
                              "%nsmid", "%gridid", "%clock", "%clock64", "%globaltimer", "%globaltimer_lo",
                              "%globaltimer_hi", "%dynamic_smem_size", "%total_smem_size"})


class Segment:
    """The plan of one segment: its ops, the registers it reads before writing them
    (`loads`), the registers it writes (`written`), and of those the ones live after it
    (`stores`, set by `KernelCode` from the kernel's liveness)."""

    def __init__(self, ops: list, reg_dtypes):
        self.ops = ops
        self.reg_dtypes = reg_dtypes
        loads: list[int] = []
        written: list[int] = []
        specials: list[tuple[str, np.dtype]] = []
        for op in ops:
            needs = [src[1] for src in op.sources if src[0] in ("reg", "not")]
            if op.guard is not None:
                needs.append(op.guard[0])
                needs.extend(d for d in op.dsts if d is not None)        # a guarded write keeps the old value
            for r in needs:
                if r not in written and r not in loads:
                    loads.append(r)
            for d in op.dsts:
                if d is not None and d not in written:
                    written.append(d)
            for src in op.sources:
                if src[0] == "special" and (src[1], src[2]) not in specials:
                    specials.append((src[1], src[2]))
        self.loads = loads
        self.loaded = frozenset(loads)
        self.written = written
        self.stores = list(written)
        self.specials = specials
        self.name = f"seg{ops[0].index}"

    # ------------------------------------------------------------------ code
    def define(self, module: ir.Module, name: str, uniform_in: frozenset, whole: bool) -> list[int]:
        """Add `void name(i64 lo, i64 n, i8* m, i64* table)` to `module` for one variant:
        the loads in `uniform_in` hold one value for every lane, and when `whole` (the
        step runs every lane of the batch) stored registers whose value is uniform are
        stored once. Values computed from uniform values only are computed once, before
        the lane loop. The table holds (pointer, index mask) per load, per store and per
        special register, in that order. Returns the stores that are stored once."""
        rd = self.reg_dtypes
        fty = ir.FunctionType(ir.VoidType(), [I64, I64, ir.PointerType(), ir.PointerType()])
        fn = ir.Function(module, fty, name)
        lo, n, mptr, tbl = fn.args
        entry = fn.append_basic_block("entry")
        loop = fn.append_basic_block("loop")
        body = fn.append_basic_block("body")
        nxt = fn.append_basic_block("next")
        done = fn.append_basic_block("done")
        eb = ir.IRBuilder(entry)
        ntab = len(self.loads) + len(self.stores) + len(self.specials)
        bases, masks = [], []
        for j in range(ntab):
            bases.append(eb.load(eb.gep(tbl, [ir.Constant(I64, 2 * j)], source_etype=ir.PointerType()),
                                 typ=ir.PointerType()))
            masks.append(eb.load(eb.gep(tbl, [ir.Constant(I64, 2 * j + 1)], source_etype=I64), typ=I64))
        i = ir.IRBuilder(loop).phi(I64, "i")
        i.add_incoming(ir.Constant(I64, 0), entry)
        bb = ir.IRBuilder(body)
        lane = bb.add(lo, i)
        ue, le = IR(eb, module), IR(bb, module)                  # uniform (entry) and per-lane code
        tag = _Scopes(module, [("r", r) for r in self.loads + self.stores] +
                      [("s", sname) for sname, _ in self.specials] + [("mask", 0)])
        val: dict[int, ir.Value] = {}
        uni: set[int] = set()
        lane_base: dict[int, ir.Value] = {}                       # registers loaded per lane: their array
        for k, r in enumerate(self.loads):
            if r in uniform_in:
                v = eb.load(bases[k], typ=_storage(rd[r]))
                uni.add(r)
            else:
                lane_base[r] = bases[k]
                v = tag(bb.load(bb.gep(bases[k], [lane], source_etype=_storage(rd[r])), typ=_storage(rd[r])),
                        ("r", r))
            b = eb if r in uniform_in else bb
            val[r] = b.icmp_unsigned("!=", v, ir.Constant(I8, 0)) if rd[r] == BOOL else v
        special_val: dict = {}
        uni_special: set = set()
        base = len(self.loads) + len(self.stores)
        for k, (sname, want) in enumerate(self.specials):
            if sname in UNIFORM_SPECIALS:
                special_val[(sname, want)] = eb.load(bases[base + k], typ=ir_type(want))
                uni_special.add((sname, want))
            else:
                v = tag(bb.load(bb.gep(bases[base + k], [lane], source_etype=ir_type(U32)), typ=ir_type(U32)),
                        ("s", sname))
                special_val[(sname, want)] = le.convert(v, U32, want)
        for op in self.ops:
            uniform = (op.guard is None or op.guard[0] in uni) and all(
                src[0] == "imm" or (src[0] in ("reg", "not") and src[1] in uni) or
                (src[0] == "special" and (src[1], src[2]) in uni_special) for src in op.sources)
            e = ue if uniform else le
            b = e.b
            srcs = []
            for src, want in zip(op.sources, op.src_dtypes):
                kind = src[0]
                if kind == "reg":
                    srcs.append(e.convert(val[src[1]], rd[src[1]], want))
                elif kind == "not":
                    srcs.append(b.not_(val[src[1]]))
                elif kind == "imm":
                    srcs.append(e.const(want, src[1]))
                else:
                    srcs.append(special_val[(src[1], src[2])])
            outs = op.emit(e, srcs)
            g = None
            if op.guard is not None:
                g = val[op.guard[0]]
                if op.guard[1]:
                    g = b.not_(g)
            for d, v, have in zip(op.dsts, outs, op.dst_dtypes):
                if d is None:
                    continue
                v = e.convert(v, have, rd[d])
                if g is not None:
                    old = val[d]
                    if not uniform or d in uni:
                        v = b.select(g, v, old)
                    else:                            # a uniform guard and value, a per-lane old value
                        v = bb.select(g, v, old)
                val[d] = v
                if uniform and (g is None or d in uni):
                    uni.add(d)
                else:
                    uni.discard(d)
        once = [r for r in self.stores if whole and r in uni]
        k0 = len(self.loads)
        for k, r in enumerate(self.stores):
            v = val[r]
            b = eb if r in once else bb
            if rd[r] == BOOL:
                v = b.zext(v, I8)
            if r in once:
                eb.store(v, bases[k0 + k])
            else:                                    # a register loaded per lane: the array it was loaded from
                at = lane_base.get(r, bases[k0 + k])
                tag(bb.store(v, bb.gep(at, [lane], source_etype=_storage(rd[r]))), ("r", r))
        bb.branch(nxt)

        eb.cbranch(eb.icmp_signed("<=", n, ir.Constant(I64, 0)), done, loop)
        lb = ir.IRBuilder(loop)
        lb.position_at_end(loop)
        has_m = lb.icmp_unsigned("!=", mptr, ir.Constant(ir.PointerType(), None))
        lb.cbranch(has_m, _mask_check(fn, lb, mptr, i, body, nxt, tag), body)
        nb = ir.IRBuilder(nxt)
        inext = nb.add(i, ir.Constant(I64, 1))
        i.add_incoming(inext, nxt)
        nb.cbranch(nb.icmp_signed("<", inext, n), loop, done)
        ir.IRBuilder(done).ret_void()
        return once


def _mask_check(fn, b, mptr, i, body, nxt, tag):
    """A block that goes on to `body` when m[i] is set, else to `nxt`."""
    blk = fn.append_basic_block("mask")
    saved = b.block
    b.position_at_end(blk)
    mv = tag(b.load(b.gep(mptr, [i], source_etype=I8), typ=I8), ("mask", 0))
    b.cbranch(b.icmp_unsigned("!=", mv, ir.Constant(I8, 0)), body, nxt)
    b.position_at_end(saved)
    return blk


def _storage(dt: np.dtype) -> ir.Type:
    return I8 if dt == BOOL else ir_type(dt)


class _Scopes:
    """LLVM alias scopes for a segment's per-lane accesses, one per array: a register's (loaded
    and stored through one pointer), a special register's, the mask's. Distinct registers'
    arrays never share memory (`segment_op` checks their addresses before each run), which the
    metadata tells LLVM, so that the lane loop vectorises without runtime overlap checks."""

    def __init__(self, module: ir.Module, keys: list):
        domain = module.add_metadata([ir.MetaDataString(module, "gpusim.segment")])
        keys = list(dict.fromkeys(keys))
        scopes = {k: module.add_metadata([ir.MetaDataString(module, f"{k[0]}{k[1]}"), domain]) for k in keys}
        self.own = {k: module.add_metadata([scopes[k]]) for k in keys}
        self.others = {k: module.add_metadata([scopes[o] for o in keys if o != k]) for k in keys}

    def __call__(self, instr, key):
        instr.set_metadata("alias.scope", self.own[key])
        if self.others[key].operands:
            instr.set_metadata("noalias", self.others[key])
        return instr
