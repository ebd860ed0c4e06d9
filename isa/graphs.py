"""Dominators and natural loops of a control-flow graph given as successor lists.

Used for PTX (`isa.cfg`) and SASS (`gpusim.frontend.sass.cfg`) alike: nodes are
0..n-1, `succs[v]` lists v's successors, node `entry` starts the graph.

- `dominators`: immediate dominators by the iterative algorithm of Cooper, Harvey
  and Kennedy, "A Simple, Fast Dominance Algorithm" (2001). Unreachable nodes get
  None; the entry is its own idom.
- `natural_loops`: for every back edge t -> h (h dominates t) the loop body is h plus
  every node that reaches t without passing h; loops with one header are merged
  (Aho, Lam, Sethi, Ullman, "Compilers", 2nd ed., section 9.6.6).
- `innermost_loop`: each node's innermost loop header (None outside loops).
"""
from __future__ import annotations


def dominators(succs: list[list[int]] | tuple, entry: int = 0) -> list[int | None]:
    n = len(succs)
    preds: list[list[int]] = [[] for _ in range(n)]
    for a in range(n):
        for b in succs[a]:
            preds[b].append(a)
    order: list[int] = []                       # post-order from the entry
    seen = [False] * n
    seen[entry] = True
    stack = [(entry, iter(succs[entry]))]
    while stack:
        node, it = stack[-1]
        for s in it:
            if not seen[s]:
                seen[s] = True
                stack.append((s, iter(succs[s])))
                break
        else:
            order.append(node)
            stack.pop()
    number = {v: i for i, v in enumerate(order)}
    idom: list[int | None] = [None] * n
    idom[entry] = entry

    def intersect(a: int, b: int) -> int:
        while a != b:
            while number[a] < number[b]:
                a = idom[a]
            while number[b] < number[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for v in reversed(order):
            if v == entry:
                continue
            new = None
            for p in preds[v]:
                if idom[p] is not None:
                    new = p if new is None else intersect(p, new)
            if new is not None and idom[v] != new:
                idom[v] = new
                changed = True
    return idom


def dominates(idom: list[int | None], a: int, b: int) -> bool:
    """Whether node `a` dominates node `b` (every node dominates itself)."""
    while True:
        if a == b:
            return True
        up = idom[b]
        if up is None or up == b:
            return False
        b = up


def natural_loops(succs: list[list[int]] | tuple, idom: list[int | None]) -> dict[int, frozenset[int]]:
    """Loop header -> the nodes of its loop (reachable nodes only)."""
    n = len(succs)
    preds: list[list[int]] = [[] for _ in range(n)]
    for a in range(n):
        for b in succs[a]:
            preds[b].append(a)
    loops: dict[int, set[int]] = {}
    for t in range(n):
        if idom[t] is None:
            continue
        for h in succs[t]:
            if dominates(idom, h, t):
                body = loops.setdefault(h, {h})
                work = [t]
                while work:
                    x = work.pop()
                    if x not in body:
                        body.add(x)
                        work.extend(p for p in preds[x] if idom[p] is not None)
    return {h: frozenset(b) for h, b in loops.items()}


def innermost_loop(n: int, loops: dict[int, frozenset[int]]) -> list[int | None]:
    """Each node's innermost loop header (the smallest loop containing it), or None."""
    out: list[int | None] = [None] * n
    for h, body in sorted(loops.items(), key=lambda kv: -len(kv[1])):
        for v in body:
            out[v] = h
    return out
