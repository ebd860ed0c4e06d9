"""Predicated-on threads per SASS instruction: Nsight Compute's
`smsp__thread_inst_executed_pred_on.sum`, the active threads whose guard predicate held.

A warp issues each SASS instruction to its active lanes (`smsp__thread_inst_executed`);
a guarded instruction (`@P0 IADD3 ...`, `@!P1 BRA ...`) does nothing in the lanes whose
predicate is false. ptxas turns a short branch into such code (if-conversion): both sides
are issued to every active lane, each under its own predicate, so the warp never
diverges and every lane is active, yet half of the lanes of each side do no work. The
active-lane count alone reads that as 100% SIMT efficiency; the predicated-on count
shows the 50%.

From what the functional core counted (`gpusim.functional.counters.Counters`: active
threads per PTX block, and per block ending in a conditional branch or exit the threads
that took it) and the static PTX -> SASS mapping (`mapping.py`), per guarded SASS
instruction:
- compiled from a PTX block other than the one whose visit issues it (ptxas predicated
  that block into its neighbour, or hoisted guarded code out of it): the threads that
  executed the origin block, at most the instruction's active threads;
- a branch or exit that leaves its region: the threads of the origin PTX block that
  went the way the SASS branch goes (its target's PTX block is the PTX branch's target,
  or its fall-through: ptxas may invert a branch), an `EXIT` the way to a `ret`;
- a branch inside a region (one ptxas added, e.g. around a division's slow path) or
  inside an unrolled loop: taken when the walk the model issues takes it, all active
  threads or none;
- anything else guarded (ptxas predication inside one PTX block, no PTX counterpart):
  all active threads, i.e. counted as on (the counters cannot tell).
Unguarded instructions: every active thread.

Not modelled: which lanes a ptxas-made predicate selects inside one PTX block (counted as
all); branches of ptxas-unrolled loops are all-or-none per pass, at the loop's average
active threads.
"""
from __future__ import annotations

import numpy as np

from gpusim.frontend.sass.cfg import is_guarded

CONTROL = frozenset({"BRA", "EXIT", "RET", "KILL", "BRX", "JMP", "JMX", "CALL", "BREAK", "BSSY", "BSYNC",
                     "WARPSYNC", "BPT", "YIELD"})


def pred_on_threads(smap, dk, thread_inst, block_warps, block_threads, loop_back, taken_threads) -> np.ndarray:
    """Predicated-on threads per SASS instruction of `smap` (a `mapping.SassMap`), given each
    instruction's active threads `thread_inst` (`SassMap.instruction_counts`) and the PTX
    counters (per PTX block of `dk`: warps, active threads, warps that took a one-block
    loop's back edge, threads that took its conditional branch or exit), all at one scale.
    The rules (module docstring) depend on the kernel alone and are found once (`_rules`);
    a launch applies them to its counts."""
    thr = np.asarray(thread_inst, np.float64)
    out = thr.copy()
    branches, pred_idx, pred_block = _rules(smap, dk)
    if len(pred_idx):                                  # guarded code from another PTX block: its threads
        out[pred_idx] = np.minimum(thr[pred_idx], np.asarray(block_threads, np.float64)[pred_block])
    unrolled_taken = _unrolled_branches(smap, block_warps, block_threads, loop_back) if smap.unrolled else {}
    for i, inside, share in branches:
        if not thr[i]:
            continue
        if i in unrolled_taken:
            out[i] = min(thr[i], unrolled_taken[i])
        elif inside is not None:
            out[i] = thr[i] if inside else 0.0
        elif share is not None:
            b, way = share
            taken = float(taken_threads[b])
            out[i] = min(thr[i], taken if way == 0 else float(block_threads[b]) - taken)
    return out


def _rules(smap, dk) -> tuple[list, np.ndarray, np.ndarray]:
    """The static part of `pred_on_threads` for `smap` and decoded kernel `dk`, kept on the map:
    (guarded BRA/EXIT: (instruction, inside its region: taken or not, None when it leaves it;
    (PTX block, 0 its taken threads / 1 the others) or None), guarded other instructions
    issued for another PTX block's code and that block)."""
    hit = smap.pred_rules.get(id(dk))
    if hit is not None and hit[0] is dk:
        return hit[1]
    ins = smap.listing.instructions
    ptx_block = dk.cfg.block_of
    exit_only = _exit_only(dk)
    position = {}                                     # SASS instruction -> (home, index in its region)
    for h, region in smap.regions.items():
        for k, i in enumerate(region):
            position.setdefault(i, (h, k))
    branches, pred_idx, pred_block = [], [], []
    for i, x in enumerate(ins):
        if not is_guarded(x):
            continue
        o = smap.origin[i]
        home = smap.home[smap.cfg.block_of[i]]
        if x.base in ("BRA", "EXIT"):
            inside = _region_branch(smap, ins, i, position)
            share = None if inside is not None or o is None else \
                _ptx_branch_way(smap, dk, ins, i, ptx_block[o], exit_only)
            branches.append((i, inside, share))
        elif x.base not in CONTROL and o is not None and home is not None and ptx_block[o] != home:
            pred_idx.append(i)
            pred_block.append(ptx_block[o])
    rules = (branches, np.array(pred_idx, np.int64), np.array(pred_block, np.int64))
    smap.pred_rules[id(dk)] = (dk, rules)
    return rules


