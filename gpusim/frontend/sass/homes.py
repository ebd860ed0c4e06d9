"""The home of each SASS basic block: the PTX basic block whose visits issue it (the first
stage of the PTX -> SASS mapping, `mapping.py`).

Each SASS instruction has an *origin* (`_origins`): the PTX instruction of the line
`ptxas -lineinfo` records for it (`listing.py`), hence a PTX basic block. SASS loops are
matched to PTX loops (`_match_loops`), then every reachable SASS block gets its home
(`_homes`), from the PTX dominators and loops (`_PtxFacts`).

**Home of a SASS block.** Every SASS basic block reachable from the entry gets one
PTX block, its *home*: the SASS block is issued once each time a warp executes its
home. Choice, in order:
1. Loop level: SASS loops are matched to PTX loops (the loop of the PTX branch the
   back edge was compiled from, else the innermost PTX loop most of the loop's own
   instructions come from); only origins in the PTX loop matching the SASS block's
   innermost loop are candidates. Code ptxas hoisted out of a loop (invariant address
   arithmetic) therefore counts with the preheader, and code it recomputes inside a
   loop (rematerialised addresses) with the loop.
2. Terminator anchor: a block ending in a branch or exit compiled from the PTX block
   X's own terminator has home X, if X dominates the other candidates (instructions
   ptxas hoisted from the blocks X branches to do not move the block's home).
3. Otherwise the candidate with most instructions, predicated ones (if-converted
   branches) weighing a quarter; ties go to the candidate that dominates the others.
4. A block with no candidate (a `BSYNC` at a join, code from outer loop levels)
   belongs to the code it leads into: the home of its only successor, else of its
   only predecessor, else of the block before it.
5. An exit block (`ret` alone) that one PTX block P falls into belongs to P: ptxas
   turned the other branches to it into predicated `EXIT`s, so the lanes that took
   them never reach it.
A PTX block may be home to no SASS block (a branch ptxas predicated away, merged into
its neighbour) and then issues nothing of its own: its instructions are inside the
neighbour's SASS, issued under the neighbour's active mask, as on the GPU.
"""
from __future__ import annotations

from collections import Counter

from gpusim.frontend.sass.cfg import SassCFG, is_guarded
from isa.graphs import dominates, dominators, innermost_loop, natural_loops

_PTX_TERMINATORS = frozenset({"bra", "ret", "exit"})
_STRUCTURAL = frozenset({"BSSY", "BSYNC", "WARPSYNC", "NOP", "BMOV"})
_PREDICATED_WEIGHT = 0.25


class _PtxFacts:
    """Dominators and loops of the PTX CFG, and where each instruction lives."""

    def __init__(self, dk):
        blocks = dk.cfg.blocks
        self.block_of = dk.cfg.block_of
        succs = [list(b.succs) for b in blocks]
        self.idom = dominators(succs, 0)
        self.loops = natural_loops(succs, self.idom)
        self.innermost = innermost_loop(len(blocks), self.loops)
        self.terminator_of = {b.end - 1: b.index for b in blocks
                              if b.end > b.start and dk.kernel.instructions[b.end - 1].opcode in _PTX_TERMINATORS}
        self.self_loops = {b.index for b in blocks if b.index in b.succs and self.loops.get(b.index) == {b.index}}
        ins = dk.kernel.instructions
        self.exit_only = {b.index for b in blocks if b.end > b.start
                          and all(ins[i].opcode in ("ret", "exit") for i in range(b.start, b.end))}


def _origins(ins, dk) -> list[int | None]:
    """PTX instruction index per SASS instruction. A PTX line inlined at several call
    sites names several instructions: the one nearest the previous origin wins."""
    by_line: dict[int, list[int]] = {}
    for info in dk.infos:
        if info.ptx_line:
            by_line.setdefault(info.ptx_line, []).append(info.index)
    out: list[int | None] = []
    prev = 0
    for x in ins:
        cands = by_line.get(x.ptx_line) if x.ptx_line is not None else None
        if not cands:
            out.append(None)
            continue
        o = cands[0] if len(cands) == 1 else min(cands, key=lambda c: abs(c - prev))
        out.append(o)
        prev = o
    return out


