"""SASS basic blocks, dominators and loops of one entry.

Blocks start at the first instruction, at every labelled instruction (a branch, call
or BSSY target) and after every branch, exit, return or indirect jump. Edges:
- `BRA` with no guard (or `@PT`): its target; with a guard: target and fall-through;
  a `BRA` whose target label is unknown has no target edge;
- `EXIT` / `RET`: none with no guard, fall-through with one (a predicated exit);
- `BRX`, `JMX`, `JMP` (indirect): none; recorded in `indirect`;
- anything else, `CALL` included (the callee returns), falls through.
The entry's own code (`function is None`) is the graph walked from block 0; internal
subroutines (`function` set, reached by `CALL`) are blocks of their own, found through
`subroutines` (label -> first instruction index).

Sources: CUDA Binary Utilities, "Instruction Set Reference" (BRA, BSSY, BSYNC, CALL,
RET, EXIT, BRX, JMX).
"""
from __future__ import annotations

from dataclasses import dataclass

from isa.graphs import dominators, innermost_loop, natural_loops

_ENDS = frozenset({"BRA", "EXIT", "RET", "BRX", "JMX", "JMP", "KILL"})
_INDIRECT = frozenset({"BRX", "JMX", "JMP"})


@dataclass(frozen=True)
class SassBlock:
    index: int
    start: int                        # first instruction index
    end: int                          # one past the last
    succs: tuple[int, ...]            # successor blocks (branch target first)
    function: str | None              # internal subroutine, None for the entry's code


@dataclass(frozen=True)
class SassCFG:
    blocks: tuple[SassBlock, ...]
    block_of: tuple[int, ...]                 # instruction index -> block
    idom: tuple[int | None, ...]              # None: unreachable from the entry
    loops: dict[int, frozenset[int]]          # loop header block -> its blocks
    innermost: tuple[int | None, ...]         # block -> innermost loop header
    subroutines: dict[str, int]               # subroutine label -> first instruction index
    indirect: tuple[int, ...]                 # instruction indices of indirect jumps

    def reachable(self, b: int) -> bool:
        return self.idom[b] is not None


def is_guarded(ins) -> bool:
    """A guard that can be false (`@PT` always holds)."""
    return ins.predicate is not None and ins.predicate not in ("@PT", "@UPT")


def build_cfg(listing) -> SassCFG:
    """The CFG of a `listing.Listing`."""
    ins = listing.instructions
    labels = listing.labels
    n = len(ins)
    leaders = {0} if n else set()
    leaders.update(i for i in labels.values() if i < n)
    for i, x in enumerate(ins):
        if x.base in _ENDS and i + 1 < n:
            leaders.add(i + 1)
        if i + 1 < n and ins[i + 1].function != x.function:
            leaders.add(i + 1)
    starts = sorted(leaders)
    bounds = list(zip(starts, starts[1:] + [n]))
    block_at = {s: k for k, (s, _) in enumerate(bounds)}
    blocks = []
    indirect = []
    for k, (s, e) in enumerate(bounds):
        last = ins[e - 1]
        fall = (k + 1,) if k + 1 < len(bounds) and ins[e].function == last.function else ()
        base = last.base
        if base == "BRA":
            tgt = labels.get(last.target) if last.target else None
            to = (block_at[tgt],) if tgt is not None and tgt in block_at else ()
            if last.predicate == "@!PT":
                succs = fall
            else:
                succs = to + fall if is_guarded(last) or "," in last.operands.split("`")[0] else to
        elif base in ("EXIT", "RET", "KILL"):
            succs = fall if is_guarded(last) else ()
        elif base in _INDIRECT:
            indirect.append(e - 1)
            succs = ()
        else:
            succs = fall
        blocks.append(SassBlock(k, s, e, tuple(dict.fromkeys(succs)), last.function))
    block_of = [0] * n
    for b in blocks:
        for i in range(b.start, b.end):
            block_of[i] = b.index
    succ_lists = [list(b.succs) for b in blocks]
    idom = dominators(succ_lists, 0) if blocks else []
    loops = natural_loops(succ_lists, idom) if blocks else {}
    subs = {lab: i for lab, i in labels.items() if i < n and ins[i].function is not None
            and (i == 0 or ins[i - 1].function != ins[i].function)}
    return SassCFG(tuple(blocks), tuple(block_of), tuple(idom), loops, tuple(innermost_loop(len(blocks), loops)),
                   subs, tuple(indirect))
