"""Which SASS a warp issues for the PTX basic blocks it executes.

The functional core executes PTX, warp by warp; the GPU issues the SASS ptxas made
of it (other instructions, other counts, other pipes). `ptxas -lineinfo` records for
every SASS instruction the PTX line it was compiled from (`listing.py`), so each SASS
instruction has an *origin*: a PTX instruction, hence a PTX basic block. The mapping
built here is static (once per kernel); the timing model and the counters apply it to
each warp's executed PTX path.

**Home of a SASS block** (`homes.py`). Every SASS basic block reachable from the entry
gets one PTX block, its *home*: the SASS block is issued once each time a warp executes
its home. The home is chosen by loop level first (code ptxas hoisted out of a loop counts
with the preheader), then by the PTX terminator the block's branch was compiled from, then
by where most of its instructions come from; `homes.py` gives the rules. A PTX block may
be home to no SASS block (a branch ptxas predicated away, merged into its neighbour) and
then issues nothing of its own: its instructions are inside the neighbour's SASS, issued
under the neighbour's active mask, as on the GPU.

**Region of a PTX block.** What one visit issues: starting at the home's entry block
(the first of its SASS blocks entered from outside), the SASS blocks homed there, in
control-flow order. A branch between two of them is a branch ptxas made (no PTX
counterpart): the walk avoids a side that calls an internal slow-path subroutine
(`FCHK` fails only for special operands), else takes the fall-through. The same holds
where that branch ends the block before the region: ptxas lays out `@!P BRA fast;
CALL slowpath; fast:` after a division's FCHK or a square root's range test, so the
call block and the fast path are both entered from outside, the call block first; the
entry is the first one whose straight run calls no slow path. Where ptxas scheduled the
SASS of PTX blocks that follow one another without a branch (split only by labels, such
as Triton's `$L__tmp` debug labels) across the split, a block's SASS comes in pieces
between its neighbours' on one straight line: the region goes on with each later piece
reached through blocks of one successor each. A `CALL` to an
internal subroutine (64-bit division and remainder, ...) inlines the subroutine's
instructions, along its fall-through path, up to `RET`.

**Loops ptxas unrolls.** When a one-block PTX loop H has SASS blocks whose body holds
k copies of its work (its memory instructions, else its arithmetic), ptxas unrolled
it: the *content* of a SASS block is how many PTX iterations one pass executes (k for
the unrolled body, 1 for the remainder loop, 0 for guards). A run of n consecutive
visits of H (one loop activation) is issued as `walk(H, n)`: from the entry whose
content fits, take the successor with the largest content that still fits the
iterations left, and leave the loop when none are left. The j-th copy of a PTX memory
instruction in a pass takes the j-th iteration's addresses.

**Memory payloads** (`payloads.py`): a PTX memory instruction's per-visit addresses go to
the SASS memory instruction compiled from it, issued in one region.

Counters (`instruction_counts`): a SASS instruction executes as often as its region's
home is visited, with that visit's active threads (Nsight's
`smsp__thread_inst_executed` counts active threads whatever the guard predicate).

A PTX loop of several blocks that form one straight chain (barriers split its body: each
block's only successor the next, the last branching back or out) is one block split: its
SASS blocks are homed at its header and walked the same way, an iteration's accesses those of
all its blocks (`unrolled._chain`; the unrolled loops are found in unrolled.py).

A SASS block outside every SASS loop that holds nothing but iterations of an unrolled loop
(ptxas peels a remainder's last iteration out: four a pass, then two, then one) is that loop's
too (`unrolled._peeled`), and a walk enters where it can take all its iterations (a guard picks the
way in by the trip count): a one-round block of `validate/block_turnover_probe.py`'s 32 x 4
round issued nothing of its round before (21.7 us against the H200's 144).

Not modelled: which way a data-dependent branch ptxas added goes (the fast path is
assumed, e.g. `FCHK` passing), ptxas unrolling of other PTX loops of several blocks (a
branch inside; their SASS is issued per visit, as if not unrolled, so such a loop counts and
times up to its unroll factor over: `unrolled_unhandled` finds them and the timing engine
warns, naming the loop's line), indirect jumps.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpusim.frontend.sass.cfg import SassCFG, build_cfg
from gpusim.frontend.sass.homes import _homes, _match_loops, _origins, _PtxFacts
from gpusim.frontend.sass.payloads import place_payloads
from gpusim.frontend.sass.unrolled import UnrolledLoop, _chain, _entries, _peeled, _unrolled_chains, _unrolled_loops

_WALK_LIMIT = 100_000


@dataclass
class SassMap:
    """The static PTX -> SASS mapping of one kernel (see module docstring)."""
    listing: object
    cfg: SassCFG
    origin: tuple[int | None, ...]           # SASS instruction -> PTX instruction index
    home: tuple[int | None, ...]             # SASS block -> PTX block (None: unreachable)
    regions: dict[int, tuple[int, ...]]      # PTX block -> SASS instructions one visit issues
    unrolled: dict[int, UnrolledLoop]        # PTX block -> its unrolled SASS loop
    payload_target: dict[int, int]           # PTX memory instruction -> SASS instruction
    payload_home: dict[int, int]             # PTX memory instruction -> PTX block whose visit issues it
    payload_back: dict[int, bool] = field(default_factory=dict)
    # True: the home's visit comes before the memory instruction's own (it dominates it);
    # False: after (the origin block leads into the home)
    copies: dict[int, dict[int, tuple[int, ...]]] = field(default_factory=dict)
    # unrolled loops: SASS block -> {PTX memory instruction: its SASS copies in pass order}
    unmatched: tuple[int, ...] = ()          # PTX memory instructions whose payload has no SASS instruction
    ptx_loops: dict[int, frozenset[int]] = field(default_factory=dict)   # PTX loop header -> its blocks
    unrolled_member: dict[int, int] = field(default_factory=dict)
    # PTX block -> the unrolled loop (header) whose walk issues its SASS (a one-block loop: itself)
    unrolled_unhandled: dict[int, int] = field(default_factory=dict)
    # PTX loops of several blocks (a barrier or a branch inside) that ptxas unrolled: header -> copies of
    # their work in one pass of the SASS body; issued once a visit, as if not unrolled (module docstring)
    counter_classes: dict = field(default_factory=dict, repr=False, compare=False)
    # compute capability -> each SASS instruction's counter classes (opcodes.classify), filled on first use
    pred_rules: dict = field(default_factory=dict, repr=False, compare=False)
    # id of a decoded kernel -> (it, predication's static rules for it); "regions" -> instruction_counts'
    # (instruction, block) pairs; filled on first use

    # ------------------------------------------------------------------ unrolled loops
    def walk(self, header: int, n: int) -> list[tuple[int, int]]:
        """The SASS blocks one activation of `n` iterations of unrolled loop `header`
        issues, as (SASS block, index of the first iteration it executes)."""
        loop = self.unrolled[header]
        content = loop.content
        fits = [e for e in loop.entries if content[e] <= n]
        order = sorted(fits or loop.entries, key=lambda e: (-content[e], e))
        best: list[tuple[int, int]] = []
        for k in order:                              # the preferred entry whose walk takes all n (ptxas's
            path, left = self._walk_from(header, k, n)   # guard picks the way in by the trip count)
            if left == 0:
                return path
            if not best:
                best = path
        return best

    def _walk_from(self, header: int, k: int, n: int) -> tuple[list[tuple[int, int]], int]:
        """`walk` from entry block k: the path, and the iterations it could not take."""
        content = self.unrolled[header].content
        blocks = self.cfg.blocks
        home = self.home
        left = n
        path: list[tuple[int, int]] = []
        idle: set[int] = set()                       # content-0 blocks since the last consumption
        for _ in range(_WALK_LIMIT):
            c = min(content[k], left)
            path.append((k, n - left))
            left -= c
            if c:
                idle.clear()
            else:
                idle.add(k)
            inside = [s for s in blocks[k].succs if home[s] == header]
            if left == 0 and len(inside) < len(blocks[k].succs):
                break                                # done: leave the loop
            if left > 0:
                work = [s for s in inside if 0 < content[s] <= left]
                if work:
                    k = max(work, key=lambda s: (content[s], -s))
                    continue
            rest = [s for s in inside if content[s] == 0 and s not in idle]
            if not rest:
                break
            k = rest[-1] if left == 0 else rest[0]
        return path, left

    # ------------------------------------------------------------------ counters
    def instruction_counts(self, block_warps, block_threads, loop_back=None) -> tuple[np.ndarray, np.ndarray]:
        """(warp instructions, thread instructions) per SASS instruction, from the PTX
        blocks' warp visits and active threads; `loop_back[b]` = warps that took one-block
        loop b's back edge (activations = visits - back edges) for unrolled loops."""
        n = len(self.listing.instructions)
        if "regions" not in self.pred_rules:              # (SASS instruction, PTX block) of every region, in order
            pairs = [(i, b) for b, region in self.regions.items() for i in region]
            self.pred_rules["regions"] = (np.array([i for i, _ in pairs], np.int64),
                                          np.array([b for _, b in pairs], np.int64))
        idx, blk = self.pred_rules["regions"]
        # each region's visits and threads added to its instructions, in the regions' order (bincount
        # adds in input order: the same sums as the loop over regions)
        inst = np.bincount(idx, weights=np.asarray(block_warps, np.float64)[blk], minlength=n)
        thr = np.bincount(idx, weights=np.asarray(block_threads, np.float64)[blk], minlength=n)
        blocks = self.cfg.blocks
        for h, loop in self.unrolled.items():
            visits = float(block_warps[h])
            if not visits:
                continue
            entries = visits - (float(loop_back[h]) if loop_back is not None else 0.0)
            entries = max(1.0, min(entries, visits))
            mean = visits / entries
            lo = int(mean)
            frac = mean - lo
            lanes = float(block_threads[h]) / visits
            for trip, weight in ((lo, 1.0 - frac), (lo + 1, frac)):
                if weight <= 0 or trip <= 0:
                    continue
                for k, _ in self.walk(h, trip):
                    for i in range(blocks[k].start, blocks[k].end):
                        inst[i] += entries * weight
                        thr[i] += entries * weight * lanes
        return inst, thr


