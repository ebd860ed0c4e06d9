"""Loops ptxas unrolled (a unit of the SASS map, `mapping.py`): which PTX loops ptxas unrolled, one
block or a chain of blocks that barriers split (`_chain`, `_unrolled_chains`), the content of each of
their SASS blocks, how many PTX iterations one pass executes (`_unrolled_loops`, counted by the
instructions ptxas compiles one for one, `_anchors`), blocks ptxas peeled out of them (`_peeled`) and
where they are entered (`_entries`). The walk of an activation is `SassMap.walk`'s; the module
docstring of mapping.py says how the pieces fit."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from gpusim.frontend.sass.cfg import SassCFG
from gpusim.frontend.sass.homes import _STRUCTURAL, _PtxFacts
from gpusim.frontend.sass.payloads import MEMORY, does, is_access, is_mbarrier, is_tensor_op, is_wmma_access

_MMA = frozenset({"HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA"})
_FP_ARITHMETIC = frozenset({"FADD", "FMUL", "FFMA", "FMNMX", "HADD2", "HMUL2", "HFMA2", "HMNMX2", "FADD32I", "FMUL32I",
                            "FFMA32I"})   # placed by ptxas, not compiled from a PTX line


@dataclass(frozen=True)
class UnrolledLoop:
    """A PTX loop ptxas unrolled (one block, or a chain of blocks split by barriers): its SASS
    blocks and their content."""
    header: int                              # the PTX block (the chain's first)
    content: dict[int, int]                  # SASS block -> PTX iterations one pass executes
    entries: tuple[int, ...]                 # SASS blocks entered from outside the loop
    blocks: tuple[int, ...] = ()             # a chain's PTX blocks in execution order, header first; () for one block


def _peeled(cfg: SassCFG, ins, origin, home, ptx: _PtxFacts, unrolled: dict) -> dict[int, int]:
    """SASS blocks outside every SASS loop that hold nothing but iterations of an unrolled PTX
    loop (ptxas peels a remainder's last iteration out of the loop, after the remainder's
    pairs: a 32 x 4 block's transpose round, `validate/block_turnover_probe.py`): block ->
    the loop's header, so that its walk takes them (`SassMap.walk`). `_homes` gives such a
    block the home of the code it leads into, where its accesses found no PTX visit to carry
    them and went untimed."""
    out = {}
    for blk in cfg.blocks:
        k = blk.index
        if not cfg.reachable(k) or cfg.innermost[k] is not None or home[k] in unrolled:
            continue
        owners = {ptx.block_of[origin[i]] for i in range(blk.start, blk.end)
                  if origin[i] is not None and ins[i].base not in _STRUCTURAL}
        loops = [h for h, loop in unrolled.items() if owners and owners <= set(loop.blocks or (h,))]
        if len(loops) == 1 and any(ins[i].base in MEMORY for i in range(blk.start, blk.end)):
            out[k] = loops[0]
    return out


def _entries(cfg: SassCFG, home, h: int) -> list[int]:
    mine = [b.index for b in cfg.blocks if home[b.index] == h]
    inside = set(mine)
    entered = {s for b in cfg.blocks if home[b.index] != h and cfg.reachable(b.index) for s in b.succs} & inside
    return sorted(entered) or mine[:1]


def _anchors(dk, h: int) -> list[int]:
    """The PTX instructions of block h that ptxas compiles one for one, so that k SASS
    copies of one mean k iterations: memory instructions (not wmma's, several SASS each),
    else 32-bit and half float arithmetic. (64-bit integer arithmetic expands into several
    SASS instructions and tells nothing.)"""
    blk = dk.blocks[h]
    infos = dk.infos[blk.first:blk.last]
    mem = [i.index for i in infos if is_access(i) and i.space not in ("param", "const") and not is_mbarrier(i)
           and not is_wmma_access(i)]
    if mem:
        return mem
    mma = [i.index for i in infos if is_tensor_op(i)]
    if mma:
        return mma
    return [i.index for i in infos if i.kind == "alu" and i.unit in ("fp32", "fp16")
            and i.mnemonic.split(".")[0] in ("add", "sub", "mul", "fma", "mad", "max", "min", "neg", "abs")]


def _unrolled_loops(cfg: SassCFG, ins, origin, home, ptx: _PtxFacts, dk,
                    chains: dict[int, tuple[int, ...]]) -> dict[int, UnrolledLoop]:
    out = {}
    for h in [*ptx.self_loops, *sorted(chains)]:
        mine = [b.index for b in cfg.blocks if home[b.index] == h]
        if not mine:
            continue
        chain = chains.get(h, ())
        anchors = set(_anchors(dk, h)) if not chain else {i for b in chain for i in _anchors(dk, b)
                                                           if is_access(dk.infos[i])}
        if not anchors:
            continue
        first = dk.infos[next(iter(anchors))]
        mem, mma = is_access(first), is_tensor_op(first)
        content = {}
        for k in mine:
            blk = cfg.blocks[k]
            c = Counter(origin[i] for i in range(blk.start, blk.end)
                        if origin[i] in anchors and (ins[i].base in MEMORY and does(ins[i].base, dk.infos[origin[i]])
                                                     if mem else ins[i].base in _MMA if mma
                                                     else ins[i].base in _FP_ARITHMETIC))
            content[k] = sorted(c.values())[len(c) // 2] if c else 0
        if any(c > 1 and cfg.innermost[k] is not None for k, c in content.items()):
            out[h] = UnrolledLoop(h, content, tuple(_entries(cfg, home, h)), chain)
    return out


def _chain(ptx: _PtxFacts, dk, h: int) -> tuple[int, ...] | None:
    """Loop h's PTX blocks in execution order when they form one straight chain (each block's
    only successor the next, as a barrier splits a loop's body; the last branching back to h or
    out), with no loop inside: such a loop is one block split, and its unrolled SASS is walked
    pass by pass like a one-block loop's. None for any other loop (a branch or a break inside)."""
    body = ptx.loops[h]
    if any(ptx.innermost[b] != h for b in body):
        return None
    blocks = dk.cfg.blocks
    chain = [h]
    while True:
        succs = blocks[chain[-1]].succs
        inside = [x for x in succs if x in body]
        if inside == [h]:
            break                                    # the latch: back to the header (or out)
        if len(succs) != 1 or len(inside) != 1 or inside[0] in chain:
            return None
        chain.append(inside[0])
    return tuple(chain) if len(chain) == len(body) and len(chain) > 1 else None


def _unrolled_chains(cfg: SassCFG, ins, origin, home, ptx: _PtxFacts, dk) -> dict[int, int]:
    """PTX loops of several blocks whose SASS holds more than one copy of their memory
    instructions in one block (ptxas unrolled them): header -> the most copies of one. Those
    that form a chain (`_chain`) are walked; any other is issued once a visit of each of its
    blocks, as if not unrolled, so its instructions are counted and timed up to that many times
    over (`SassMap.unrolled_unhandled`; the timing engine warns)."""
    out = {}
    for h, body in ptx.loops.items():
        if h in ptx.self_loops:
            continue
        anchors = {i for b in body for i in _anchors(dk, b)
                   if is_access(dk.infos[i]) and ptx.innermost[ptx.block_of[i]] == h}
        if not anchors:
            continue
        most = 0
        for blk in cfg.blocks:
            if home[blk.index] not in body or cfg.innermost[blk.index] is None:
                continue
            c = Counter(origin[i] for i in range(blk.start, blk.end)
                        if origin[i] in anchors and ins[i].base in MEMORY and does(ins[i].base, dk.infos[origin[i]]))
            if c:
                most = max(most, max(c.values()))
        if most > 1:
            out[h] = most
    return out

