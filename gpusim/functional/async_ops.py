"""The asynchronous-copy unit of the functional core: `cp.async` with its commit/wait groups,
`mbarrier` objects in shared memory, `elect.sync` and `setmaxnreg` (meaning:
`isa.semantics.async_copy`).

`AsyncCopies` (one per batch, `x.async_copies`) holds every thread's copies that are issued but
not yet complete: the bytes read from global memory at issue, the shared-memory offsets they go
to, and the commit-group count of the thread at issue. `cp.async.wait_group N` completes, for
each thread that executes it, the copies of all but its N most recent committed groups;
`wait_all` all of them. Addresses are checked at issue like any access (bounds, alignment to
the copy size), naming the kernel, line, block and thread.

Counters (`gpusim.functional.counters.EXTRA_METRICS`): `smsp__inst_executed_op_ldgsts` per warp
instruction, the global side's requests and 32-byte sectors, the shared side's wavefronts.

Does not model: time (issue 29), the racecheck view of a destination read before its wait
(module docstring of `isa.semantics.async_copy`), `cp.async.bulk` (refused at decode).

Sources: PTX ISA 9.0, "cp.async", "cp.async.wait_group", "mbarrier", "elect.sync".
"""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from gpusim.functional.lsu import SECTOR_SHIFT, distinct_per_group, shared_wavefronts
from gpusim.functional.ops import AddressOp, NopOp, Op
from isa.errors import UnsupportedInstruction
from isa.program import Address
from isa.semantics import async_copy as S

U64 = np.uint64
PENDING_MASK = (1 << 21) - 1


class AsyncCopies:
    """Issued, incomplete cp.async copies of a batch (module docstring)."""

    def __init__(self, x):
        self.x = x
        self.committed = np.zeros(x.nlanes, np.int64)      # commit_group count per thread
        self.pending: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # lanes, group, dst, data

    def issue(self, lanes, dst, data) -> None:
        self.pending.append((lanes, self.committed[lanes].copy(), dst, data))

    def complete(self, lanes: np.ndarray, keep_groups: int | None) -> None:
        """Complete the copies of `lanes` older than their `keep_groups` newest committed groups
        (None: every copy, committed or not)."""
        sel = np.zeros(self.x.nlanes, bool)
        sel[lanes] = True
        buf = self.x.lsu.shared
        left = []
        for ln, grp, dst, data in self.pending:
            done = sel[ln]
            if keep_groups is not None:
                done &= grp < self.committed[ln] - keep_groups
            if done.any():
                idx = dst[done][:, None] + np.arange(data.shape[1])
                buf[idx] = data[done]
            if not done.all():
                keep = ~done
                left.append((ln[keep], grp[keep], dst[keep], data[keep]))
        self.pending = left


def _lanes(op, x) -> np.ndarray:
    """Absolute ids of the active lanes (guard applied)."""
    st = x.state
    m = np.ones(st.hi - st.lo, bool) if st.m is None else st.m
    if op.guard is not None:
        m = m & op.guard_mask(x)
    return st.lo + np.flatnonzero(m)


def _unit(x) -> AsyncCopies:
    if x.async_copies is None:
        x.async_copies = AsyncCopies(x)
    return x.async_copies


