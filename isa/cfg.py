"""Basic blocks and immediate post-dominators of a kernel: where divergent warps
reconverge.

What is modelled: the control-flow graph of one `Kernel` over
`kernel.instructions` (labels are not instructions; a block is a half-open range of
instruction indices), and each block's immediate post-dominator (ipdom), the point
a SIMT stack-based executor reconverges a warp that diverged at the end of the block.

Block boundaries:
- every label starts a block (whether or not something branches to it), so
  `label_block[name]` is always the block that begins at that label;
- a block ends after `bra`, `ret`, `exit` and `trap` (guarded or not), and after
  every barrier (opcode `bar` or `barrier`, including `bar.red`, `bar.arrive`,
  `bar.warp.sync`): the executor suspends a warp there, so a barrier is always the
  last instruction of its block. `call` does not end a block (the callee returns).

Edges (`succs`) and `terminator`:
- unguarded `bra`: `(target,)`, 'branch'; guarded `bra`: `(target, fallthrough)`,
  'cond_branch';
- unguarded `ret`/`exit`/`trap`: `()`, 'exit'; guarded: `(fallthrough,)`,
  'cond_exit'. Both have `exits=True`, an edge to the virtual node `EXIT`;
- a barrier: `(next,)`, 'barrier'; anything else: `(next,)`, 'fallthrough'.
- Falling off the end of the body (no instruction after the block) is an implicit
  return: that edge goes to `EXIT` (`exits=True`) instead of into `succs`. A label
  with no instruction after it (NVVM's `$L__func_end0:`) gets an empty block
  (`start == end`) that exits.

Post-dominators are computed on the reverse graph rooted at `EXIT` with the
iterative algorithm of Cooper, Harvey and Kennedy, "A Simple, Fast Dominance
Algorithm" (2001). A block that cannot reach `EXIT` (inside an infinite loop) and a
block that cannot be reached from the entry block get ipdom `EXIT`; blocks that can
reach `EXIT` ignore paths into infinite loops (only paths to `EXIT` count).

Not modelled: indirect branches (`brx.idx`) and calls through registers are
rejected with an error; `call` is an ordinary instruction here.

Sources: PTX ISA 9.x, chapter 9 "Instruction Set", sections "Control Flow
Instructions" (`bra`, `call`, `ret`, `exit`, `trap`) and "Parallel Synchronization
and Communication Instructions" (`bar`, `barrier`); Cooper, Harvey, Kennedy (2001).
"""
from __future__ import annotations

from dataclasses import dataclass

from isa.errors import IsaError, PtxSyntaxError
from isa.program import Instruction, Kernel, Label, LabelRef

EXIT = -1   # virtual exit node id

_ENDS_EXIT = frozenset({"ret", "exit", "trap"})
_BARRIERS = frozenset({"bar", "barrier"})


@dataclass(frozen=True)
class BasicBlock:
    """A maximal straight-line run `kernel.instructions[start:end]` (see module docstring)."""
    index: int
    label: str | None
    start: int
    end: int
    succs: tuple[int, ...]
    exits: bool
    terminator: str            # 'branch', 'cond_branch', 'exit', 'cond_exit', 'barrier', 'fallthrough'


@dataclass(frozen=True)
class CFG:
    """Blocks in program order (block 0 is the entry), immediate post-dominators,
    label -> block, and instruction index -> block."""
    blocks: tuple[BasicBlock, ...]
    ipdom: tuple[int, ...]
    label_block: dict[str, int]
    block_of: tuple[int, ...]


def build_cfg(kernel: Kernel) -> CFG:
    """The control-flow graph of `kernel` (raises PtxSyntaxError for a branch to an
    undefined label, IsaError for control flow this model does not cover)."""
    starts, labels_at = _leaders(kernel)
    n_instr = len(kernel.instructions)
    instrs = kernel.instructions
    bounds = sorted(starts)
    label_block: dict[str, int] = {}
    ranges: list[tuple[int, int, str | None]] = []
    for b, s in enumerate(bounds):
        e = bounds[b + 1] if b + 1 < len(bounds) else n_instr
        names = labels_at.get(s, [])
        for name in names:
            label_block[name] = b
        ranges.append((s, e, names[0] if names else None))

    blocks = []
    for b, (s, e, label) in enumerate(ranges):
        nxt = b + 1 if e < n_instr else None           # None: falls off the end
        succs, exits, term = _edges(instrs[e - 1] if e > s else None, nxt, label_block, kernel)
        blocks.append(BasicBlock(b, label, s, e, succs, exits, term))

    block_of = [0] * n_instr
    for blk in blocks:
        for i in range(blk.start, blk.end):
            block_of[i] = blk.index
    return CFG(tuple(blocks), _ipdoms(blocks), label_block, tuple(block_of))


