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
    kind: str          # 'divergence' | 'partial-warp' | 'bank' | 'uncoalesced' | 'atomics' | 'local'
    score: float       # wasted slots or transactions, comparable across kinds
    headline: str      # "line 14: 32-way bank conflict"
    detail: str        # "31 extra wavefronts per warp access (1,984 in all): lanes of a warp hit ..."
    fix: str           # "pad the shared array's rows (e.g. [32][33]) ..."
    short: str = ""    # the numbers of `detail`, for a repeat of the same kind

    @property
    def sentence(self) -> str:
        return f"{self.headline}: {self.detail}; {self.fix}"

    def repeat_of(self, first: int) -> str:
        """The sentence when an earlier line (`first`) already had this kind of issue."""
        return f"{self.headline}: {self.short or self.detail}; same cause and fix as line {first}."


@dataclass(frozen=True)
class LineFlags:
    """Which cells of a line's row are bad."""
    divergent: bool = False
    conflicted: bool = False
    uncoalesced: bool = False
    local: bool = False


@dataclass(frozen=True)
class Access:
    """The global traffic of one instruction and op (or of a whole line when there
    is no per-instruction data)."""
    op: str            # 'ld', 'st', 'atom', 'red' or '' (unknown)
    requests: int
    sectors: int
    lanes: float       # active lanes per request, on average
    ideal: float       # sectors a full-warp contiguous, aligned access of the same width needs


OP_NAMES = {"ld": "load", "st": "store", "atom": "atomic", "red": "reduction"}


def accesses(result, ls: LineStats) -> list[Access]:
    """The line's global accesses. A full warp of `access_bytes`-wide lanes,
    contiguous and aligned, covers `access_bytes` sectors of 32 B (4 for float32, 8
    for float64): that is the ideal, even for partial warps (which need fewer), so
    that masked-off lanes never make an access look uncoalesced."""
    table = getattr(result, "table", None) or {}
    infos = getattr(result, "infos", None) or []
    out = []
    for i in ls.instructions:
        width = (getattr(infos[i], "access_bytes", 0) if i < len(infos) else 0) or 4
        inst = int(np.asarray(table["inst"])[i]) if "inst" in table else 0
        lanes = int(np.asarray(table["thread_inst"])[i]) / inst if inst and "thread_inst" in table else 32.0
        for o in GLOBAL_OPS:
            if f"global_{o}_requests" not in table:
                continue
            req = int(np.asarray(table[f"global_{o}_requests"])[i])
            if req:
                sec = int(np.asarray(table[f"global_{o}_sectors"])[i])
                out.append(Access(o, req, sec, lanes, float(req * width)))
    if not out and ls.global_requests:                  # no per-instruction data: full warps of 4-byte lanes
        out.append(Access("", ls.global_requests, ls.global_sectors, 32.0, 4.0 * ls.global_requests))
    return out


def ideal_sectors(result, ls: LineStats) -> float:
    """Sectors the line's global requests would need if every warp access were
    contiguous and aligned."""
    return sum(a.ideal for a in accesses(result, ls))


def local_of(ls: LineStats) -> tuple[int, int]:
    m = ls.metrics
    req = sum(int(m.get(f"l1tex__t_requests_pipe_lsu_mem_local_op_{o}.sum", 0)) for o in ("ld", "st"))
    sec = sum(int(m.get(f"l1tex__t_sectors_pipe_lsu_mem_local_op_{o}.sum", 0)) for o in ("ld", "st"))
    return req, sec


def flags(result, ls: LineStats) -> LineFlags:
    return LineFlags(
        divergent=ls.warp_instructions > 0 and ls.simt_efficiency < 1.0,
        conflicted=ls.bank_conflicts > 0,
        uncoalesced=ls.global_requests > 0 and ls.global_sectors > ideal_sectors(result, ls) + 1e-9,
        local=local_of(ls)[0] > 0,
    )


def _n(x: float) -> str:
    """A count that may be fractional (averages over partial warps): 4, 3.3, 16.7."""
    return f"{x:.0f}" if abs(x - round(x)) < 0.05 else f"{x:.1f}"


def threads_per_block(result) -> int:
    return int(np.prod(getattr(result, "block", (1, 1, 1))))


