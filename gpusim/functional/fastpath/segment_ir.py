"""The code of one compiled ALU segment (`segments`): which registers it reads, writes and
stores, and the LLVM function that runs it over the lanes of a step."""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from gpusim.functional.fastpath.alu_ir import I8, I64, IR, ir_type
from gpusim.functional.fastpath.shuffle_step import ShflStep

BOOL = np.dtype(np.bool_)
U32 = np.dtype(np.uint32)
# special registers the executor gives as one value for every lane (BatchExecutor.special);
# the others are per-lane uint32 arrays (SpecialRegisters.lanes, specials.py)
UNIFORM_SPECIALS = frozenset({"%ntid.x", "%ntid.y", "%ntid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "%nwarpid",
                              "%nsmid", "%gridid", "%clock", "%clock64", "%globaltimer", "%globaltimer_lo",
                              "%globaltimer_hi", "%dynamic_smem_size", "%total_smem_size"})


class Segment:
    """The plan of one segment: its ops, the registers it reads before writing them
    (`loads`), the registers it writes (`written`), and of those the ones live after it or
    read by a later lane loop of its own (`cross`): `stores`, set by `KernelCode` from the
    kernel's liveness."""

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
        phase, last_write, cross = 0, {}, set()
        for op in ops:                                           # values one lane loop leaves to a later one
            shuffle = isinstance(op, ShflStep)
            reads = [src[1] for src in op.sources if src[0] in ("reg", "not")]
            if op.guard is not None:
                reads += [op.guard[0]] + [d for d in op.dsts if d is not None]
            for r in reads:
                w = last_write.get(r)
                if w is not None and (shuffle or w < phase):
                    cross.add(r)
            for d in op.dsts:
                if d is not None:
                    last_write[d] = -1 if shuffle else phase
            phase += shuffle
        self.cross = frozenset(cross)
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
        step runs every lane of the batch) stored registers whose value is uniform (and never
        held a value per lane here) are stored once. Values computed from uniform values
        only are computed once, before the lane loops. The table holds (pointer, index mask)
        per load, per store and per special register, in that order. Returns the stores that
        are stored once.

        One lane loop per run of ALU ops between shuffles (`shuffle_step`), one per shuffle:
        a value one loop computes and a later one reads goes through its register's array
        (`cross`, kept among the stores), a uniform value through the SSA value computed
        before the loops."""
        rd = self.reg_dtypes
        fty = ir.FunctionType(ir.VoidType(), [I64, I64, ir.PointerType(), ir.PointerType()])
        fn = ir.Function(module, fty, name)
        lo, n, mptr, tbl = fn.args
        entry = fn.append_basic_block("entry")
        start = fn.append_basic_block("start")
        done = fn.append_basic_block("done")
        eb = ir.IRBuilder(entry)
        ntab = len(self.loads) + len(self.stores) + len(self.specials)
        bases = [eb.load(eb.gep(tbl, [ir.Constant(I64, 2 * j)], source_etype=ir.PointerType()), typ=ir.PointerType())
                 for j in range(ntab)]
        ue = IR(eb, module)
        tag = _Scopes(module, [("r", r) for r in self.loads + self.stores] +
                      [("s", sname) for sname, _ in self.specials] + [("mask", 0)])
        k0 = len(self.loads)
        home: dict[int, ir.Value] = {r: bases[k0 + k] for k, r in enumerate(self.stores)}
        val: dict[int, ir.Value] = {}                            # uniform registers' values (entry block)
        uni: set[int] = set()
        for k, r in enumerate(self.loads):
            if r in uniform_in:
                v = eb.load(bases[k], typ=_storage(rd[r]))
                val[r] = eb.icmp_unsigned("!=", v, ir.Constant(I8, 0)) if rd[r] == BOOL else v
                uni.add(r)
            else:                                                # per lane: loaded from, and stored to, its array
                home[r] = bases[k]
        special_at = {}
        uni_special: dict = {}
        for k, (sname, want) in enumerate(self.specials):
            if sname in UNIFORM_SPECIALS:
                uni_special[(sname, want)] = eb.load(bases[k0 + len(self.stores) + k], typ=ir_type(want))
            else:
                special_at[(sname, want)] = (sname, bases[k0 + len(self.stores) + k])
        stores = set(self.stores)
        ever_lane: set[int] = set()                              # registers given a per-lane value here
        phases: list[list] = [[]]
        for op in self.ops:
            if isinstance(op, ShflStep):
                phases.append(op)
                phases.append([])
            else:
                phases[-1].append(op)
        pre = ir.IRBuilder(start)
        for p, part in enumerate(phases):
            last = p == len(phases) - 1
            if isinstance(part, ShflStep):
                a, d = part.sources[0][1], part.dsts[0]
                if d not in stores:                              # read by no one
                    continue
                if a in uni:                                     # every lane's source holds the value too
                    val[d] = val[a]
                    uni.add(d)
                    continue
                bb, lane, after = _lane_loop(fn, pre, lo, n, None, f"shfl{p}", tag)
                perm = ir.GlobalVariable(module, ir.ArrayType(I64, 32), f"{name}_perm{p}")
                perm.global_constant = True
                perm.initializer = ir.Constant(ir.ArrayType(I64, 32), list(part.perm))
                within = bb.load(bb.gep(perm, [ir.Constant(I64, 0), bb.and_(lane, ir.Constant(I64, 31))],
                                        source_etype=ir.ArrayType(I64, 32)), typ=I64)
                src = bb.or_(bb.and_(lane, ir.Constant(I64, -32)), within)
                v = tag(bb.load(bb.gep(home[a], [src], source_etype=_storage(rd[a])), typ=_storage(rd[a])), ("r", a))
                tag(bb.store(v, bb.gep(home[d], [lane], source_etype=_storage(rd[d]))), ("r", d))
                bb.branch(after[0])
                pre = after[1]
                uni.discard(d)
                ever_lane.add(d)
                continue
            if not part and not last:
                continue
            bb, lane, after = _lane_loop(fn, pre, lo, n, mptr, f"p{p}", tag)
            le = IR(bb, module)
            lv: dict[int, ir.Value] = {}                         # this loop's per-lane values
            written: list[int] = []
            for op in part:
                self._emit(op, ue, le, val, uni, lv, written, home, lane, tag, uni_special, special_at)
            ever_lane.update(written)
            once = [r for r in self.stores if whole and r in uni and r not in ever_lane] if last else []
            for r in dict.fromkeys(written):                     # what this loop computed per lane, for later loops
                if r in lv and r in stores and not last:
                    _store(bb, lv[r], home[r], lane, rd[r], tag, r)
            if last:
                for r in self.stores:
                    if r in once:                                # to the store's own slot (scratch memory)
                        v = val[r]
                        eb.store(eb.zext(v, I8) if rd[r] == BOOL else v, bases[k0 + self.stores.index(r)])
                    elif r in lv and r in written:
                        _store(bb, lv[r], home[r], lane, rd[r], tag, r)
                    elif r in uni:                               # a uniform value written per lane
                        _store(bb, val[r], home[r], lane, rd[r], tag, r)
            bb.branch(after[0])
            pre = after[1]
        pre.branch(done)
        eb.cbranch(eb.icmp_signed("<=", n, ir.Constant(I64, 0)), done, start)
        ir.IRBuilder(done).ret_void()
        return [r for r in self.stores if whole and r in uni and r not in ever_lane]

    @staticmethod
    def _uniform_op(op, uni, uni_special) -> bool:
        return (op.guard is None or op.guard[0] in uni) and all(
            src[0] == "imm" or (src[0] in ("reg", "not") and src[1] in uni) or
            (src[0] == "special" and (src[1], src[2]) in uni_special) for src in op.sources)

    def _emit(self, op, ue, le, val, uni, lv, written, home, lane, tag, uni_special, special_at=None) -> None:
        """One ALU op: in the entry block (`ue`) where it is uniform, else per lane (`le`, the
        loop's values `lv`, registers read from their arrays `home` at `lane` on first use)."""
        rd = self.reg_dtypes
        bb = le.b

        def get(r):
            if r in uni:
                return val[r]
            v = lv.get(r)
            if v is None:
                x = tag(bb.load(bb.gep(home[r], [lane], source_etype=_storage(rd[r])), typ=_storage(rd[r])), ("r", r))
                v = lv[r] = bb.icmp_unsigned("!=", x, ir.Constant(I8, 0)) if rd[r] == BOOL else x
            return v

        uniform = self._uniform_op(op, uni, uni_special)
        e = ue if uniform else le
        b = e.b
        srcs = []
        for src, want in zip(op.sources, op.src_dtypes):
            kind = src[0]
            if kind == "reg":
                srcs.append(e.convert(get(src[1]), rd[src[1]], want))
            elif kind == "not":
                srcs.append(b.not_(get(src[1])))
            elif kind == "imm":
                srcs.append(e.const(want, src[1]))
            else:
                key = (src[1], src[2])
                v = uni_special.get(key)
                if v is None:
                    v = lv.get(key)
                    if v is None:
                        sname, at = special_at[key]
                        x = tag(bb.load(bb.gep(at, [lane], source_etype=ir_type(U32)), typ=ir_type(U32)), ("s", sname))
                        v = lv[key] = le.convert(x, U32, src[2])
                srcs.append(v)
        outs = op.emit(e, srcs)
        g = None
        if op.guard is not None:
            g = get(op.guard[0])
            if op.guard[1]:
                g = b.not_(g)
        for d, v, have in zip(op.dsts, outs, op.dst_dtypes):
            if d is None:
                continue
            v = e.convert(v, have, rd[d])
            if g is not None:
                old = get(d)
                v = b.select(g, v, old) if not uniform or d in uni else bb.select(g, v, old)
            if uniform and (g is None or d in uni):
                val[d] = v
                uni.add(d)
                lv.pop(d, None)
            else:
                lv[d] = v
                uni.discard(d)
                written.append(d)


def _lane_loop(fn, pre: ir.IRBuilder, lo, n, mptr, label: str, tag):
    """A loop over the step's lanes after `pre`'s block (its branch in): (the body's builder, its
    lane, (the latch block the body must branch to, a builder of the block after the loop)).
    With `mptr`, lanes whose mask byte is 0 are skipped (when the pointer is not null)."""
    loop = fn.append_basic_block(f"loop_{label}")
    body = fn.append_basic_block(f"body_{label}")
    nxt = fn.append_basic_block(f"next_{label}")
    after = fn.append_basic_block(f"after_{label}")
    pre.branch(loop)
    lb = ir.IRBuilder(loop)
    i = lb.phi(I64, "i")
    i.add_incoming(ir.Constant(I64, 0), pre.block)
    if mptr is None:
        lb.branch(body)
    else:
        has_m = lb.icmp_unsigned("!=", mptr, ir.Constant(ir.PointerType(), None))
        lb.cbranch(has_m, _mask_check(fn, lb, mptr, i, body, nxt, tag), body)
    bb = ir.IRBuilder(body)
    lane = bb.add(lo, i)
    nb = ir.IRBuilder(nxt)
    inext = nb.add(i, ir.Constant(I64, 1))
    i.add_incoming(inext, nxt)
    nb.cbranch(nb.icmp_signed("<", inext, n), loop, after)
    return bb, lane, (nxt, ir.IRBuilder(after))


def _store(bb, v, at, lane, dt, tag, r) -> None:
    if dt == BOOL:
        v = bb.zext(v, I8)
    tag(bb.store(v, bb.gep(at, [lane], source_etype=_storage(dt))), ("r", r))


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