def _leaders(kernel: Kernel) -> tuple[set[int], dict[int, list[str]]]:
    """Instruction indices that start a block, and the labels at each index."""
    starts = {0}
    labels_at: dict[int, list[str]] = {}
    i = 0
    for s in kernel.body:
        if isinstance(s, Label):
            starts.add(i)
            labels_at.setdefault(i, []).append(s.name)
            continue
        i += 1
        op = s.opcode
        if op == "bra" or op in _ENDS_EXIT or op in _BARRIERS:
            starts.add(i)
        elif op == "brx":
            raise IsaError(f"indirect branch '{s.mnemonic}' at PTX line {s.ptx_line} in "
                           f"{kernel.name} is not supported by the CFG builder")
    n = len(kernel.instructions)
    if n not in labels_at:
        starts.discard(n)              # no empty block at the end unless a label is there
    return starts, labels_at


def _edges(last: Instruction | None, nxt: int | None, label_block: dict[str, int],
           kernel: Kernel) -> tuple[tuple[int, ...], bool, str]:
    fall = () if nxt is None else (nxt,)
    off_end = nxt is None
    if last is None:                                   # empty block at the end
        return (), True, "exit"
    op = last.opcode
    if op == "bra":
        targets = [o for o in last.operands if isinstance(o, LabelRef)]
        if len(targets) != 1:
            raise IsaError(f"'{last.mnemonic}' at PTX line {last.ptx_line} in {kernel.name} "
                           "has no label target")
        name = targets[0].name
        if name not in label_block:
            raise PtxSyntaxError(f"branch to undefined label {name} in {kernel.name}",
                                 last.ptx_line, name)
        t = label_block[name]
        if last.guard is None:
            return (t,), False, "branch"
        return (t, *fall), off_end, "cond_branch"
    if op in _ENDS_EXIT:
        if last.guard is None:
            return (), True, "exit"
        return fall, True, "cond_exit"
    return fall, off_end, "barrier" if op in _BARRIERS else "fallthrough"


def _ipdoms(blocks: list[BasicBlock]) -> tuple[int, ...]:
    """Cooper-Harvey-Kennedy on the reverse CFG; node `n` (= len(blocks)) is EXIT."""
    n = len(blocks)
    if n == 0:
        return ()
    preds: list[list[int]] = [[] for _ in range(n + 1)]     # forward predecessors
    for blk in blocks:
        for s in blk.succs:
            preds[s].append(blk.index)
        if blk.exits:
            preds[n].append(blk.index)
    # Post-order of the reverse graph from EXIT (iterative DFS over predecessors).
    order: list[int] = []
    seen = [False] * (n + 1)
    seen[n] = True
    stack = [(n, iter(preds[n]))]
    while stack:
        node, it = stack[-1]
        for p in it:
            if not seen[p]:
                seen[p] = True
                stack.append((p, iter(preds[p])))
                break
        else:
            order.append(node)
            stack.pop()
    rpo = order[::-1]
    number = {node: i for i, node in enumerate(order)}     # post-order number
    idom: list[int | None] = [None] * (n + 1)
    idom[n] = n

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
        for node in rpo[1:]:
            blk = blocks[node]
            new = None
            for s in (*blk.succs, *((n,) if blk.exits else ())):   # reverse-graph preds
                if idom[s] is None:
                    continue
                new = s if new is None else intersect(s, new)
            if new is not None and idom[node] != new:
                idom[node] = new
                changed = True
    reachable = _reachable(blocks)
    return tuple(EXIT if (d is None or d == n or not reachable[i]) else d
                 for i, d in enumerate(idom[:n]))


def _reachable(blocks: list[BasicBlock]) -> list[bool]:
    seen = [False] * len(blocks)
    seen[0] = True
    work = [0]
    while work:
        for s in blocks[work.pop()].succs:
            if not seen[s]:
                seen[s] = True
                work.append(s)
    return seen
