"""Per-line diagnosis: which source lines waste work, and one plain-English sentence
for each.

Four kinds of waste, each scored in the same rough unit (extra issue slots or
memory transactions) so lines can be ranked against each other:
- divergence: SIMT efficiency below 100%; score = idle lane slots / 32.
- bank conflicts: shared wavefronts beyond one per request; score = conflicts.
- uncoalesced global access: sectors beyond what a contiguous, aligned warp access
  of the same width needs (`access_bytes` sectors per request: 4 for float32,
  8 for float64); score = extra sectors.
- local memory: any traffic (spills, indexed cuda.local.array); score = sectors.

Not modelled: why a line diverges (which branch), or the addresses behind a strided
access; the sentences infer a stride from sectors per request, which is exact for
a constant stride from an aligned base and a lower bound otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusim.result import LineStats

GLOBAL_OPS = ("ld", "st", "atom", "red")


@dataclass(frozen=True)
class Issue:
    line: int
    kind: str          # 'divergence' | 'bank' | 'uncoalesced' | 'local'
    score: float       # wasted slots or transactions, comparable across kinds
    what: str          # "line 14: 32-way bank conflict: 31 extra wavefronts per warp access (...)"
    fix: str           # "pad the shared array's rows (e.g. [32][33]) ..."

    @property
    def sentence(self) -> str:
        return f"{self.what}; {self.fix}"


@dataclass(frozen=True)
class LineFlags:
    """Which cells of a line's row are bad."""
    divergent: bool = False
    conflicted: bool = False
    uncoalesced: bool = False
    local: bool = False


def ideal_sectors(result, ls: LineStats) -> float:
    """Sectors a line's global requests would need if every warp access were
    contiguous and aligned: sum over its instructions of requests x access bytes
    (a full warp of 4-byte lanes covers 128 B = 4 sectors of 32 B)."""
    table = getattr(result, "table", None) or {}
    infos = getattr(result, "infos", None) or []
    total = 0.0
    for i in ls.instructions:
        req = sum(int(np.asarray(table[f"global_{o}_requests"])[i]) for o in GLOBAL_OPS
                  if f"global_{o}_requests" in table)
        if not req:
            continue
        width = getattr(infos[i], "access_bytes", 0) if i < len(infos) else 0
        total += req * (width or 4)
    if total == 0.0:                       # no per-instruction data: assume 4-byte lanes
        total = 4.0 * ls.global_requests
    return total


def local_of(ls: LineStats) -> tuple[int, int]:
    m = ls.metrics
    req = sum(int(m.get(f"l1tex__t_requests_pipe_lsu_mem_local_op_{o}.sum", 0)) for o in ("ld", "st"))
    sec = sum(int(m.get(f"l1tex__t_sectors_pipe_lsu_mem_local_op_{o}.sum", 0)) for o in ("ld", "st"))
    return req, sec


def flags(result, ls: LineStats) -> LineFlags:
    ideal = ideal_sectors(result, ls)
    return LineFlags(
        divergent=ls.warp_instructions > 0 and ls.simt_efficiency < 1.0,
        conflicted=ls.bank_conflicts > 0,
        uncoalesced=ls.global_requests > 0 and ls.global_sectors > ideal + 1e-9,
        local=local_of(ls)[0] > 0,
    )


def threads_per_block(result) -> int:
    b = getattr(result, "block", (1, 1, 1))
    return int(np.prod(b))


def _ways(x: float) -> str:
    return f"{x:.0f}-way" if abs(x - round(x)) < 0.05 else f"{x:.1f}-way (average)"


def line_issues(result) -> list[Issue]:
    """Every wasteful line's worst issue, worst first (ties: by line number)."""
    partial_warp = threads_per_block(result) % 32 != 0
    found: list[Issue] = []
    for ls in result.lines.values():
        cands: list[Issue] = []
        n = ls.line
        if ls.warp_instructions and ls.simt_efficiency < 1.0:
            eff = ls.simt_efficiency
            idle = (32 * ls.warp_instructions - ls.metrics["smsp__thread_inst_executed.sum"]) / 32
            why = ("lanes of a warp take different branches or loop trip counts here, so the warp runs "
                   "each path with the other lanes masked off")
            if partial_warp:
                why += (f" (also, {threads_per_block(result)} threads per block is not a multiple of 32: "
                        "the last warp of each block is partial)")
            cands.append(Issue(n, "divergence", idle,
                               f"line {n}: SIMT efficiency {eff:.0%}: {why}",
                               f"on average {eff * 32:.1f} of 32 lanes do work per warp instruction."))
        if ls.bank_conflicts > 0:
            requests = ls.shared_wavefronts - ls.bank_conflicts
            ways = ls.shared_wavefronts / requests if requests else float(ls.shared_wavefronts)
            cands.append(Issue(n, "bank", float(ls.bank_conflicts),
                               f"line {n}: {_ways(ways)} bank conflict: {ways - 1:.0f} extra wavefronts per warp "
                               f"access ({ls.bank_conflicts:,} in all), lanes of a warp hit different words of "
                               f"the same bank",
                               "pad the shared array's rows (e.g. [32][33]) or change the index so the 32 lanes "
                               "land in 32 different banks."))
        if ls.global_requests:
            ideal = ideal_sectors(result, ls)
            extra = ls.global_sectors - ideal
            if extra > 1e-9:
                spr = ls.sectors_per_request
                want = ideal / ls.global_requests
                apart = ("at least 32 B apart (every lane its own sector)" if spr >= 31.5
                         else f"about {spr:.0f} B apart (or scattered)")
                cands.append(Issue(n, "uncoalesced", extra,
                                   f"line {n}: {spr:.0f} sectors per request where {want:.0f} would do: uncoalesced "
                                   f"global access, consecutive threads touch addresses {apart}, moving "
                                   f"{extra:,.0f} extra sectors",
                                   "make threadIdx.x index the contiguous (last) dimension, or stage the data "
                                   "through shared memory."))
        lreq, lsec = local_of(ls)
        if lreq:
            cands.append(Issue(n, "local", float(lsec),
                               f"line {n}: local memory: {lreq:,} requests ({lsec:,} sectors) to per-thread local "
                               f"memory (an indexed cuda.local.array or a register spill), which lives in DRAM "
                               f"behind the L1",
                               "index it with constants (fully unrolled loops) to keep it in registers."))
        if cands:
            found.append(max(cands, key=lambda c: c.score))
    found.sort(key=lambda c: (-c.score, c.line))
    return found