class CpAsyncOp(AddressOp):
    __slots__ = ("size", "src_base", "src_offset", "srcs")

    def run(self, x):
        lanes = _lanes(self, x)
        if not len(lanes):
            return
        st = x.state
        rel = lanes - st.lo
        dst = np.broadcast_to(self.addresses(x), (st.hi - st.lo,))[rel].astype(U64)
        src = np.broadcast_to(self.src_base(st, x) + self.src_offset, (st.hi - st.lo,))[rel].astype(U64)
        n = self.size
        lim = np.full(len(lanes), n, np.int64)
        if self.srcs:
            lim = np.minimum(np.broadcast_to(np.asarray(self.srcs[0](st, x), np.int64), (st.hi - st.lo,))[rel], n)
        lsu = x.lsu
        g_acc = SimpleNamespace(index=self.index, info=replace(self.info, access_bytes=n, is_store=False),
                                dt=np.dtype(np.uint8), space="global")
        s_acc = SimpleNamespace(index=self.index, info=replace(self.info, access_bytes=n, is_store=True),
                                dt=np.dtype(np.uint8), space="shared")
        gbuf, goff = lsu._place(g_acc, "global", lanes, src)
        sbuf, soff = lsu._place(s_acc, "shared", lanes, dst)
        data = gbuf[goff.astype(np.int64)[:, None] + np.arange(n)]
        data[np.arange(n)[None, :] >= lim[:, None]] = 0
        _unit(x).issue(lanes, soff.astype(np.int64), data)
        x.trace_access(self, "global", lanes, goff)
        x.trace_access(self, "shared", lanes, soff)
        c = x.counters
        w = lanes >> 5
        wl = w - w[0]
        nw = int(wl[-1]) + 1
        nwarps = int(np.count_nonzero(np.bincount(wl, minlength=nw)))
        c.add_extra(self.index, "ldgsts_inst", nwarps)
        c.add_extra(self.index, "global_ldgsts_requests", nwarps)
        c.add_extra(self.index, "global_ldgsts_sectors", int(distinct_per_group(wl, goff >> SECTOR_SHIFT, nw).sum()))
        local = soff - x.cta_slot(lanes).astype(U64) * U64(lsu.shared_stride)
        c.add_extra(self.index, "shared_ldgsts_wavefronts",
                    int(shared_wavefronts(wl, local, n, nw, lsu.banks, lsu.bank_width).sum()))


class CpGroupOp(Op):
    __slots__ = ("kind", "n")

    def run(self, x):
        lanes = _lanes(self, x)
        if not len(lanes):
            return
        unit = _unit(x)
        if self.kind == "commit":
            unit.committed[lanes] += 1
        else:
            unit.complete(lanes, self.n if self.kind == "wait_group" else None)