def simt_issue(result, ls: LineStats) -> Issue | None:
    if not ls.warp_instructions or ls.simt_efficiency >= 1.0:
        return None
    n, eff, tpb = ls.line, ls.simt_efficiency, threads_per_block(result)
    idle = (32 * ls.warp_instructions - ls.metrics["smsp__thread_inst_executed.sum"]) / 32
    head = f"line {n}: SIMT efficiency {eff:.0%}"
    warps = -(-tpb // 32)
    if tpb % 32 and abs(eff - tpb / (32 * warps)) < 1e-3:      # exactly what the partial last warp costs
        return Issue(n, "partial-warp", idle, head,
                     f"the block has {tpb} threads, not a multiple of 32, so the last warp of each block runs with "
                     f"{tpb % 32} of 32 lanes", "use a multiple of 32 threads per block.",
                     f"the partial last warp of each block")
    detail = (f"lanes of a warp take different branches or loop trip counts here, so the warp runs each path with "
              f"the other lanes masked off (on average {eff * 32:.1f} of 32 lanes do work)")
    if tpb % 32:
        detail += f"; the last warp of each block is also partial ({tpb} threads per block)"
    return Issue(n, "divergence", idle, head, detail,
                 "make branches and trip counts uniform within each group of 32 consecutive threads "
                 "(e.g. branch on threadIdx.x // 32), or move work out of the divergent region.",
                 f"{eff * 32:.1f} of 32 lanes do work")


def bank_issue(ls: LineStats) -> Issue | None:
    if ls.bank_conflicts <= 0:
        return None
    requests = ls.shared_wavefronts - ls.bank_conflicts
    ways = ls.shared_wavefronts / requests if requests else float(ls.shared_wavefronts)
    way = f"{ways:.0f}-way" if abs(ways - round(ways)) < 0.05 else f"{ways:.1f}-way (average)"
    short = f"{ways - 1:.0f} extra wavefronts per warp access ({ls.bank_conflicts:,} in all)"
    return Issue(ls.line, "bank", float(ls.bank_conflicts), f"line {ls.line}: {way} bank conflict",
                 f"{short}: lanes of a warp hit different words of the same bank",
                 "pad the shared array's rows (e.g. [32][33]) or change the index so the 32 lanes land in "
                 "32 different banks.", short)


def coalescing_issue(result, ls: LineStats) -> Issue | None:
    if not ls.global_requests:
        return None
    extra = ls.global_sectors - ideal_sectors(result, ls)
    worst = max(accesses(result, ls), key=lambda a: a.sectors - a.ideal)
    if extra <= 1e-9 or worst.sectors <= worst.ideal:
        return None
    spr, want = worst.sectors / worst.requests, worst.ideal / worst.requests
    what = f" (global {OP_NAMES[worst.op]})" if worst.op else ""
    head = f"line {ls.line}: {_n(spr)} sectors per request{what} where {_n(want)} would do"
    short = f"{extra:,.0f} extra sectors"
    if worst.op in ("atom", "red"):
        return Issue(ls.line, "atomics", extra, head,
                     f"the warp's atomics land on scattered, data-dependent addresses, moving {short}",
                     "accumulate per block in shared memory first (privatization, as in histogram_shared), "
                     "then issue one global atomic per block and address.", short)
    apart = ("at least 32 B apart (each lane its own sector)" if spr >= worst.lanes - 0.5
             else f"about {spr * 32 / worst.lanes:.0f} B apart (or scattered)")
    return Issue(ls.line, "uncoalesced", extra, head,
                 f"uncoalesced global access, consecutive threads touch addresses {apart}, moving {short}",
                 "make threadIdx.x index the contiguous (last) dimension, or stage the data through shared "
                 "memory.", short)


def local_issue(ls: LineStats) -> Issue | None:
    lreq, lsec = local_of(ls)
    if not lreq:
        return None
    short = f"{lreq:,} requests ({lsec:,} sectors)"
    return Issue(ls.line, "local", float(lsec), f"line {ls.line}: local memory",
                 f"{short} to per-thread local memory (an indexed cuda.local.array or a register spill), "
                 f"which lives in DRAM behind the L1",
                 "index it with constants (fully unrolled loops) so it stays in registers.", short)


def line_issues(result) -> list[Issue]:
    """Every wasteful line's worst issue, worst first (ties: by line number)."""
    found: list[Issue] = []
    for ls in result.lines.values():
        cands = [i for i in (simt_issue(result, ls), bank_issue(ls), coalescing_issue(result, ls), local_issue(ls))
                 if i is not None]
        if cands:
            found.append(max(cands, key=lambda c: c.score))
    found.sort(key=lambda c: (-c.score, c.line))
    return found