# ---------------------------------------------------------------------------- building
def build_map(listing, decoded) -> SassMap:
    """The mapping for a `listing.Listing` of the entry that `decoded` (the functional
    core's `DecodedKernel`) executes."""
    cfg = build_cfg(listing)
    ins = listing.instructions
    ptx = _PtxFacts(decoded)
    origin = _origins(ins, decoded)
    sass_loop_to_ptx = _match_loops(cfg, ins, origin, ptx)
    home = _homes(cfg, ins, origin, ptx, sass_loop_to_ptx)
    unhandled = _unrolled_chains(cfg, ins, origin, home, ptx, decoded)
    chains = {h: c for h in unhandled if (c := _chain(ptx, decoded, h)) is not None}
    homed = home
    for h, chain in chains.items():                  # the chain's SASS is issued by its header's walk
        members = set(chain)
        home = [h if x in members else x for x in home]
    unrolled = _unrolled_loops(cfg, ins, origin, home, ptx, decoded, chains)
    peeled = _peeled(cfg, ins, origin, home, ptx, unrolled)
    if peeled:                                       # iterations ptxas peeled out of an unrolled loop: its walk's
        home = [peeled.get(k, x) for k, x in enumerate(home)]
        unrolled = _unrolled_loops(cfg, ins, origin, home, ptx, decoded, chains)
    for h, chain in chains.items():
        if h not in unrolled:                        # no pass of it holds several iterations: its blocks' own SASS
            members = set(chain)
            home = [x if homed[k] not in members else homed[k] for k, x in enumerate(home)]
    member = {b: h for h, loop in unrolled.items() for b in (loop.blocks or (h,))}
    regions = {}
    for h in sorted({x for x in home if x is not None}):
        if h not in unrolled:
            regions[h] = tuple(_region(cfg, ins, home, h))
    m = SassMap(listing, cfg, tuple(origin), tuple(home), regions, unrolled, {}, {}, ptx_loops=ptx.loops,
                unrolled_member=member,
                unrolled_unhandled={h: k for h, k in unhandled.items() if h not in unrolled})
    place_payloads(m, ins, decoded, ptx)
    return m




