"""Per-warp instruction streams for the timing model, produced by the functional core.

The timing model asks for blocks in the order its block scheduler dispatches them;
`TraceSource` executes them functionally in chunks (grouped, vectorized) and hands
back, per warp, the sequence of basic blocks it ran with, for every memory
instruction, what the memory units need: the distinct 32-byte sectors a global,
local or const access touches (local memory laid out as hardware interleaves it),
or the number of wavefronts a shared access takes; a cp.async both, its global side's
sectors and the wavefronts its shared side's fill takes (`payloads.CpAsyncPayload`; each access's
payloads are `access_payloads.AccessPayloads`'). Because the functional core
decides every address, mask and branch, the timing model never guesses them.

Does not model: any influence of timing on what a program computes (blocks of one
chunk run functionally before they are timed; data-race-free programs cannot tell).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusim.functional.communication import blocks_communicate
from gpusim.functional.loops import CLOCKS
from gpusim.timing.access_payloads import AccessPayloads
from gpusim.timing.payloads import LazyMem, StepPayloads
from isa.program import Special


@dataclass(slots=True)
class WarpStream:
    """One warp's dynamic path: `visits[k] = (block, active_lanes, mem)` where mem maps an
    instruction index to its payload: a wavefront count (shared), a sector array (loads:
    global/local/const), a `payloads.CpAsyncPayload` (cp.async), `(sectors, byte_masks)` (stores: bit b of
    a uint32 mask is byte b of the 32-byte sector), `(sectors, passes)` (atomics: per sector, the
    passes the L1 splits the warp's lanes into, i.e. the most lanes on one address of the sector),
    a `payloads.MbarrierAccess` (mbarrier operations), or a `tma.CopyPayload` (a bulk copy whose
    functional op traced both its global side, `trace_access(op, "global", ...)`, and the mbarrier
    its bytes complete, `trace_mbarrier(op, ..., "complete_tx", [bytes per lane])`)."""
    gid: int                      # global warp id: block * warps_per_block + warp
    block: int                    # linear block id
    warp_in_block: int
    visits: list
    local_sectors: int = 0        # sectors of its local frame (frames at LOCAL_WINDOW_BASE, one per gid in order)
    summary: tuple | None = None  # (payloads, [loads, stores, atomics]) over its visits, counted when recorded


class TraceSource:
    """Functional execution of a launch, chunk by chunk, as per-warp streams."""

    def __init__(self, prepared, chunk_blocks: int, issue=None, execute_skipped: bool = True):
        self.p = prepared
        self.chunk = max(1, chunk_blocks)
        self.issue = issue                                 # issue_stream.IssueStreams: PTX path -> SASS visits
        self.ready: dict[int, list[WarpStream]] = {}      # block -> its warps' streams
        self.next_block = 0
        self.done = np.zeros(prepared.geometry.nblocks, np.bool_)   # blocks executed (gather() leaves holes)
        self.executed = 0                                  # blocks executed functionally (counters cover these)
        self.functional_steps = 0
        self._merged: dict[int, int] | None = None         # PTX shared access -> its merged SASS access's bytes
        self.execute_skipped = execute_skipped             # seek(): run the blocks passed over (exact outputs)
        self.run_stop: int | None = None                   # seek(): chunks end where the sampled run ends
        self.planned: dict[int, int] = {}                  # gather(): block -> its place in the plan
        self._plan: list[int] = []
        self.gather_blocks = max(self.chunk, (1 << 15) // (prepared.geometry.warps_per_block * 32))
        self.keep_blocks: frozenset = frozenset()          # keep_for(): blocks whose PTX streams outlive their use
        self.kept: dict[int, list[tuple]] = {}             # ... those streams, for the next engine (`reuse`)

    def keep_for(self, blocks) -> None:
        """Keep the PTX streams of `blocks` for a later engine over the same launch (`reuse`): a
        block of them the engine takes keeps its streams as executed (before their SASS
        conversion); one this engine passes over (`seek`) is executed with its streams, in order,
        instead of plainly or not at all. The engine's settling of an unsettled sample
        (`engine.TimingEngine.run`) times a larger sample of the same launch with them, so no
        block is executed twice (outputs stay exact) and none the larger sample needs is lost.
        Streams kept earlier for blocks `blocks` no longer names are dropped."""
        self.keep_blocks = frozenset(int(b) for b in blocks)
        self.kept = {b: v for b, v in self.kept.items() if b in self.keep_blocks}

    def _keep(self, b: int, streams: list[WarpStream]) -> None:
        self.kept[b] = [(st.gid, st.block, st.warp_in_block, st.visits, st.local_sectors, st.summary)
                        for st in streams]

    def reuse(self, prepared, chunk_blocks: int, issue=None, execute_skipped: bool = True,
              from_start: bool = False) -> "TraceSource":
        """This source, for a new engine over the same launch (TraceSource's signature): the
        blocks it already ran are not run again (their streams stay ready), the rest run in
        order in chunks of `chunk_blocks`, converted by the new `issue`: where it takes every
        block, from the first block a gathered run passed over; `from_start` (a denser sample,
        whose blocks may lie before those run so far): from block 0. Blocks whose streams the
        previous engine kept (`keep_for`) are served from them."""
        assert prepared is self.p
        self.keep_blocks = frozenset()
        self.chunk = max(1, chunk_blocks)
        self.issue = issue
        self._merged = None
        self.execute_skipped = execute_skipped
        self.run_stop = None
        self.gather_blocks = max(self.chunk, (1 << 15) // (prepared.geometry.warps_per_block * 32))
        self.gather([])
        if from_start:
            self.next_block = 0
        elif execute_skipped and not self.done[:self.next_block].all():
            self.next_block = int(np.argmin(self.done[:self.next_block]))
        return self

    def gather(self, blocks) -> None:
        """Blocks the caller will take, in the order it takes them (increasing), from across
        the grid: a block of them not yet executed runs in one batch with the next ones of
        them, up to `gather_blocks` (about 32K threads), instead of in a chunk of consecutive
        blocks. Only for launches whose blocks run the same whichever others share their batch
        (`batch_independent`): the streams are those chunk by chunk gives, the batches fewer."""
        self._plan = [int(b) for b in blocks]
        self.planned = {b: i for i, b in enumerate(self._plan)}

    def seek(self, b: int, length: int) -> None:
        """Go on at block `b`, the first of `length` consecutive blocks to time (sampled timing
        takes them from across the grid): the blocks before it that no chunk ran are executed
        without streams, in order, when `execute_skipped` (outputs stay exact), else left out;
        streams nobody took are dropped."""
        for k in [k for k in self.ready if k < b]:
            streams = self.ready.pop(k)
            if k in self.keep_blocks:
                self._keep(k, streams)
        if b > self.next_block:
            self._run_passed(self.next_block, b)
            self.next_block = b
        self.run_stop = b + length

    def _run_passed(self, start: int, stop: int) -> None:
        """The blocks start..stop-1 a seek passes over, in order: those `keep_for` named executed
        with their streams (kept), the rest plainly where `execute_skipped`, else left out."""
        keep = sorted(k for k in self.keep_blocks if start <= k < stop and not self.done[k]) if self.keep_blocks \
            else []
        at = start
        for first, n in list(consecutive_runs(keep).items()) + [(stop, 0)]:
            if first > at and self.execute_skipped:
                self._run_plain(at, first)
            if n:
                self._run_blocks(range(first, first + n))
                for k in range(first, first + n):
                    self._keep(k, self.ready.pop(k))
            at = first + n

    def block(self, b: int) -> list[WarpStream]:
        """The streams of block `b` (computing its chunk if needed), as SASS visits where an
        `issue` converter is set; each block is taken once."""
        streams = self.peek(b)
        del self.ready[b]
        if b in self.keep_blocks:
            self._keep(b, streams)
        if self.issue is not None:
            for st in streams:
                st.visits = self.issue.convert(st.visits, st.summary, b)
        return streams

    def peek(self, b: int) -> list[WarpStream]:
        """Block `b`'s streams of PTX visits (executing its chunk if needed), left in place."""
        while b not in self.ready:
            kept = self.kept.pop(b, None)
            if kept is not None:                        # kept by the previous engine (`keep_for`)
                self.ready[b] = [WarpStream(g, blk, w, visits, local, summary)
                                 for g, blk, w, visits, local, summary in kept]
                break
            i = self.planned.get(b)
            if i is not None and b >= self.next_block:
                run = [k for k in self._plan[i:i + self.gather_blocks]
                       if k >= self.next_block and k not in self.ready and not self.done[k]]
                self._run_blocks(run)
                self.next_block = run[-1] + 1
                continue
            if self.next_block >= self.p.geometry.nblocks:
                raise IndexError(b)
            n = min(self.chunk, self.p.geometry.nblocks - self.next_block)
            if self.run_stop is not None and self.run_stop > self.next_block:
                n = min(n, self.run_stop - self.next_block)
            if self.done[self.next_block:self.next_block + n].any():   # after gathered runs (reuse)
                todo = [k for k in range(self.next_block, self.next_block + n) if not self.done[k]]
                if todo:
                    self._run_blocks(todo)
            else:
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
        if start < stop and self.done[start:stop].any():          # after gathered runs: the holes they left
            todo = np.flatnonzero(~self.done[start:stop]) + start
            self.executed += len(todo)
            self.done[todo] = True
            with np.errstate(all="ignore"):
                for i in range(0, len(todo), per):
                    ids = todo[i:i + per]
                    self._batch(int(ids[0]), len(ids), blocks=ids).run(close=True)
            return
        self.executed += max(0, stop - start)
        self.done[start:stop] = True
        with np.errstate(all="ignore"):
            for first in range(start, stop, per):
                self._batch(first, min(per, stop - first)).run(close=True)

    def _run_chunk(self, first: int, n: int) -> None:
        self._run_blocks(range(first, first + n))

    def _run_blocks(self, blocks) -> None:
        """Execute `blocks` (increasing linear ids) as one batch, recording their streams."""
        p = self.p
        wpc = p.geometry.warps_per_block
        n = len(blocks)
        self.executed += n
        self.done[np.asarray(blocks, np.int64)] = True
        ex = self._batch(blocks[0], n) if isinstance(blocks, range) else self._batch(blocks[0], n, blocks=np.array(blocks))
        streams = [WarpStream(gid=blocks[w // wpc] * wpc + w % wpc, block=blocks[w // wpc], warp_in_block=w % wpc,
                              visits=[]) for w in range(n * wpc)]
        gids = np.array([st.gid for st in streams], np.int64)
        lsu = ex.lsu
        adder = AccessPayloads(p.decoded.infos, self._merged_widths())
        for st in streams:
            st.local_sectors = lsu.local_stride          # stride bytes per lane x 32 lanes / 32-B sectors
        payloads = np.zeros(len(streams), np.int64)      # per batch warp: its payloads, and their kinds
        kinds = np.zeros((len(streams), 3), np.int64)
        with np.errstate(all="ignore"):
            while True:
                rec = ex.step()
                if rec is None:
                    break
                self.functional_steps += 1
                warps = rec.warps.tolist()
                counts = np.bitwise_count(rec.masks).tolist()
                b = rec.block
                if not rec.accesses:
                    for w, c in zip(warps, counts):
                        streams[w].visits.append((b, c, {}))
                    continue
                sp = StepPayloads(rec.warps)
                for a in rec.accesses:
                    adder.add(a, sp, lsu, gids, wpc)
                sp.finish()
                payloads[rec.warps] += sp.counts
                kinds[rec.warps] += sp.kinds
                for j, (w, c) in enumerate(zip(warps, counts)):
                    streams[w].visits.append((b, c, LazyMem(sp, j)))
        ex.close()
        for st, n, k in zip(streams, payloads.tolist(), kinds.tolist()):
            st.summary = (n, k)
        for k, b in enumerate(blocks):
            self.ready[b] = streams[k * wpc:(k + 1) * wpc]

    def _batch(self, first: int, n: int, **kw):
        """The launch's executor for n blocks from `first`, its shared accesses counted as the SASS
        instructions ptxas merged them into move them (`_merged_widths`)."""
        ex = self.p.batch(first, n, **kw)
        ex.lsu.count_bytes = self._merged_widths()
        return ex

    def _merged_widths(self) -> dict[int, int]:
        """PTX shared loads and stores that ptxas merged into a wider SASS access (numba's
        unrolled `sa[ty, k]`: four `ld.shared.f32` -> one LDS.128): the bytes a lane of that
        access moves (`issue_stream.IssueStreams.wide_targets`)."""
        if self._merged is None:
            infos = self.p.decoded.infos
            wide = self.issue.wide_targets if self.issue is not None else {}
            self._merged = {p: w for p, w in wide.items()
                            if w > infos[p].access_bytes and infos[p].kind != "tensor" and not infos[p].is_atomic}
        return self._merged

def consecutive_runs(order) -> dict[int, int]:
    """The first block of each run of consecutive blocks in `order` (increasing) -> the run's length."""
    if isinstance(order, range):
        return {order.start: len(order)} if len(order) else {}
    runs: dict[int, int] = {}
    for i, b in enumerate(order):
        if i == 0 or b != order[i - 1] + 1:
            start = b
            runs[start] = 0
        runs[start] += 1
    return runs


def batch_independent(prepared) -> bool:
    """Whether each block's streams (path, addresses, masks) and the launch's functional
    counters are the same whichever blocks share its batch, in whatever order: blocks
    cannot communicate (`functional.communication`), nothing reads the clock (a step
    count), no sanitizer follows accesses across blocks, no thread-block cluster shares its
    blocks' shared memory (a batch holds whole clusters). `TraceSource.gather` needs it."""
    if prepared.sanitizer is not None or blocks_communicate(prepared) is not None:
        return False
    if prepared.geometry.cluster_size > 1:
        return False
    return not any(type(o) is Special and o.name in CLOCKS
                   for ins in prepared.decoded.kernel.instructions for o in ins.operands)