class MbarrierOp(AddressOp):
    """One mbarrier operation (isa.semantics.async_copy), lane by lane in lane order."""
    __slots__ = ("what", "parity", "dst", "srcs")

    def run(self, x):
        lanes = _lanes(self, x)
        if not len(lanes):
            return
        st = x.state
        rel = lanes - st.lo
        addr = np.broadcast_to(self.addresses(x), (st.hi - st.lo,))[rel].astype(U64)
        acc = SimpleNamespace(index=self.index, info=replace(self.info, access_bytes=8, is_store=True),
                              dt=np.dtype(np.uint64), space="shared")
        buf, off = x.lsu._place(acc, "shared", lanes, addr)
        x.trace_access(self, "shared", lanes, off)
        words = buf.view(np.uint64)
        idx = (off // U64(8)).astype(np.int64)
        args = [np.broadcast_to(np.asarray(f(st, x)).astype(np.int64), (st.hi - st.lo,))[rel] for f in self.srcs]
        waits = self.what in ("test_wait", "try_wait")
        x.trace_mbarrier(self, lanes, off, self.what,       # a wait's state token: its phase bit
                         [args[0].astype(np.uint64) >> np.uint64(63)] if waits and not self.parity and args else args)
        out = np.zeros(len(lanes), np.uint64)
        for k in range(len(lanes)):
            out[k] = self._one(words, int(idx[k]), [int(a[k]) for a in args])
        if self.dst is not None:
            waits = self.what in ("test_wait", "try_wait")
            x.write_lanes(self.dst, lanes, out.astype(bool) if waits else out)

    def _one(self, words, i, args) -> int:
        v = int(words[i])
        pend, exp, tx, ph = v & PENDING_MASK, (v >> 21) & PENDING_MASK, (v >> 42) & PENDING_MASK, v >> 63
        w = self.what
        if w == "init":
            pend, exp, tx, ph = args[0], args[0], 0, 0
        elif w == "inval":
            pend = exp = tx = ph = 0
        elif w in ("test_wait", "try_wait"):
            want = args[0] & 1 if self.parity else args[0] >> 63
            return int(ph != want)
        else:
            token = ph << 63
            if w in ("expect_tx", "arrive_expect_tx"):
                tx += args[0]
            if w in ("arrive", "arrive_expect_tx"):
                pend -= args[0] if (w == "arrive" and args) else 1
                if pend <= 0 and tx == 0:
                    ph ^= 1
                    pend = exp
            words[i] = np.uint64((pend & PENDING_MASK) | (exp << 21) | ((tx & PENDING_MASK) << 42) | (ph << 63))
            return token
        words[i] = np.uint64((pend & PENDING_MASK) | (exp << 21) | ((tx & PENDING_MASK) << 42) | (ph << 63))
        return 0


class ElectOp(Op):
    __slots__ = ("dsts", "srcs")

    def run(self, x):
        st = x.state
        lanes = _lanes(self, x)
        if not len(lanes):
            return
        act = np.zeros(st.hi - st.lo, bool)
        act[lanes - st.lo] = True
        mm = np.broadcast_to(np.asarray(self.srcs[0](st, x), np.uint32), act.shape)
        lane = np.arange(len(act)) & 31
        cand = (act & (((mm >> lane.astype(np.uint32)) & 1) == 1)).reshape(-1, 32)
        leader = np.where(cand.any(1), cand.argmax(1), 0)
        rep = np.repeat(leader, 32)
        m = act & np.repeat(cand.any(1), 32)
        if self.dsts[0] is not None:
            st.write(self.dsts[0], rep.astype(np.uint32), m)
        if self.dsts[1] is not None:
            st.write(self.dsts[1], (lane == rep) & m, act)


def make(dec, ins, i: int, spec, bound, guard):
    """The op for an `async`-kind instruction (called by `ops.OpFactory.make`)."""
    reject = lambda why: UnsupportedInstruction(ins.mnemonic, ptx_line=ins.ptx_line,  # noqa: E731
                                                kernel=dec.kernel.name, reason=why)
    if ins.opcode == "cp":
        kind, n = S.cp_async_form(ins)
        if kind == "copy":
            op = CpAsyncOp()
            op.size, op.space = n, "shared"
            d, s = ins.operands[0], ins.operands[1]
            if not (isinstance(d, Address) and isinstance(s, Address)):
                raise reject("expected [dst], [src]")
            op.set_address(dec, ins, s)
            op.src_base, op.src_offset = op.base, op.offset
            op.set_address(dec, ins, d)
            op.srcs = dec.flat_sources(ins.operands[3:4], ("u32",), ins) if len(ins.operands) > 3 else []
        else:
            op = CpGroupOp()
            op.kind, op.n = kind, n
    elif ins.opcode == "mbarrier":
        op = MbarrierOp()
        op.what, op.parity = S.mbarrier_form(ins)
        op.space = "shared"
        ops_ = list(ins.operands)
        first = ops_[0]
        op.dst = None
        if not isinstance(first, Address):
            op.dst = None if (getattr(first, "name", None) == "_") else dec.flat_dests([first], ins)[0]
            ops_ = ops_[1:]
        if not ops_ or not isinstance(ops_[0], Address):
            raise reject("expected an mbarrier [address]")
        op.set_address(dec, ins, ops_[0])
        op.srcs = [dec.fetcher(o, "u64" if op.what in ("test_wait", "try_wait") and not op.parity else "u32", ins)
                   for o in ops_[1:]]
    elif ins.opcode == "elect":
        op = ElectOp()
        op.dsts = dec.flat_dests(ins.operands[:1], ins)
        op.srcs = dec.flat_sources(ins.operands[1:], ("u32",), ins)
    elif ins.opcode == "setmaxnreg":
        op = NopOp()
    else:
        raise reject("no executor for this instruction")
    op.index, op.guard = i, guard
    return op

