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

import hashlib
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from gpusim.functional import bulk_ops
from gpusim.functional.lsu import SECTOR_SHIFT, distinct_per_group
from gpusim.functional.ops import AddressOp, NopOp, Op
from isa.errors import UnsupportedInstruction
from isa.program import Address
from isa.semantics import async_copy as S
from isa.semantics.bulk_copy import is_bulk

U64 = np.uint64


class AsyncCopies:
    """Issued, incomplete cp.async copies of a batch (module docstring)."""

    def __init__(self, x):
        self.x = x
        self.committed = np.zeros(x.nlanes, np.int64)      # commit_group count per thread
        self.pending: list[tuple] = []                  # lanes, group, dst, data, the op's shared-side access

    def issue(self, lanes, dst, data, acc) -> None:
        self.pending.append((lanes, self.committed[lanes].copy(), dst, data, acc))

    def complete(self, lanes: np.ndarray, keep_groups: int | None) -> None:
        """Complete the copies of `lanes` older than their `keep_groups` newest committed groups
        (None: every copy, committed or not)."""
        sel = np.zeros(self.x.nlanes, bool)
        sel[lanes] = True
        buf = self.x.lsu.shared
        left = []
        san = self.x.san
        for ln, grp, dst, data, acc in self.pending:
            done = sel[ln]
            if keep_groups is not None:
                done &= grp < self.committed[ln] - keep_groups
            if done.any():
                scatter_bytes(buf, dst[done], data[done])
                if san is not None:
                    san.async_done(acc, ln[done], dst[done].astype(U64))
            if not done.all():
                keep = ~done
                left.append((ln[keep], grp[keep], dst[keep], data[keep], acc))
        self.pending = left


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


def scatter_bytes(buf: np.ndarray, offs: np.ndarray, data: np.ndarray) -> None:
    """buf[offs[k] : offs[k] + size] = data[k] for data (len(offs), size) uint8, in order (a
    later row wins where two overlap, as with fancy-index assignment)."""
    size = data.shape[1]
    ch = _chunks(buf, offs, size)
    if ch is None:
        buf[offs[:, None] + np.arange(size)] = data
        return
    ch[0][ch[1]] = np.ascontiguousarray(data).view(ch[0].dtype).reshape(-1)


FILL_WINDOW_SHIFT = 7                   # the 128-byte shared-memory span one fill wavefront writes
ZERO_FILL_SOURCE = 1 << 39              # the "source" of a zero-filling lane: its destination, in no real line


def _fill_wavefronts(warps: np.ndarray, src: np.ndarray, dst: np.ndarray, nwarps: int) -> np.ndarray:
    """Wavefronts per warp (0..nwarps-1) with which the L1 writes one cp.async's bytes into
    shared memory, lane k copying from global byte `src[k]` to its block's shared byte `dst[k]`
    (each lane's bytes inside one 32-byte sector on both sides, as cp.async's alignment makes
    them): a piece is what one global 32-byte sector puts into one shared 32-byte sector, and
    a wavefront writes the pieces of one global 128-byte line into one 128-byte shared window,
    those that begin a sector apart from those that begin in its second half (a sector whose
    second 16 bytes land in another shared sector than its first is written in two passes).
    Aligned copies take the bank rule's count (a 128-byte row: one wavefront); a destination
    16 bytes off a 32-byte boundary (mma_gemm's padded rows) takes 15 and 10.5 for 64- and 128-byte rows,
    as Nsight measures on the H100 (sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts,
    data/measurements/h100_tensor.json: 12.75 per LDGSTS of cuda_mma_*, 4.00 of Triton's swizzled tiles)."""
    if len(src) == 0:
        return np.zeros(nwarps, np.int64)
    w, g, s = warps.astype(U64), src.astype(U64), dst.astype(U64)
    piece = (w << U64(48)) | ((g >> U64(5)) & U64((1 << 35) - 1)) << U64(13) | ((s >> U64(5)) & U64((1 << 13) - 1))
    whole = np.unique(piece[(g & U64(16)) == 0])        # pieces with a lane in a sector's first half
    second = ~np.isin(piece, whole, assume_unique=False)
    key = ((w << U64(48)) | ((g >> U64(FILL_WINDOW_SHIFT)) & U64((1 << 33) - 1)) << U64(12)
           | ((s >> U64(FILL_WINDOW_SHIFT)) & U64((1 << 11) - 1)) << U64(1) | second.astype(U64))
    return np.bincount((np.unique(key) >> U64(48)).astype(np.int64), minlength=nwarps)


def _copy_pieces(warps: np.ndarray, src: np.ndarray, dst: np.ndarray, nwarps: int) -> np.ndarray:
    """Global sector reads per warp (0..nwarps-1) of one cp.async that bypasses the L1 (LDGSTS.BYPASS):
    one per piece, a global 32-byte sector and the shared 32-byte sector its bytes go to
    (`fill_wavefronts`' pieces), lane k reading global byte `src[k]` into shared byte `dst[k]`. A
    sector whose 16-byte halves land in two shared sectors (a destination 16 bytes off a 32-byte
    boundary) is read twice: on the H100, sm__sass_l1tex_t_sectors_..._ldgsts_cache_bypass counts
    24 sectors a warp's 512 bytes where every other row is so placed (pitches of 48, 80, 112, 144,
    176 bytes) and 16 where none is, and l1tex__m_xbar2l1tex_read_bytes is 1.5 times the bytes
    copied (data/measurements/fill_rule_h100.json, crossbar_probe_h100_run3.json, h100_tensor.json)."""
    if len(src) == 0:
        return np.zeros(nwarps, np.int64)
    w, g, s = warps.astype(U64), src.astype(U64), dst.astype(U64)
    piece = (w << U64(48)) | ((g >> U64(5)) & U64((1 << 35) - 1)) << U64(13) | ((s >> U64(5)) & U64((1 << 13) - 1))
    return np.bincount((np.unique(piece) >> U64(48)).astype(np.int64), minlength=nwarps)


