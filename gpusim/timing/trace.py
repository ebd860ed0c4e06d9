"""Per-warp instruction streams for the timing model, produced by the functional core.

The timing model asks for blocks in the order its block scheduler dispatches them;
`TraceSource` executes them functionally in chunks (grouped, vectorized) and hands
back, per warp, the sequence of basic blocks it ran with, for every memory
instruction, what the memory units need: the distinct 32-byte sectors a global,
local or const access touches (local memory laid out as hardware interleaves it),
or the number of wavefronts a shared access takes. Because the functional core
decides every address, mask and branch, the timing model never guesses them.

Does not model: any influence of timing on what a program computes (blocks of one
chunk run functionally before they are timed; data-race-free programs cannot tell).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gpusim.functional.lsu import shared_wavefronts
from gpusim.timing.tma import CopyPayload
from isa.memory_map import CONST_WINDOW_BASE, GLOBAL_BASE, LOCAL_WINDOW_BASE

U64 = np.uint64


@dataclass(frozen=True, slots=True)
class MbarrierAccess:
    """One warp's mbarrier operation (the payload of its SYNCS instruction, gpusim/timing/mbarrier.py):
    `what` as `executor.trace_mbarrier` names it, the mbarrier's byte offset in its block's shared
    memory (the first active lane's), and the warp's arguments summed over its lanes: `count` the
    arrivals (or, for 'init', the expected count), `tx` the transaction bytes (expected, or for
    'complete_tx' delivered), `parity` the phase parity a wait waits for."""
    what: str
    address: int
    count: int = 0
    tx: int = 0
    parity: int = 0


def mbarrier_access(what: str, address: int, lanes: int, args: list) -> MbarrierAccess:
    """A warp's MbarrierAccess from `lanes` lanes' argument arrays `args` (async_ops.MbarrierOp)."""
    first = lambda k: int(args[k][0]) if len(args) > k and len(args[k]) else 0   # noqa: E731
    total = lambda k: int(np.sum(args[k])) if len(args) > k else 0              # noqa: E731
    if what == "init":
        return MbarrierAccess(what, address, count=first(0))
    if what == "arrive":
        return MbarrierAccess(what, address, count=total(0) if args else lanes)
    if what == "arrive_expect_tx":
        return MbarrierAccess(what, address, count=lanes, tx=total(0))
    if what in ("expect_tx", "complete_tx"):
        return MbarrierAccess(what, address, tx=total(0))
    if what in ("try_wait", "test_wait"):
        return MbarrierAccess(what, address, parity=first(0) & 1)
    return MbarrierAccess(what, address)


@dataclass(slots=True)
class WarpStream:
    """One warp's dynamic path: `visits[k] = (block, active_lanes, mem)` where mem maps an
    instruction index to its payload: a wavefront count (shared), a sector array (loads:
    global/local/const; cp.async: its global side), `(sectors, byte_masks)` (stores: bit b of
    a uint32 mask is byte b of the 32-byte sector), `(sectors, passes)` (atomics: per sector, the
    passes the L1 splits the warp's lanes into, i.e. the most lanes on one address of the sector),
    an `MbarrierAccess` (mbarrier operations), or a `tma.CopyPayload` (a bulk copy whose functional
    op traced both its global side, `trace_access(op, "global", ...)`, and the mbarrier its bytes
    complete, `trace_mbarrier(op, ..., "complete_tx", [bytes per lane])`)."""
    gid: int                      # global warp id: block * warps_per_block + warp
    block: int                    # linear block id
    warp_in_block: int
    visits: list
    local_sectors: int = 0        # sectors of its local frame (frames at LOCAL_WINDOW_BASE, one per gid in order)


class TraceSource:
    """Functional execution of a launch, chunk by chunk, as per-warp streams."""

    def __init__(self, prepared, chunk_blocks: int, issue=None, execute_skipped: bool = True):
        self.p = prepared
        self.chunk = max(1, chunk_blocks)
        self.issue = issue                                 # issue_stream.IssueStreams: PTX path -> SASS visits
        self.ready: dict[int, list[WarpStream]] = {}      # block -> its warps' streams
        self.next_block = 0
        self.executed = 0                                  # blocks executed functionally (counters cover these)
        self.functional_steps = 0
        self.execute_skipped = execute_skipped             # seek(): run the blocks passed over (exact outputs)
        self.run_stop: int | None = None                   # seek(): chunks end where the sampled run ends

    def reuse(self, prepared, chunk_blocks: int, issue=None, execute_skipped: bool = True) -> "TraceSource":
        """This source, for a new engine over the same launch (TraceSource's signature): the
        blocks it already ran are not run again (their streams stay ready), the rest run in
        order in chunks of `chunk_blocks`, converted by the new `issue`."""
        assert prepared is self.p
        self.chunk = max(1, chunk_blocks)
        self.issue = issue
        self.execute_skipped = execute_skipped
        self.run_stop = None
        return self

    def seek(self, b: int, length: int) -> None:
        """Go on at block `b`, the first of `length` consecutive blocks to time (sampled timing
        takes them from across the grid): the blocks before it that no chunk ran are executed
        without streams, in order, when `execute_skipped` (outputs stay exact), else left out;
        streams nobody took are dropped."""
        for k in [k for k in self.ready if k < b]:
            del self.ready[k]
        if b > self.next_block:
            if self.execute_skipped:
                self._run_plain(self.next_block, b)
            self.next_block = b
        self.run_stop = b + length

    def block(self, b: int) -> list[WarpStream]:
        """The streams of block `b` (computing its chunk if needed), as SASS visits where an
        `issue` converter is set; each block is taken once."""
        streams = self.peek(b)
        del self.ready[b]
        if self.issue is not None:
            for st in streams:
                st.visits = self.issue.convert(st.visits)
        return streams

    def peek(self, b: int) -> list[WarpStream]:
        """Block `b`'s streams of PTX visits (executing its chunk if needed), left in place."""
        while b not in self.ready:
            if self.next_block >= self.p.geometry.nblocks:
                raise IndexError(b)
            n = min(self.chunk, self.p.geometry.nblocks - self.next_block)
            if self.run_stop is not None and self.run_stop > self.next_block:
                n = min(n, self.run_stop - self.next_block)
            self._run_chunk(self.next_block, n)
            self.next_block += n
        return self.ready[b]

    def finish_functional(self) -> None:
        """Execute the blocks nobody asked for (sampled timing), for correct outputs."""
        self._run_plain(self.next_block, self.p.geometry.nblocks)
        self.next_block = self.p.geometry.nblocks

    def _run_plain(self, start: int, stop: int) -> None:
        """Execute blocks start..stop-1 functionally, recording nothing."""
        per = max(1, (1 << 15) // (self.p.geometry.warps_per_block * 32))
        self.executed += max(0, stop - start)
        with np.errstate(all="ignore"):
            for first in range(start, stop, per):
                self.p.batch(first, min(per, stop - first)).run()

    def _run_chunk(self, first: int, n: int) -> None:
        p = self.p
        wpc = p.geometry.warps_per_block
        self.executed += n
        ex = p.batch(first, n)
        streams = [WarpStream(gid=first * wpc + w, block=first + w // wpc, warp_in_block=w % wpc, visits=[])
                   for w in range(n * wpc)]
        lsu = ex.lsu
        for st in streams:
            st.local_sectors = lsu.local_stride          # stride bytes per lane x 32 lanes / 32-B sectors
        with np.errstate(all="ignore"):
            while True:
                rec = ex.step()
                if rec is None:
                    break
                self.functional_steps += 1
                warps = rec.warps.tolist()
                counts = np.bitwise_count(rec.masks).tolist()
                new = {}
                for w, c in zip(warps, counts):
                    v = (rec.block, c, {})
                    streams[w].visits.append(v)
                    new[w] = v[2]
                for a in rec.accesses:
                    self._access(a, new, lsu, first, wpc)
        for k in range(n):
            self.ready[first + k] = streams[k * wpc:(k + 1) * wpc]

    def _access(self, a, new: dict, lsu, first: int, wpc: int) -> None:
        wl = (a.lanes >> 5).astype(np.int64)
        w0 = int(wl[0])
        rel = wl - w0
        nw = int(rel[-1]) + 1
        info = self.p.decoded.infos[a.instr]
        if a.space == "mbarrier":
            what, args = a.values
            base = (a.lanes // (wpc * 32)).astype(U64) * U64(lsu.shared_stride)
            local = (a.offsets - base).astype(np.int64)
            for k in np.unique(rel).tolist():
                sel = rel == k
                m = mbarrier_access(what, int(local[sel][0]), int(sel.sum()), [np.asarray(v)[sel] for v in args])
                new[w0 + k][a.instr] = _with_mbarrier(new[w0 + k].get(a.instr), m)
            return
        if a.space == "shared" and info.kind == "async" and info.mnemonic.startswith(("cp.", "mbarrier")):
            return          # an async copy's shared side (its payload is the global side); an mbarrier's object
        if a.space == "shared":
            cta_base = (a.lanes // (wpc * 32)).astype(U64) * U64(lsu.shared_stride)
            nbytes = a.nbytes or (16 if info.kind == "tensor" else info.access_bytes)   # ldmatrix: 16-byte rows
            wf = shared_wavefronts(rel, a.offsets - cta_base, nbytes, nw, lsu.banks, lsu.bank_width)
            for k in np.unique(rel).tolist():
                new[w0 + k][a.instr] = int(wf[k])
            return
        if a.space == "global":
            addr = a.offsets + U64(GLOBAL_BASE)
        elif a.space == "const":
            addr = a.offsets + U64(CONST_WINDOW_BASE)
        else:                                          # local: interleaved per warp, a frame per gid (sm.py moves it to the warp's slot)
            hw = lsu._local_hw_offsets(a.lanes, a.offsets, info.access_bytes)
            rep = len(hw) // len(a.lanes)
            gw = np.repeat(wl + first * wpc, rep).astype(U64)
            addr = U64(LOCAL_WINDOW_BASE) + gw * U64(lsu.local_stride * 32) + hw
            rel = np.repeat(rel, rep)
        sectors = addr >> U64(5)
        keys = (rel.astype(U64) << U64(48)) | (sectors - sectors.min())
        passes = masks = None
        if info.is_atomic:                             # the L1 splits the warp's atomic into passes
            # a pass takes at most one lane per address; each sector is in as many passes as the
            # most lanes on one of its addresses (Nsight's lts__t_sectors_op_red/atom, H200)
            u_addr, lanes = np.unique((rel.astype(U64) << U64(48)) | (addr - (sectors.min() << U64(5))),
                                      return_counts=True)
            sector_key = (u_addr >> U64(48) << U64(48)) | ((u_addr & U64((1 << 48) - 1)) >> U64(5))
            first = np.flatnonzero(np.r_[True, sector_key[1:] != sector_key[:-1]])
            u = sector_key[first]                      # == np.unique(keys): the same (warp, sector) order
            passes = np.maximum.reduceat(lanes, first)
        elif (info.is_store if a.is_store is None else a.is_store):   # which bytes of each sector the warp writes
            nb = a.nbytes or info.access_bytes
            nb = min(nb, 4) if a.space == "local" else nb
            lane_masks = ((U64((1 << nb) - 1) << (addr & U64(31))).astype(np.uint32) if 0 < nb < 32
                          else np.full(len(addr), 0xFFFFFFFF, np.uint32))    # a bulk copy's whole sectors
            order = np.argsort(keys, kind="stable")
            sk = keys[order]
            starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
            u, masks = sk[starts], np.bitwise_or.reduceat(lane_masks[order], starts)
        else:
            u = np.unique(keys)
        owner = (u >> U64(48)).astype(np.int64)
        vals = (u & U64((1 << 48) - 1)) + sectors.min()
        cuts = np.flatnonzero(np.diff(owner)) + 1
        starts = np.r_[0, cuts]
        ends = np.r_[cuts, len(u)]
        for k, s0, s1 in zip(owner[starts].tolist(), starts.tolist(), ends.tolist()):
            mem = new[w0 + k]
            seg = vals[s0:s1]
            prev = mem.get(a.instr)
            if isinstance(prev, (MbarrierAccess, CopyPayload)):      # a bulk copy: its mbarrier, other lanes' copies
                sec = seg if masks is None else (seg, masks[s0:s1])
                mem[a.instr] = _copy_with_sectors(prev, sec)
                continue
            if passes is not None:
                mem[a.instr] = (seg, passes[s0:s1])
                continue
            if masks is not None:
                mem[a.instr] = _merge_store(prev, seg, masks[s0:s1])
                continue
            mem[a.instr] = seg if prev is None or isinstance(prev, int) else np.union1d(prev, seg)


def _with_mbarrier(prev, m: MbarrierAccess):
    """A warp's payload with mbarrier operation `m` added: a bulk copy's sectors (or CopyPayload)
    gain it as their complete_tx (two copies of one warp to one mbarrier: their bytes added)."""
    if prev is None:
        return m
    if isinstance(prev, MbarrierAccess):
        return replace(prev, tx=prev.tx + m.tx)
    if isinstance(prev, CopyPayload):
        mb = prev.mbarrier
        return CopyPayload(prev.sectors, m if mb is None else replace(mb, tx=mb.tx + m.tx))
    return CopyPayload(prev, m)


def _copy_with_sectors(prev, sec):
    """A bulk copy's payload with more global sectors (an array, or a store's (sectors, masks))."""
    if isinstance(prev, MbarrierAccess):
        return CopyPayload(sec, prev)
    old = prev.sectors
    if old is None:
        return CopyPayload(sec, prev.mbarrier)
    if isinstance(sec, tuple):
        return CopyPayload(_merge_store(old, *sec), prev.mbarrier)
    return CopyPayload(np.union1d(old, sec), prev.mbarrier)


def _merge_store(prev, sectors: np.ndarray, masks: np.ndarray) -> tuple:
    """A store payload (sectors, byte masks) with another part of the same warp's store
    (a generic address resolving into two spaces) merged in: masks of a shared sector OR."""
    if prev is None:
        return sectors, masks
    s = np.concatenate([prev[0], sectors])
    m = np.concatenate([prev[1], masks])
    order = np.argsort(s, kind="stable")
    s, m = s[order], m[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    return s[starts], np.bitwise_or.reduceat(m, starts)
