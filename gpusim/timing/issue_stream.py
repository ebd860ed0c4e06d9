"""What a warp issues: its executed PTX path (from the functional core) turned into the
SASS segments the SM model times, with every memory access moved onto the SASS
instruction that performs it.

Input: one warp's PTX visits `(ptx_block, active_lanes, mem)` (`functional_streams.WarpStream`),
`mem` keyed by PTX instruction index. Output: SASS visits `(segment, active_lanes,
mem)`, `mem` keyed by SASS instruction index (`static.IssueProgram`):
- a PTX block with a region issues its segment; one without (ptxas merged it into a
  neighbour) issues nothing;
- a run of n consecutive visits of a one-block loop ptxas unrolled issues the SASS
  blocks of `SassMap.walk(block, n)`; the j-th copy of a memory instruction in a pass
  takes the addresses of the pass's j-th iteration;
- a memory access goes to `SassMap.payload_target`, issued in the region of
  `payload_home`: onto that home's latest visit if the home comes first
  (`payload_back`), else onto its next one. Two PTX accesses landing on one SASS
  instruction (ptxas merged them) are merged (sectors united, byte masks OR-ed,
  wavefronts: the larger).
Consecutive stores of one visit to one sector are combined (`combine_stores`), as the
L1 does before they reach the L2, until a load of that sector comes between them. `dropped` counts accesses with no SASS visit to land on (reported by the engine as
`gpusim__sass_unplaced_accesses.sum`, and warned of where mbarrier operations or more than 1% of a
launch's accesses are among them; zero on every program of `programs/`).

**Loop sampling** (`warp_budget`, SASS instructions per warp; None: off). A warp whose
path would issue more than the budget has iterations of one loop left out: the
outermost PTX loop with at least 2 x `MIN_ITERATIONS` iterations per activation, chosen
once per kernel from the first warp over budget. Of an activation of N iterations K =
max(`MIN_ITERATIONS`, N * budget / path) consecutive ones and the last are kept: the first K in
the launch's first round of blocks (those the whole GPU runs at once), K from a place that moves
round after round in later rounds (`kept_offset`), so that the kept iterations read the parts of
the loop's data the whole loops read, as often. A `LOOP`
marker where the activation begins and a `SKIP` marker where iterations were left out
(carrying the SASS instructions kept in the activation so far and those left out) let
the SM time the loop: the engine stretches each SM's loop time, from its first `LOOP`
to its last `SKIP`, by (kept + left out) / kept. Warps are not stopped at a `SKIP`
(a waiting warp would free pipes and memory, and the others' iterations would run
unrealistically fast); every warp of a block runs the same iterations (a loop's trip
count is the block's), so barriers stay matched. `kept` / `skipped` count SASS
instructions and memory accesses on each side, for the engine to extrapolate counters.
"""
from __future__ import annotations

import math
from itertools import chain, compress, repeat
from operator import itemgetter, methodcaller

import numpy as np

from gpusim.frontend.sass.payloads import access_bytes, folded_constant
from gpusim.timing.static import GLOBAL
from gpusim.timing.tma import CopyPayload
from gpusim.timing.payloads import CpAsyncPayload, MbarrierAccess

LOOP, SKIP = -1, -2                     # marker segments (see module docstring)
MIN_ITERATIONS = 8
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0  # kept_offset's sequence
_FIRST, _MEM = itemgetter(0), itemgetter(2)        # a visit's PTX block, its payloads
_VALUES = methodcaller("values")                     # of a dict or a payloads.LazyMem