def _exit_only(dk) -> set[int]:
    ins = dk.kernel.instructions
    return {b.index for b in dk.cfg.blocks if b.end > b.start
            and all(ins[i].opcode in ("ret", "exit") for i in range(b.start, b.end))}


def _region_branch(smap, ins, i: int, position) -> bool | None:
    """For a branch the model issues inside one region: whether the region's walk takes it
    (the next instruction issued is its target); None when it leaves the region."""
    at = position.get(i)
    if at is None or ins[i].base != "BRA" or not ins[i].target:
        return None
    h, k = at
    region = smap.regions[h]
    target = smap.listing.labels.get(ins[i].target)
    if target is None or smap.home[smap.cfg.block_of[target]] != h:
        return None                                   # to another PTX block: the PTX branch decides
    return k + 1 < len(region) and region[k + 1] == target


def _ptx_branch_way(smap, dk, ins, i: int, b: int, exit_only) -> tuple[int, int] | None:
    """(b, 0) when SASS branch `i` goes where the threads that took PTX block `b`'s conditional
    branch or exit go, (b, 1) where the others go; None when `b` ends otherwise or the SASS
    branch matches neither way."""
    blk = dk.blocks[b]
    if blk.terminator not in ("cond_branch", "cond_exit"):
        return None
    if blk.terminator == "cond_exit":
        return (b, 0) if ins[i].base == "EXIT" else (b, 1)
    # succs[0] is the branch target (the taken threads), succs[1] the fall-through
    if ins[i].base == "EXIT":
        hits = [w for w, s in enumerate(blk.succs[:2]) if _leads_to(dk, s, exit_only)]
        return (b, hits[0]) if len(hits) == 1 else None
    target = smap.listing.labels.get(ins[i].target) if ins[i].target else None
    if target is None:
        return None
    th = smap.home[smap.cfg.block_of[target]]
    hits = [w for w, s in enumerate(blk.succs[:2]) if th in _issuing(smap, dk, s)]
    return (b, hits[0]) if len(hits) == 1 else None


def _issuing(smap, dk, s: int) -> set[int]:
    """PTX blocks whose SASS a warp reaching PTX block `s` issues first: `s`, or, where
    ptxas merged `s` away (no SASS of its own), the blocks it leads to unconditionally."""
    out, seen = set(), set()
    todo = [s]
    while todo:
        b = todo.pop()
        if b in seen:
            continue
        seen.add(b)
        out.add(b)
        if b not in smap.regions and b not in smap.unrolled and len(dk.blocks[b].succs) == 1:
            todo.extend(dk.blocks[b].succs)
    return out


def _leads_to(dk, s: int, exit_only: set[int]) -> bool:
    seen = set()
    while s not in seen:
        seen.add(s)
        if s in exit_only:
            return True
        succs = dk.blocks[s].succs
        if len(succs) != 1 or dk.blocks[s].last - dk.blocks[s].first > 1:
            return False
        s = succs[0]
    return False


def _unrolled_branches(smap, block_warps, block_threads, loop_back) -> dict[int, float]:
    """Predicated-on threads of the guarded branches of ptxas-unrolled loops, over the walks
    `SassMap.instruction_counts` issues (the same trip counts and weights): a branch is on
    when the walk's next block is its target, and the last block's when it leaves the loop."""
    out: dict[int, float] = {}
    blocks = smap.cfg.blocks
    ins = smap.listing.instructions
    labels = smap.listing.labels
    for h in smap.unrolled:
        visits = float(block_warps[h])
        if not visits:
            continue
        entries = visits - (float(loop_back[h]) if loop_back is not None else 0.0)
        entries = max(1.0, min(entries, visits))
        mean = visits / entries
        lo = int(mean)
        lanes = float(block_threads[h]) / visits
        for trip, weight in ((lo, 1.0 - (mean - lo)), (lo + 1, mean - lo)):
            if weight <= 0 or trip <= 0:
                continue
            path = [k for k, _ in smap.walk(h, trip)]
            for n, k in enumerate(path):
                i = blocks[k].end - 1
                if ins[i].base != "BRA" or not is_guarded(ins[i]):
                    continue
                target = smap.cfg.block_of[labels[ins[i].target]] if ins[i].target in labels else None
                nxt = path[n + 1] if n + 1 < len(path) else None
                on = nxt == target if nxt is not None else (target is None or smap.home[target] != h)
                out[i] = out.get(i, 0.0) + (entries * weight * lanes if on else 0.0)
    return out