LINE_MASK = ~np.int64(127)
MEMO_ENTRIES = 4096                     # per-warp counts kept by the lanes' pattern (a few MB at most)
_memo: dict[tuple, np.ndarray] = {}


def _rebased(warps: np.ndarray, src: np.ndarray, dst: np.ndarray):
    """(warps, src, dst) with each warp's sources and destinations moved down by multiples of 128
    bytes (to their lowest line and window): `_fill_wavefronts` and `_copy_pieces` count each
    warp's pieces, lines and windows on its own, and a shift by whole lines and windows keeps
    which bytes share them, so their counts are the same. A GEMM's copies then look alike from
    block to block and k-step to k-step. Warps not in increasing order share one shift."""
    w, g, s = warps.astype(np.int64), src.astype(np.int64), dst.astype(np.int64)
    if len(w) > 1 and bool((w[1:] >= w[:-1]).all()):
        starts = np.flatnonzero(np.r_[True, w[1:] != w[:-1]])
        counts = np.diff(np.r_[starts, len(w)])
        return (w, g - np.repeat(np.minimum.reduceat(g, starts) & LINE_MASK, counts),
                s - np.repeat(np.minimum.reduceat(s, starts) & LINE_MASK, counts))
    return w, g - (g.min() & LINE_MASK), s - (s.min() & LINE_MASK)


def _memoized(rule, warps: np.ndarray, src: np.ndarray, dst: np.ndarray, nwarps: int) -> np.ndarray:
    """`rule`'s per-warp counts, remembered by the rebased pattern of the lanes (`_rebased`):
    the np.unique over every lane of a batch was a quarter of a large cp.async GEMM's prediction."""
    if len(src) == 0:
        return np.zeros(nwarps, np.int64)
    w, g, s = _rebased(warps, src, dst)
    h = hashlib.blake2b(digest_size=16)
    for a in (w, g, s):
        h.update(np.ascontiguousarray(a).view(np.uint8))
    key = (rule.__name__, nwarps, len(w), h.digest())
    got = _memo.get(key)
    if got is None:
        if len(_memo) >= MEMO_ENTRIES:
            _memo.clear()
        got = _memo[key] = rule(w, g, s, nwarps)
    return got.copy()


def fill_wavefronts(warps: np.ndarray, src: np.ndarray, dst: np.ndarray, nwarps: int) -> np.ndarray:
    """`_fill_wavefronts` (the rule), remembered by the lanes' pattern (`_memoized`)."""
    return _memoized(_fill_wavefronts, warps, src, dst, nwarps)


def copy_pieces(warps: np.ndarray, src: np.ndarray, dst: np.ndarray, nwarps: int) -> np.ndarray:
    """`_copy_pieces` (the rule), remembered by the lanes' pattern (`_memoized`)."""
    return _memoized(_copy_pieces, warps, src, dst, nwarps)


def fill_count(lanes: np.ndarray, local: np.ndarray, read_lanes: np.ndarray, goff: np.ndarray) -> int:
    """`fill_wavefronts` summed over the warps of one cp.async step: `lanes` (increasing) copy to
    their block's shared bytes `local`, `read_lanes` (some of them) from global bytes `goff`; a
    lane that reads nothing (src-size 0) fills zeros, counted as a copy from its own aligned source."""
    src = local.astype(np.int64) | ZERO_FILL_SOURCE
    if len(read_lanes):
        src[np.searchsorted(lanes, read_lanes)] = goff.astype(np.int64)
    w = (lanes >> 5) - (lanes[0] >> 5)
    return int(fill_wavefronts(w, src, local, int(w[-1]) + 1).sum())


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
        c = x.counters
        w = lanes >> 5
        wl = w - w[0]
        nw = int(wl[-1]) + 1
        nwarps = int(np.count_nonzero(np.bincount(wl, minlength=nw)))
        c.add_extra(self.index, "ldgsts_inst", nwarps)
        c.add_extra(self.index, "global_ldgsts_bypass_requests" if self.bypass else "global_ldgsts_requests", nwarps)
        gw = (rl >> 5) - w[0]
        local = soff - x.cta_slot(lanes).astype(U64) * U64(lsu.shared_stride)
        if not len(rl):
            sectors = 0
        elif self.bypass:                   # a sector read once per shared sector it fills (copy_pieces)
            sectors = int(copy_pieces(gw, goff, local[reads], nw).sum())
        else:
            sectors = int(distinct_per_group(gw, goff >> SECTOR_SHIFT, nw).sum())
        c.add_extra(self.index, "global_ldgsts_bypass_sectors" if self.bypass else "global_ldgsts_sectors", sectors)
        c.add_extra(self.index, "shared_ldgsts_wavefronts", fill_count(lanes, local, rl, goff))


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

