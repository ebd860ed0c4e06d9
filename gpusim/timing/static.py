"""What the timing model needs to know about each SASS instruction before it runs, and
the issue segments a warp's executed PTX path turns into.

For every SASS instruction of a kernel (`gpusim.frontend.sass`): its pipe, how its
result becomes available (the pipe's fixed latency, the MIO path of shared memory and
shuffles, or the L1TEX path of global/local memory and atomics), which registers it
writes and reads (small integers, for the scoreboard), and whether it is a CTA barrier.
No hardware numbers live here (they come from the GPUSpec).

Segments (`IssueProgram.segments`) are what one SASS visit issues: the region of a PTX
block (`SassMap.regions`), or one SASS block of a loop ptxas unrolled
(`SassMap.unrolled`), see `issue_stream.py`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# How a result becomes ready; also names the stall reason of a warp waiting on it
# (Nsight Compute warp states): fixed latency -> 'wait', shared/MIO -> 'short_scoreboard',
# L1TEX (global, local, atomics) -> 'long_scoreboard'.
FIXED, SHARED, GLOBAL = 0, 1, 2
DEP_STALL = {FIXED: "wait", SHARED: "short_scoreboard", GLOBAL: "long_scoreboard"}


@dataclass(frozen=True, slots=True)
class StaticInstr:
    index: int                      # SASS instruction index (stall attribution, payload key)
    unit: str                       # pipe
    result: int                     # FIXED / SHARED / GLOBAL
    dsts: tuple[int, ...]
    srcs: tuple[int, ...]
    is_store: bool
    is_atomic: bool
    is_barrier: bool


@dataclass(frozen=True)
class IssueProgram:
    """A kernel's SASS as the SM issues it."""
    segments: tuple[tuple[StaticInstr, ...], ...]
    region_segment: dict[int, int]          # PTX block -> segment of its region
    block_segment: dict[int, int]           # SASS block of an unrolled loop -> its segment
    owner: np.ndarray                       # SASS instruction -> PTX instruction its stalls are reported on
    n_sass: int


def issue_program(smap, decoded, classify) -> IssueProgram:
    """Segments for a `SassMap` of `decoded` (the functional core's kernel);
    `classify(instr, ptx_info) -> StaticInstr fields` is the architecture's opcode table."""
    ins = smap.listing.instructions
    infos = decoded.infos
    statics = []
    for i, x in enumerate(ins):
        o = smap.origin[i]
        statics.append(classify(i, x, infos[o] if o is not None else None))
    segments: list[tuple[StaticInstr, ...]] = []
    region_segment = {}
    for h, region in smap.regions.items():
        region_segment[h] = len(segments)
        segments.append(tuple(statics[i] for i in region))
    block_segment = {}
    blocks = smap.cfg.blocks
    for h, loop in smap.unrolled.items():
        for k in loop.content:
            block_segment[k] = len(segments)
            segments.append(tuple(statics[i] for i in range(blocks[k].start, blocks[k].end)))
    return IssueProgram(tuple(segments), region_segment, block_segment, _owners(smap, decoded), len(ins))


def _owners(smap, decoded) -> np.ndarray:
    """The PTX instruction each SASS instruction's stalls are reported on: its origin;
    for a subroutine or an instruction without one, the first instruction of the PTX
    block whose region issues it."""
    n = len(smap.listing.instructions)
    owner = np.array([o if o is not None else -1 for o in smap.origin], dtype=np.int64)
    for h, region in smap.regions.items():
        first = decoded.blocks[h].first
        for i in region:
            if owner[i] < 0:
                owner[i] = first
    for h in smap.unrolled:
        first = decoded.blocks[h].first
        owner[(owner < 0) & (np.array([smap.home[smap.cfg.block_of[i]] == h for i in range(n)]))] = first
    owner[owner < 0] = 0
    return owner


# ---------------------------------------------------------------------------- provisional opcode facts
# (replaced by gpusim.frontend.sass.opcodes / operands when they land)
import re as _re

_REG = _re.compile(r"(?<![\w.])(U?R\d+|U?P\d)(?:\.(64|128))?")
_NO_DEST = frozenset({"STG", "STS", "STL", "ST", "RED", "REDG", "BAR", "BRA", "EXIT", "RET", "CALL", "BSYNC",
                      "WARPSYNC", "MEMBAR", "FENCE", "ERRBAR", "CCTL", "DEPBAR", "NOP", "BPT", "YIELD", "KILL",
                      "STSM", "REDAS", "SYNCS", "NANOSLEEP"})
_SHARED_OPS = frozenset({"LDS", "STS", "ATOMS", "LDSM", "STSM", "SHFL", "VOTE", "MATCH", "REDUX", "S2R"})
_GLOBAL_OPS = frozenset({"LDG", "STG", "LD", "ST", "LDL", "STL", "ATOM", "ATOMG", "RED", "REDG"})


def _slot(tok: str) -> int:
    if tok.startswith("UR"):
        return 256 + int(tok[2:])
    if tok.startswith("UP"):
        return 328 + int(tok[2:])
    if tok.startswith("R"):
        return int(tok[1:])
    return 320 + int(tok[1:])


def _registers(x) -> tuple[tuple[int, ...], tuple[int, ...]]:
    ops = [o.strip() for o in x.operands.split(",")] if x.operands else []
    nd = 0 if x.base in _NO_DEST or not ops else (2 if x.base.endswith("SETP") or x.base == "PLOP3" else 1)
    wide = 2 if (".64" in x.opcode or ".WIDE" in x.opcode or x.base.startswith("D")) else \
        (4 if ".128" in x.opcode else 1)
    dsts, srcs = [], []
    for k, op in enumerate(ops):
        for m in _REG.finditer(op):
            base = _slot(m.group(1))
            n = (2 if m.group(2) == "64" else 4) if m.group(2) else (wide if m.group(1)[0] in "RU" and
                                                                      not m.group(1).startswith("UP") else 1)
            regs = list(range(base, base + n)) if base < 256 else [base]
            (dsts if k < nd else srcs).extend(regs)
    if x.predicate and x.predicate not in ("@PT", "@UPT"):
        srcs.append(_slot(x.predicate.lstrip("@!")))
    return tuple(dict.fromkeys(dsts)), tuple(dict.fromkeys(srcs))


def provisional_classify(i: int, x, ptx_info) -> StaticInstr:
    from gpusim.frontend.sass import op_class
    base = x.base
    space = ptx_info.space if ptx_info is not None and ptx_info.kind == "mem" else None
    if base in _SHARED_OPS or (base in ("LD", "ST", "ATOM", "RED") and space == "shared"):
        result = SHARED
    elif base in _GLOBAL_OPS:
        result = GLOBAL
    else:
        result = FIXED
    dsts, srcs = _registers(x)
    return StaticInstr(index=i, unit=op_class(x.opcode), result=result, dsts=dsts, srcs=srcs,
                       is_store=base in ("STG", "STS", "STL", "ST", "RED", "REDG", "ATOM", "ATOMG", "ATOMS"),
                       is_atomic=base in ("ATOM", "ATOMG", "ATOMS", "RED", "REDG"),
                       is_barrier=base == "BAR" and ".ARV" not in x.opcode)