class IssueStreams:
    def __init__(self, smap, program, warp_budget: int | None = None):
        self.smap = smap
        self.region = program.region_segment
        self.block_segment = program.block_segment
        self.unrolled = smap.unrolled
        self.target = smap.payload_target
        self.home = smap.payload_home
        self.back = smap.payload_back
        self._route = {p: (s, self.home[p], self.back[p]) for p, s in self.target.items()}   # _convert's lookups
        ops = [smap.listing.instructions[s].opcode for s in self.target.values()]
        # PTX access -> the bytes a lane of its SASS target moves, where that is a wide LDS/STS
        # (ptxas may have merged scalar PTX accesses into it: functional_streams counts them as one)
        self.wide_targets = {p: access_bytes(op) for p, op in zip(self.target, ops)
                             if op.startswith(("LDS", "STS")) and access_bytes(op)}
        self.copies = smap.copies
        self._walks: dict[tuple[int, int], list] = {}
        self.dropped = 0
        self.dropped_mbarrier = 0                    # of them mbarrier operations (a wait that would not wait)
        self.warp_budget = warp_budget
        self.round_blocks = 1                        # blocks the whole GPU runs at once (kept_offset's rounds)
        self.loop: int | None = None                 # the PTX loop sampled (chosen once)
        self.loop_chosen = False
        self.kept = [0, 0]                           # SASS instructions, accesses issued
        self.skipped = [0, 0]                        # ... left out by loop sampling
        self.kept_kinds = [0, 0, 0]                  # loads, stores, atomics issued
        self.skipped_kinds = [0, 0, 0]               # ... left out
        lens = {h: len(program.segments[seg]) for h, seg in self.region.items()}
        for h, loop in self.unrolled.items():        # per iteration: the remainder pass
            blocks = smap.cfg.blocks
            per = [(blocks[k].end - blocks[k].start) / c for k, c in loop.content.items() if c]
            lens[h] = min(per) if per else 0
        self.cost = lens                              # PTX block -> SASS instructions per visit
        # per segment with 2+ stores: its global/local stores and loads in issue order (`combine_stores`)
        self.merge_order = {seg: [x.index for x in instrs if (x.is_store and not x.is_atomic) or _l1_load(x)]
                       for seg, instrs in enumerate(program.segments)
                       if sum(x.is_store and not x.is_atomic for x in instrs) > 1}

    def convert(self, visits: list, summary: tuple | None, block: int) -> list:
        """The SASS visits of one warp's PTX visits; the counters advanced by `adds` (the same
        terms `add` takes: a caller that keeps the result can advance them again without
        converting, gpusim.sweep's replay). `summary`: (payloads, [loads, stores, atomics])
        of all its visits where the trace counted them (`functional_streams.WarpStream.summary`);
        `block`: the warp's block (linear id), which places its kept iterations (`_sample`)."""
        cost = self.cost
        blocks = list(map(_FIRST, visits))
        total = sum(map(cost.get, blocks, repeat(0)))          # in visit order, as a float sum must be
        acc = summary[0] if summary is not None else sum(map(len, map(_MEM, visits)))
        skipped = kinds_kept = kinds_skipped = None
        if self.warp_budget is not None and total > self.warp_budget:
            kinds = list(summary[1]) if summary is not None else _kinds(visits)
            visits = self._sample(visits, blocks, total, block)
            k_inst = sum(cost.get(v[0], 0) for v in visits if v[0] >= 0)
            k_acc = sum(len(v[2]) for v in visits if v[0] >= 0)
            skipped = (total - k_inst, acc - k_acc)
            kinds_kept = _kinds(visits)
            kinds_skipped = [kinds[i] - kinds_kept[i] for i in range(3)]
            total, acc = k_inst, k_acc
        elif self.warp_budget is not None:
            kinds_kept = _kinds(visits)
        dropped, dropped_mbarrier = self.dropped, self.dropped_mbarrier
        out = self._convert(visits)
        self.adds = (total, acc, skipped, kinds_kept, kinds_skipped, self.dropped - dropped,
                     self.dropped_mbarrier - dropped_mbarrier)
        self.dropped, self.dropped_mbarrier = dropped, dropped_mbarrier
        self.add(self.adds)
        return out

    def add(self, adds: tuple) -> None:
        """Advance the counters by what converting one warp added (`convert` sets `adds`)."""
        total, acc, skipped, kinds_kept, kinds_skipped, dropped, dropped_mbarrier = adds
        if skipped is not None:
            self.skipped[0] += skipped[0]
            self.skipped[1] += skipped[1]
            for i in range(3):
                self.skipped_kinds[i] += kinds_skipped[i]
        if kinds_kept is not None:
            self.kept_kinds = [a + b for a, b in zip(self.kept_kinds, kinds_kept)]
        self.kept[0] += total
        self.kept[1] += acc
        self.dropped += dropped
        self.dropped_mbarrier += dropped_mbarrier

    def _convert(self, visits: list) -> list:
        out: list = []
        latest: dict[int, dict] = {}                 # PTX home block -> mem of its latest SASS visit
        pending: dict[int, dict] = {}                # PTX home block -> accesses waiting for its next visit
        region, route = self.region, self._route
        i, n = 0, len(visits)
        while i < n:
            b, lanes, mem = visits[i]
            if b < 0:                                 # a loop-sampling marker
                out.append((b, lanes, None))
                i += 1
                continue
            if b in self.unrolled:
                chain = self.unrolled[b].blocks
                if not chain:
                    j = i + 1
                    while j < n and visits[j][0] == b:
                        j += 1
                    self._loop(b, visits[i:j], out)
                    i = j
                    continue
                run, i = _chain_run(visits, i, chain)   # a chain's iterations, its blocks' accesses together
                if run:
                    self._loop(b, run, out)
                    continue
            i += 1
            seg = region.get(b)
            if seg is not None:
                if out and out[-1][0] >= 0 and self.merge_order.get(out[-1][0]):
                    combine_stores(self.merge_order[out[-1][0]], out[-1][2])
                m: dict = pending.pop(b, None) or {}
                out.append((seg, lanes, m))
                latest[b] = m
            for p, payload in mem.items():
                r = route.get(p)
                if r is None:
                    if not folded_constant(payload):
                        self.dropped += 1
                        self.dropped_mbarrier += type(payload) is MbarrierAccess
                    continue
                s, h, back = r
                if h == b or (back and h in latest):
                    dest = latest[h]
                else:
                    dest = pending.setdefault(h, {})
                prev = dest.get(s)
                if prev is None:
                    dest[s] = payload
                elif type(prev) is int and type(payload) is int:     # shared wavefronts: merge's max, inlined
                    dest[s] = payload if payload > prev else prev
                else:
                    dest[s] = merge(prev, payload)
        for left in pending.values():
            self.dropped += sum(not folded_constant(v) for v in left.values())
            self.dropped_mbarrier += sum(type(v) is MbarrierAccess for v in left.values())
        if out and out[-1][0] >= 0 and self.merge_order.get(out[-1][0]):
            combine_stores(self.merge_order[out[-1][0]], out[-1][2])
        return out

    def traffic_scale(self, counter: str) -> float:
        """How much of the memory traffic behind `counter` loop sampling kept: the write-side
        counters scale with the stores left out, atomics with atomics, the rest with loads."""
        k = 1 if "write" in counter or "_st" in counter or counter.startswith("nvltx") else 2 if "atom" in counter or "red" in counter else 0
        kept, skipped = self.kept_kinds[k], self.skipped_kinds[k]
        return (kept + skipped) / kept if kept and skipped else 1.0

    # ------------------------------------------------------------------ loop sampling
    def _choose_loop(self, visits: list) -> int | None:
        """The outermost loop with at least MIN_ITERATIONS iterations per activation."""
        best = None
        for h, body in self.smap.ptx_loops.items():
            iters = starts = work = 0
            prev_inside = False
            for v in visits:
                inside = v[0] in body
                if inside:
                    work += self.cost.get(v[0], 0)
                    if v[0] == h:
                        iters += 1
                        starts += not prev_inside
                prev_inside = inside
            if starts and iters >= MIN_ITERATIONS * 2 * starts:
                key = (work, len(body))
                if best is None or key > best[0]:
                    best = (key, h)
        return best[1] if best else None

    def _sample(self, visits: list, blocks: list, total: int, block: int) -> list:
        """`visits` with iterations of each activation of the sampled loop left out (module
        docstring); `blocks`: each visit's PTX block. An activation starts at the loop header's
        first visit in a run of visits inside the loop body and ends with the run. Its kept
        run of K iterations starts at `kept_offset` of the block's round, its last iteration is kept."""
        if not self.loop_chosen:
            self.loop, self.loop_chosen = self._choose_loop(visits), True
        h = self.loop
        if h is None:
            return visits
        body = self.smap.ptx_loops[h]
        frac = self.warp_budget / total
        b = np.array(blocks, np.int64)
        inside = np.isin(b, np.fromiter(body, np.int64, len(body)))
        is_head = b == h
        edges = np.flatnonzero(np.diff(np.r_[False, inside, False].astype(np.int8)))
        heads_at = np.flatnonzero(is_head)
        cost_get = self.cost.get
        out: list = []
        i = 0
        for s0, e0 in zip(edges[0::2].tolist(), edges[1::2].tolist()):   # runs of visits inside the body
            lo, hi = np.searchsorted(heads_at, [s0, e0])
            if lo == hi:
                continue                                 # no header visit: visited one by one
            heads = heads_at[lo:hi].tolist()             # the activation: from the first header visit to e0
            out.extend(visits[i:heads[0]])
            count = len(heads)
            keep = max(MIN_ITERATIONS, math.ceil(frac * count))
            if count <= keep + 1:
                out.extend(visits[heads[0]:e0])
            else:
                o = kept_offset(block // self.round_blocks, count, keep)
                first, stop = heads[o], heads[o + keep]
                left_out = sum(map(cost_get, blocks[heads[0]:first], repeat(0))) \
                    + sum(map(cost_get, blocks[stop:heads[count - 1]], repeat(0)))
                out.append((LOOP, 0, {}))
                out.extend(visits[first:heads[o + keep // 2]])
                out.append((LOOP, 1, {}))           # the warm-up half is done
                out.extend(visits[heads[o + keep // 2]:stop])
                out.append((SKIP, (sum(map(cost_get, blocks[first:stop], repeat(0))), left_out), {}))
                out.extend(visits[heads[count - 1]:e0])
            i = e0
        out.extend(visits[i:])
        return out

    def _loop(self, b: int, run: list, out: list) -> None:
        n = len(run)
        key = (b, n)
        path = self._walks.get(key)
        if path is None:
            path = self._walks[key] = self.smap.walk(b, n)
        used = 0
        for k, first in path:
            mem: dict = {}
            for p, copies in self.copies.get(k, {}).items():
                for j, s in enumerate(copies):
                    it = first + j
                    if it < n:
                        payload = run[it][2].get(p)
                        if payload is not None:
                            mem[s] = payload
                            used += 1
            out.append((self.block_segment[k], run[min(first, n - 1)][1], mem))
        self.dropped += sum(len(v[2]) for v in run) - used


def _chain_run(visits: list, i: int, chain: tuple) -> tuple[list, int]:
    """The iterations of an unrolled chain loop (`UnrolledLoop.blocks`) from visits[i] on, each
    as one visit (header, its lanes, the accesses of all its blocks), and the index after them."""
    run = []
    m, n = len(chain), len(visits)
    while i + m <= n and all(visits[i + q][0] == chain[q] for q in range(m)):
        mem: dict = {}
        for q in range(m):
            mem.update(visits[i + q][2].items())
        run.append((chain[0], visits[i][1], mem))
        i += m
    return run, i


def kept_offset(round_: int, count: int, keep: int) -> int:
    """The first kept iteration of an activation of `count` iterations that keeps `keep` of them
    and its last (count > keep + 1), for the blocks of round `round_` of the launch (the blocks
    the whole GPU runs at once): the round's place in [0, count - 1 - keep], spread over the
    loop's range round after round (the golden-ratio sequence). The blocks of a round keep the
    same iterations, so those that run together still read what they share together (a GEMM's
    panels); rounds keep different ones, so a round does not find in the L2 what the round
    before it read just before, which the whole loops read a whole loop earlier. Kept at the start
    for every block, the kept iterations of every round read the same first part of what the loop
    walks (a GEMM's first K-slices of every panel: a footprint the loop's kept fraction of the
    real one), and the L2 hits where the whole loops miss."""
    return int(((round_ * GOLDEN) % 1.0) * (count - keep))


def _kinds(visits: list) -> list[int]:
    """[loads, stores, atomics] among the accesses of PTX visits, by payload form: a
    sector array (load), (sectors, byte masks) (store), (sectors, passes) (atomic); a bulk
    copy counts as a load; shared-memory wavefront counts and mbarrier operations move no L2
    traffic and are not counted. (Markers' payload dicts are empty.)"""
    payloads = list(chain.from_iterable(map(_VALUES, map(_MEM, visits))))
    tuples = list(compress(payloads, map(isinstance, payloads, repeat(tuple))))
    stores = sum(1 for p in tuples if p[1].dtype == np.uint32)
    moved = len(payloads) - sum(map(isinstance, payloads, repeat(int)))   # an mbarrier operation moves none either
    moved -= sum(map(isinstance, payloads, repeat(MbarrierAccess)))
    return [moved - len(tuples), stores, len(tuples) - stores]


def _l1_load(x) -> bool:
    """Whether SASS instruction `x` loads global or local memory through the L1 into registers."""
    return x.result == GLOBAL and not (x.is_store or x.is_atomic or x.async_copy or x.tma or x.mbarrier)


def combine_stores(order: list, mem: dict) -> None:
    """The stores of one SASS visit, in issue order (`order`: its stores and L1 loads): a
    sector an earlier store of the visit already writes is merged into it (its bytes OR-ed
    into that store's masks) and marked not to be sent again (the payload's third element,
    `send`), unless a load of that sector came between them: the load is served after the
    earlier store has left, and the later store leaves on its own (digit_histogram_local's
    read-increment-write of a local array, H200: L2 write sectors 1.5x the L1's store
    sectors, the far partition's copy and no merging, where merging across its loads would
    send 0.4x)."""
    first: dict = {}
    for s in order:
        p = mem.get(s)
        if p is None or isinstance(p, int):
            continue
        if not isinstance(p, tuple):                # a load: its sectors' stores have left
            if first and isinstance(p, np.ndarray):
                for sec in p.tolist():
                    first.pop(sec, None)
            continue
        sectors, masks = p[0], p[1]
        send = None
        for k, sec in enumerate(sectors.tolist()):
            prev = first.get(sec)
            if prev is None:
                first[sec] = (s, k)
                continue
            if send is None:
                send = np.ones(len(sectors), bool)
            send[k] = False
            mem[prev[0]][1][prev[1]] |= masks[k]
        if send is not None:
            mem[s] = (sectors, masks, send)


def merge(a, b):
    """Two accesses of one warp that one SASS instruction performs."""
    if isinstance(a, (MbarrierAccess, CopyPayload)) or isinstance(b, (MbarrierAccess, CopyPayload)):
        return a                                 # one mbarrier operation or bulk copy a warp instruction: the first
    if isinstance(a, CpAsyncPayload) or isinstance(b, CpAsyncPayload):     # a cp.async: sectors united, fills added
        fa, fb = (x if isinstance(x, CpAsyncPayload) else CpAsyncPayload(x, 0) for x in (a, b))
        return CpAsyncPayload(np.union1d(fa.sectors, fb.sectors), fa.wavefronts + fb.wavefronts,
                              fa.repeated + fb.repeated)
    if isinstance(a, int):
        return max(a, b)
    if isinstance(a, tuple):
        s = np.concatenate([a[0], b[0]])
        order = np.argsort(s, kind="stable")
        s = s[order]
        starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
        out = [s[starts]]
        for k in range(1, len(a)):               # store byte masks OR-ed; atomic lane and address counts added
            v = np.concatenate([a[k], b[k]])[order]
            out.append((np.bitwise_or if v.dtype == np.uint32 else np.add).reduceat(v, starts))
        return tuple(out)
    return np.union1d(a, b)