def _calls_slow_path(cfg: SassCFG, ins, home, k: int, h: int) -> bool:
    """Whether the straight run of h's blocks from SASS block k calls a slow-path subroutine."""
    seen = set()
    while k not in seen and home[k] == h:
        seen.add(k)
        blk = cfg.blocks[k]
        if any(ins[i].base == "CALL" and ins[i].target and "slowpath" in ins[i].target
               for i in range(blk.start, blk.end)):
            return True
        nxt = [s for s in blk.succs if home[s] == h]
        if len(nxt) != 1:
            return False
        k = nxt[0]
    return False


def _subroutine(cfg: SassCFG, ins, call: int) -> list[int]:
    """The instructions a `CALL` runs: the callee's fall-through path up to `RET`."""
    start = cfg.subroutines.get(ins[call].target)
    out: list[int] = []
    if start is None:
        return out
    k = cfg.block_of[start]
    seen = set()
    while k not in seen:
        seen.add(k)
        blk = cfg.blocks[k]
        out.extend(range(blk.start, blk.end))
        if not blk.succs:
            break
        k = blk.succs[-1]                            # fall-through where there is a choice
    return out


def _region(cfg: SassCFG, ins, home, h: int) -> list[int]:
    entries = _entries(cfg, home, h)
    k = next((e for e in entries if not _calls_slow_path(cfg, ins, home, e, h)), entries[0])
    out: list[int] = []
    seen: set[int] = set()
    while k is not None:
        last = k
        while k is not None and k not in seen and home[k] == h:
            seen.add(k)
            last = k
            blk = cfg.blocks[k]
            for i in range(blk.start, blk.end):
                out.append(i)
                if ins[i].base == "CALL":
                    out.extend(_subroutine(cfg, ins, i))
            nxt = [s for s in blk.succs if home[s] == h and s not in seen]
            if len(nxt) > 1:
                nxt = [s for s in nxt if not _calls_slow_path(cfg, ins, home, s, h)] or nxt
            k = nxt[-1] if nxt else None             # fall-through is listed last
        k = _interleaved_next(cfg, home, h, last, seen)
    return out


def _interleaved_next(cfg: SassCFG, home, h: int, k: int, seen: set) -> int | None:
    """The next SASS block homed at h on the straight line (blocks of one successor each) after
    block k, past blocks homed elsewhere, or None. PTX blocks that follow one another without a
    branch (split only by labels: Triton's `$L__tmp` debug labels) are one straight run of SASS,
    and ptxas schedules their instructions across the split: h's SASS comes in several pieces
    between its neighbours' (triton_attention's online softmax: 28 of its 34 MUFU.EX2 an
    iteration in a second piece of their block), all executed whenever the first is."""
    for _ in range(len(cfg.blocks)):
        succs = cfg.blocks[k].succs
        if len(succs) != 1 or succs[0] in seen:
            return None
        k = succs[0]
        if home[k] == h:
            return k
    return None
