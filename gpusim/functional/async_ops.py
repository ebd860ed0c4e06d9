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
instruction, the global side's requests and 32-byte sectors, the shared side's fill wavefronts
(`fill_wavefronts`: by the global lines and shared windows a copy pairs, not by banks alone).

The sanitizer sees the global read when the copy issues and the shared write as pending from
the issue to the thread's wait that completes it (`async_issue`, `async_done`): racecheck
reports any access to those bytes in between (a tile read before its `cp.async.wait_group`),
and a copy into bytes other threads still read or write unordered (a stage overwritten before
the barrier after its last use); initcheck counts the bytes written at completion.

Does not model: time (issue 29), a global write to a copy's source between its issue and its
completion (the source is read at issue). `cp.async.bulk*` (TMA) is `bulk_ops`.

Sources: PTX ISA 9.0, "cp.async", "cp.async.wait_group", "mbarrier", "elect.sync".
"""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
from numba import njit

from gpusim.functional import bulk_ops
from gpusim.functional.copy_counts import copy_pieces, fill_count
from gpusim.functional.lsu import SECTOR_SHIFT, distinct_per_group
from gpusim.functional.ops import AddressOp, NopOp, Op
from isa.errors import UnsupportedInstruction
from isa.program import Address
from isa.semantics import async_copy as S
from isa.semantics.bulk_copy import is_bulk

U64 = np.uint64
# the counters a copy adds to (`counters.EXTRA_METRICS`), in order: instructions, the global side's requests and
# sectors, the shared side's fill wavefronts; a copy that bypasses the L1 counts in the bypass ones
FIELDS = ("ldgsts_inst", "global_ldgsts_requests", "global_ldgsts_sectors", "shared_ldgsts_wavefronts")
BYPASS_FIELDS = ("ldgsts_inst", "global_ldgsts_bypass_requests", "global_ldgsts_bypass_sectors",
                 "shared_ldgsts_wavefronts")


class AsyncCopies:
    """Issued, incomplete cp.async copies of a batch (module docstring)."""

    def __init__(self, x):
        self.x = x
        self.committed = np.zeros(x.nlanes, np.int64)      # commit_group count per thread
        # lanes, group, dst, the op's shared-side access, the bytes as the words they move in, the word's shift
        self.pending: list[tuple] = []
        self.every = None                               # every lane of the batch, selected (`complete`)
        self.words: dict = {}                           # copy size -> the word it moves into shared memory
        self.heap_words: dict = {}                      # copy size -> (global heap data, the word the fast op reads)

    def issue(self, lanes, dst, data, acc) -> None:
        size = data.shape[1]
        w = self.words.get(size)
        if w is None:
            buf = self.x.lsu.shared
            w = self.words[size] = _word(size, buf, self.x.lsu.shared_stride)
        words = np.ascontiguousarray(data).view(w)
        self.pending.append((lanes, self.committed.take(lanes), dst, acc, words, w.itemsize.bit_length() - 1))

    def complete(self, lanes: np.ndarray | slice, keep_groups: int | None) -> None:
        """Complete the copies of `lanes` (ids, or a slice of the batch's) older than their
        `keep_groups` newest committed groups (None: every copy, committed or not)."""
        if type(lanes) is slice and lanes == slice(0, self.x.nlanes):
            sel = self.every
            if sel is None:
                sel = self.every = np.ones(self.x.nlanes, bool)
        else:
            sel = np.zeros(self.x.nlanes, bool)
            sel[lanes] = True
        buf = self.x.lsu.shared
        views = {}
        left = []
        san = self.x.san
        for entry in self.pending:
            ln, grp, dst, acc, words, shift = entry
            done = np.empty(len(ln), bool)      # which of its lanes complete, their bytes written in order
            view = views.get(shift)
            if view is None:
                view = views[shift] = buf.view(words.dtype)
            n = _complete(sel, self.committed, keep_groups or 0, keep_groups is not None, ln, grp, dst, words, view,
                          shift, done)
            if n == len(ln):                # the whole copy (a pipeline stage's)
                if san is not None:
                    san.async_done(acc, ln, dst.astype(U64))
                continue
            if not n:                       # none of it: kept as it is
                left.append(entry)
                continue
            if san is not None:
                san.async_done(acc, ln[done], dst[done].astype(U64))
            keep = ~done
            left.append((ln[keep], grp[keep], dst[keep], acc, words[keep], shift))
        self.pending = left


def _word(size: int, buf: np.ndarray, stride: int) -> np.dtype:
    """The widest unsigned word (up to 8 bytes) that a copy of `size` bytes (a power of two, its
    address in the block's window aligned to it; the windows `stride` bytes apart) moves whole
    into shared memory `buf`."""
    for w in (8, 4, 2):
        if size % w == 0 and stride % w == 0 and buf.size % w == 0 and buf.flags.c_contiguous:
            return np.dtype(f"u{w}")
    return np.dtype(np.uint8)


@njit(cache=True, nogil=True)
def _complete(sel, committed, keep, use_keep, ln, grp, dst, data, buf, shift, done):
    """`AsyncCopies.complete` for one issued copy, in one pass: done[k] for lane ln[k] selected
    (sel) and, with `use_keep`, of a group older than its `keep` newest committed ones; the bytes
    data[k] of each done lane written at byte dst[k] of shared memory, in lane order (the issue
    checked every destination); `data` and `buf` seen as words of 2^shift bytes. Returns how many
    are done."""
    words = data.shape[1]
    n = 0
    for k in range(len(ln)):
        d = sel[ln[k]] and (not use_keep or grp[k] < committed[ln[k]] - keep)
        done[k] = d
        if d:
            n += 1
            o = np.int64(dst[k]) >> shift
            for q in range(words):
                buf[o + q] = data[k, q]
    return n


def _chunks(buf: np.ndarray, offs: np.ndarray, size: int):
    """`buf` (uint8) seen as `size`-byte elements and `offs` as their indices, where every offset
    is a multiple of a size of 2, 4, 8 or 16 (one element per copy, not `size` bytes); else None."""
    if size not in (2, 4, 8, 16) or buf.size % size or not buf.flags.c_contiguous or (offs % size).any():
        return None
    return buf.view(np.dtype((np.void, size))), offs // size


def gather_bytes(buf: np.ndarray, offs: np.ndarray, size: int) -> np.ndarray:
    """(len(offs), size) uint8: the `size` bytes of `buf` at each offset."""
    ch = _chunks(buf, offs, size)
    if ch is None:
        return buf[offs[:, None] + np.arange(size)]
    return ch[0][ch[1]].view(np.uint8).reshape(len(offs), size)


def _place_partial(x, acc, lanes, src, nbytes):
    """(global buffer, offsets) of reads of `nbytes[k]` bytes at `src[k]`, each aligned to the
    copy size: `LoadStoreUnit._place` for per-lane sizes."""
    heap = x.lsu.mem.global_heap
    absa = heap.translate(src) if heap.aliases else src
    ok = heap.check(absa, nbytes.astype(U64))
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        x.fail_access(acc, int(lanes[k]), int(src[k]), "global", heap.nearest(int(absa[k])))
    n = acc.info.access_bytes
    mis = (src & U64(n - 1)) != 0
    if mis.any():
        k = int(np.flatnonzero(mis)[0])
        x.fail_access(acc, int(lanes[k]), int(src[k]), "global", f"misaligned: a {n}-byte access needs "
                      f"an address that is a multiple of {n}", kind="misaligned address")
    return heap.data, absa - U64(heap.base)


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
    __slots__ = ("size", "src_base", "src_offset", "srcs", "bypass")

    @property
    def sanitizer_bytes(self) -> int:
        return self.size

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
        s_acc = SimpleNamespace(index=self.index, info=replace(self.info, access_bytes=n, is_store=True),
                                dt=np.dtype(np.uint8), space="shared")
        sbuf, soff = lsu._place(s_acc, "shared", lanes, dst)
        data = np.zeros((len(lanes), n), np.uint8)
        reads = lim > 0                     # src-size 0: nothing is read (Triton's masked-off prefetches)
        rl = lanes[reads]
        goff = np.zeros(0, U64)
        if len(rl):
            g_acc = SimpleNamespace(index=self.index, info=replace(self.info, access_bytes=n, is_store=False),
                                    dt=np.dtype(np.uint8), space="global")
            if (lim[reads] < n).any():      # only src-size bytes are read: bounds-check those
                gbuf, goff = _place_partial(x, g_acc, rl, src[reads], lim[reads])
            else:
                gbuf, goff = lsu._place(g_acc, "global", rl, src[reads])
            idx = np.minimum(goff.astype(np.int64)[:, None] + np.arange(n), len(gbuf) - 1)
            part = gbuf[idx]
            part[np.arange(n)[None, :] >= lim[reads][:, None]] = 0
            data[reads] = part
        _unit(x).issue(lanes, soff.astype(np.int64), data, s_acc)
        if len(rl):
            x.trace_access(self, "global", rl, goff, n, False)
        x.trace_access(self, "shared", lanes, soff, n, True)
        if x.san is not None:
            if len(rl):
                x.san.access(g_acc, "global", rl, goff)
            x.san.async_issue(s_acc, lanes, soff)
        w = lanes >> 5
        wl = w - w[0]
        nw = int(wl[-1]) + 1
        nwarps = int(np.count_nonzero(np.bincount(wl, minlength=nw)))
        gw = (rl >> 5) - w[0]
        local = soff - x.cta_slot(lanes).astype(U64) * U64(lsu.shared_stride)
        if not len(rl):
            sectors = 0
        elif self.bypass:                   # a sector read once per shared sector it fills (copy_pieces)
            sectors = int(copy_pieces(gw, goff, local[reads], nw).sum())
        else:
            sectors = int(distinct_per_group(gw, goff >> SECTOR_SHIFT, nw).sum())
        x.counters.add_extras(self.index, BYPASS_FIELDS if self.bypass else FIELDS,
                              (nwarps, nwarps, sectors, fill_count(lanes, local, rl, goff)))


class CpGroupOp(Op):
    __slots__ = ("kind", "n")

    def run(self, x):
        st = x.state
        if st.m is None and self.guard is None:         # every lane of the span
            if self.kind == "commit":
                _unit(x).committed[st.lo:st.hi] += 1
            elif st.hi > st.lo:
                _unit(x).complete(slice(st.lo, st.hi), self.n if self.kind == "wait_group" else None)
            return
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
        if waits:                           # a wait reads its barrier's phase only: every lane at once
            bit = (args[0] & 1) if self.parity else (args[0] >> 63) & 1
            out = (words[idx] >> np.uint64(63)) != bit.astype(np.uint64)
        else:                               # arrivals and transaction counts change it: lane by lane
            out = np.zeros(len(lanes), np.uint64)
            for k in range(len(lanes)):
                out[k] = self._one(words, int(idx[k]), [int(a[k]) for a in args])
        if self.dst is not None:
            x.write_lanes(self.dst, lanes, out.astype(bool) if waits else out)

    def _one(self, words, i, args) -> int:
        w = self.what
        if w in ("test_wait", "try_wait"):
            args = [args[0] & 1 if self.parity else (args[0] >> 63) & 1]
        new, out = S.mbarrier_update(int(words[i]), w, args)
        words[i] = np.uint64(new)
        return out


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
    if ins.opcode == "cp" and is_bulk(ins):
        return bulk_ops.make(dec, ins, i, spec, bound, guard)
    if ins.opcode == "cp":
        kind, n = S.cp_async_form(ins)
        if kind == "copy":
            op = CpAsyncOp()
            op.size, op.space = n, "shared"
            op.bypass = "cg" in ins.suffixes    # LDGSTS.BYPASS: Nsight counts it under ..._cache_bypass
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