def _match_loops(cfg: SassCFG, ins, origin, ptx: _PtxFacts) -> dict[int, int | None]:
    """SASS loop header -> its PTX loop: the loop of the PTX branch its back edge was
    compiled from, else the innermost PTX loop most of its own instructions come from
    (instructions ptxas recomputes inside a loop come from outside any loop and do not
    vote)."""
    out = {}
    for h, body in cfg.loops.items():
        latch = None
        for b in sorted(body):
            blk = cfg.blocks[b]
            o = origin[blk.end - 1]
            if h in blk.succs and ins[blk.end - 1].base == "BRA" and o is not None:
                latch = ptx.innermost[ptx.block_of[o]]
        if latch is not None:
            out[h] = latch
            continue
        votes: Counter = Counter()
        for b in body:
            if cfg.innermost[b] != h:
                continue                              # a nested loop's block
            blk = cfg.blocks[b]
            for i in range(blk.start, blk.end):
                o = origin[i]
                if o is not None and ptx.innermost[ptx.block_of[o]] is not None:
                    votes[ptx.innermost[ptx.block_of[o]]] += 1
        out[h] = votes.most_common(1)[0][0] if votes else None
    return out


def _homes(cfg: SassCFG, ins, origin, ptx: _PtxFacts, loop_map) -> list[int | None]:
    n = len(cfg.blocks)
    home: list[int | None] = [None] * n
    for blk in cfg.blocks:
        k = blk.index
        if not cfg.reachable(k):
            continue
        want = loop_map.get(cfg.innermost[k]) if cfg.innermost[k] is not None else None
        weight: Counter = Counter()
        for i in range(blk.start, blk.end):
            o = origin[i]
            if o is None or ins[i].base in _STRUCTURAL:
                continue
            b = ptx.block_of[o]
            if ptx.innermost[b] == want:
                weight[b] += _PREDICATED_WEIGHT if is_guarded(ins[i]) else 1.0
        if not weight:
            continue
        last = origin[blk.end - 1]
        anchor = ptx.terminator_of.get(last) if ins[blk.end - 1].base in ("BRA", "EXIT", "RET") else None
        if anchor in weight and all(dominates(ptx.idom, anchor, b) for b in weight):
            home[k] = anchor
            continue
        top = max(weight.values())
        best = [b for b, w in weight.items() if w == top]
        home[k] = min(best, key=lambda b: (-sum(dominates(ptx.idom, b, c) for c in best), b))
    preds: list[list[int]] = [[] for _ in range(n)]
    for blk in cfg.blocks:
        for s in blk.succs:
            preds[s].append(blk.index)
    todo = [k for k in range(n) if cfg.reachable(k) and home[k] is None]
    while todo:                                      # a join (BSYNC) belongs to the code it leads into
        left = []
        for k in todo:
            succ = [s for s in cfg.blocks[k].succs if cfg.reachable(s)]
            pred = [q for q in preds[k] if cfg.reachable(q)]
            if len(succ) == 1 and home[succ[0]] is not None:
                home[k] = home[succ[0]]
            elif len(succ) != 1 and len(pred) == 1 and home[pred[0]] is not None:
                home[k] = home[pred[0]]
            else:
                left.append(k)
        if len(left) == len(todo):                   # no progress: the block before it in the layout
            k = left.pop(0)
            j = k - 1
            while j >= 0 and (home[j] is None or not cfg.reachable(j)):
                j -= 1
            home[k] = home[j] if j >= 0 else 0
        todo = left
    for k in range(n):           # an exit block only one PTX block falls into: ptxas turned the
        if home[k] in ptx.exit_only:          # other branches to it into predicated EXITs
            owners = {home[q] for q in preds[k] if cfg.reachable(q)}
            if len(owners) == 1 and None not in owners and owners != {home[k]}:
                home[k] = owners.pop()
    return home
