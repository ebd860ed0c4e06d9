"""Per-line diagnosis: which source lines waste material work, one plain-English
sentence each, ranked by what the waste costs.

One unit for every kind, SM-cycles: the cycles of one SM's resource the waste occupies,
priced from the result's GPU preset (`costs_for`; H100 in brackets). An issue slot (a
warp instruction) is 1 / (sub-partitions x issue width) [0.25]; a shared wavefront is
`sm.shared_wavefront_cycles` [1]; a 32-B sector is its share of the L2 bandwidth per
SM, sector_bytes x sm_count / (slices x read bytes per cycle per slice) [0.71] (stores
hold a slice about twice as long: not priced separately); each sector of an atomic
request holds the L2's atomic units sm_count / (slices x atomic sector operations per
cycle per slice) [0.99]. These are
throughput costs: what the waste adds while that resource is the bottleneck (one
wavefront per SM-cycle puts bank_conflict_demo's 'large' size at stride 32, 32
wavefronts per access, at 4.11 ms on an H200; its docstring's measurement: 4.15 ms).

Kinds, scores and thresholds (MATERIAL_SHARE = 2% of the kernel's use of the resource):
- divergence: idle lanes beyond what the block's partial last warp explains, / 32, as
  issue slots; flagged below SIMT_MIN = 95% SIMT efficiency (of what the block shape
  allows) and at >= 2% of the kernel's warp instructions. So a bounds check masking
  the ragged end of the data (99.7%, "31.9 of 32 lanes") is not flagged, and a tree
  reduction's last five steps in 256-thread blocks (~3% of the issue slots) are.
- partial-warp: one item for the launch (line 0) when threads per block is not a
  multiple of 32: every block's last warp's idle lanes; >= 2% of the warp instructions.
- bank: extra wavefronts (conflicts); >= 2% of the kernel's shared wavefronts.
- uncoalesced: sectors beyond the contiguous, aligned ideal of a full warp of the same
  width (`access_bytes` sectors per request: 4 for float32, 8 for float64) over the
  accesses moving >= UNCOALESCED_RATIO = 1.5x it (stride 2 is 2x; a misaligned
  full-warp row, 1.25x, is not flagged); >= 2% of the kernel's global sectors.
- atomics: global atomics and reductions, every sector operation plus sectors beyond the
  ideal (privatisation removes most of them); flagged at ATOMICS_SHARE = 10% of the
  kernel's SM-cycles, so a privatised histogram's final merge is not.
- shared-atomics: shared atomics' wavefronts beyond one per request (lanes on one
  address or bank take turns); >= 2% of the kernel's shared wavefronts.
- local: every local-memory sector (spills, indexed cuda.local.array); >= 2% of the
  kernel's SM-cycles (all the resources above, summed).
Never flagged: a function's `def` line (decorators and signature: the parameter loads
and Numba's initialisation of local arrays land there) and a line of nothing but
prologue instructions (PROLOGUE_OPS: parameter loads, address conversion, register
and special-register moves).

Not modelled: why a line diverges (which branch); contention between warps on the
same addresses (the counters see one request at a time); the addresses behind a
strided access: the sentences infer a stride from sectors per request, exact for a
constant stride from an aligned base and a lower bound otherwise.
"""
from __future__ import annotations

import ast
import linecache
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from gpusim.report import fmt
from gpusim.result import LineStats

GLOBAL_OPS = ("ld", "st", "atom", "red")
MATERIAL_SHARE = 0.02      # a waste is flagged when it is at least this share of its resource's use
ATOMICS_SHARE = 0.10       # global atomics are flagged when they are at least this share of the kernel's cost
SIMT_MIN = 0.95            # divergence: SIMT efficiency below this share of what the block shape allows
UNCOALESCED_RATIO = 1.5    # an access is uncoalesced at this many times the ideal sectors
PROLOGUE_OPS = ("ld.param", "cvta", "mov")
OP_NAMES = {"ld": "load", "st": "store", "atom": "atomic", "red": "reduction"}


@dataclass(frozen=True)
class Costs:
    """SM-cycles one unit of each resource costs (see the module docstring); the defaults
    are the calibrated h100 preset's (gpusim/specs/calibrated/h100.toml)."""
    issue_slot: float = 0.25
    wavefront: float = 1.0
    sector: float = 32 * 132 / (80 * 74.2)
    atomic_sector: float = 132 / (80 * 1.676)


@lru_cache(maxsize=32)
def costs_for(gpu: str) -> Costs:
    """The Costs of the preset named `gpu` ('h100', 'h200+l2.slices=64' falls back to
    'h200'); the H100 numbers for a name that does not resolve."""
    from gpusim.specs import resolve
    for name in (gpu, str(gpu).split("+")[0]):
        try:
            s = resolve(name, [])
        except Exception:                        # unknown or hand-made names: try the next, then the default
            continue
        return Costs(issue_slot=1.0 / (s.sm.sub_partitions * s.sm.issue_width_warp_inst_per_cycle),
                     wavefront=float(s.sm.shared_wavefront_cycles),
                     sector=s.l2.sector_bytes * s.sm_count / (s.l2.slices * s.l2.bandwidth_bytes_per_cycle_per_slice),
                     atomic_sector=s.sm_count / (s.l2.slices * s.l2.atomic_ops_per_cycle_per_slice))
    return Costs()


@dataclass(frozen=True)
class Issue:
    line: int          # source line; 0 for the launch as a whole (partial-warp)
    kind: str          # 'divergence' | 'partial-warp' | 'bank' | 'uncoalesced' | 'atomics' | 'shared-atomics' | 'local'
    score: float       # SM-cycles the waste costs, comparable across kinds
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


def local_of(ls: LineStats) -> tuple[int, int]:
    m = ls.metrics
    req = sum(int(m.get(f"l1tex__t_requests_pipe_lsu_mem_local_op_{o}.sum", 0)) for o in ("ld", "st"))
    sec = sum(int(m.get(f"l1tex__t_sectors_pipe_lsu_mem_local_op_{o}.sum", 0)) for o in ("ld", "st"))
    return req, sec


def threads_per_block(result) -> int:
    return int(np.prod(getattr(result, "block", (1, 1, 1))))


def _n(x: float) -> str:
    """A count that may be fractional (averages over partial warps): 4, 3.3, 16.7."""
    return f"{x:.0f}" if abs(x - round(x)) < 0.05 else f"{x:.1f}"


# ---------------------------------------------------------------- which lines may be flagged

def def_lines(path: str) -> frozenset[int]:
    """Lines of `path` that hold a function's decorators and signature (up to its first
    body statement)."""
    text = "".join(linecache.getlines(path)) if path else ""
    return _def_lines(text)


@lru_cache(maxsize=64)
def _def_lines(text: str) -> frozenset[int]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return frozenset(n for n, s in enumerate(text.splitlines(), 1) if s.lstrip().startswith(("def ", "@")))
    out: set[int] = set()
    for f in ast.walk(tree):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([f.lineno] + [d.lineno for d in f.decorator_list])
            out.update(range(start, max(f.lineno, f.body[0].lineno - 1) + 1))
    return frozenset(out)


def is_prologue(result, ls: LineStats) -> bool:
    """A `def` line, or a line of nothing but parameter loads and special-register reads."""
    if ls.line in def_lines(getattr(result, "source_file", "")):
        return True
    infos = getattr(result, "infos", None) or []
    names = [getattr(infos[i], "mnemonic", "") for i in ls.instructions if i < len(infos)]
    return bool(names) and all(n.startswith(PROLOGUE_OPS) for n in names)


# ---------------------------------------------------------------- the analysis

@dataclass(frozen=True)
class Totals:
    """The kernel-wide use of each resource, the bases of the MATERIAL_SHARE tests."""
    warp_instructions: int
    shared_wavefronts: int
    global_sectors: int
    cost: float                # SM-cycles over every resource


def totals_of(result, c: Costs) -> Totals:
    m = result.metrics
    t = fmt.totals(m)
    atomic_sectors = sum(a.sectors for ls in result.lines.values() for a in accesses(result, ls)
                         if a.op in ("atom", "red"))
    shared = t.shared_wavefronts + int(m.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum", 0))
    cost = (t.warp_instructions * c.issue_slot + shared * c.wavefront
            + (t.global_sectors + fmt.local_traffic(m)[1]) * c.sector + atomic_sectors * c.atomic_sector)
    return Totals(t.warp_instructions, shared, t.global_sectors, cost)


def _cost(score: float, tot: Totals) -> str:
    return f" [~{score:,.0f} SM-cycles, {score / tot.cost:.0%} of the kernel's]" if tot.cost else ""


def partial_share(result) -> float:
    """Share of a block's warp lanes its threads fill: 80 threads -> 80 / 96."""
    tpb = threads_per_block(result)
    return tpb / (32 * -(-tpb // 32)) if tpb else 1.0


def idle_slots(ls: LineStats, full: float) -> tuple[float, float]:
    """(partial-warp, divergent) idle lane slots / 32 of a line, when a full warp fills
    `full` of its lanes on average (the block's partial last warp)."""
    idle = (32 * ls.warp_instructions - ls.metrics["smsp__thread_inst_executed.sum"]) / 32
    partial = min(idle, ls.warp_instructions * (1.0 - full))
    return partial, idle - partial


def simt_issue(result, ls: LineStats, c: Costs, tot: Totals) -> Issue | None:
    full = partial_share(result)
    _, idle = idle_slots(ls, full)
    eff = ls.simt_efficiency
    if (not ls.warp_instructions or eff >= SIMT_MIN * full
            or idle < MATERIAL_SHARE * tot.warp_instructions):
        return None
    n, score = ls.line, idle * c.issue_slot
    detail = (f"lanes of a warp take different branches or loop trip counts here (or fail a bounds check at a "
              f"ragged edge of the data), so the warp runs each path with the other lanes masked off (on average "
              f"{eff * 32:.1f} of 32 lanes do work: {idle:,.0f} idle issue slots, "
              f"{idle / tot.warp_instructions:.0%} of the kernel's)")
    if full < 1.0:
        detail += f"; the last warp of each block is also partial ({threads_per_block(result)} threads per block)"
    return Issue(n, "divergence", score, f"line {n}: SIMT efficiency {eff:.0%}", detail + _cost(score, tot),
                 "make branches and trip counts uniform within each group of 32 consecutive threads "
                 "(e.g. branch on threadIdx.x // 32), or move work out of the divergent region; at a ragged edge, "
                 "shape blocks so that whole warps fall inside or outside the data.",
                 f"{eff * 32:.1f} of 32 lanes do work")


def partial_warp_issue(result, lines: list[LineStats], c: Costs, tot: Totals) -> Issue | None:
    tpb, full = threads_per_block(result), partial_share(result)
    idle = sum(idle_slots(ls, full)[0] for ls in lines)
    if full >= 1.0 or idle <= 0 or idle < MATERIAL_SHARE * tot.warp_instructions:
        return None
    score = idle * c.issue_slot
    return Issue(0, "partial-warp", score, f"launch: {tpb} threads per block",
                 f"not a multiple of 32, so the last warp of each block runs with {tpb % 32} of 32 lanes and every "
                 f"line's SIMT efficiency is at most {full:.0%} ({idle:,.0f} idle issue slots, "
                 f"{idle / tot.warp_instructions:.0%} of the kernel's){_cost(score, tot)}",
                 "use a multiple of 32 threads per block.", "the partial last warp of each block")


def bank_issue(ls: LineStats, c: Costs, tot: Totals) -> Issue | None:
    if ls.bank_conflicts <= 0 or ls.bank_conflicts < MATERIAL_SHARE * tot.shared_wavefronts:
        return None
    requests = ls.shared_wavefronts - ls.bank_conflicts
    ways = ls.shared_wavefronts / requests if requests else float(ls.shared_wavefronts)
    way = f"{ways:.0f}-way" if abs(ways - round(ways)) < 0.05 else f"{ways:.1f}-way (average)"
    short = (f"{_n(ways - 1)} extra wavefront{'' if _n(ways - 1) == '1' else 's'} per warp access "
             f"({ls.bank_conflicts:,} in all)")
    score = ls.bank_conflicts * c.wavefront
    return Issue(ls.line, "bank", score, f"line {ls.line}: {way} bank conflict",
                 f"{short}: lanes of a warp hit different words of the same bank{_cost(score, tot)}",
                 "pad the shared array's rows (e.g. [32][33]) or change the index so the 32 lanes land in "
                 "32 different banks.", short)


def coalescing_issue(result, ls: LineStats, c: Costs, tot: Totals) -> Issue | None:
    bad = [a for a in accesses(result, ls)
           if a.op not in ("atom", "red") and a.sectors >= UNCOALESCED_RATIO * a.ideal]
    extra = sum(a.sectors - a.ideal for a in bad)
    if not bad or extra < MATERIAL_SHARE * tot.global_sectors:
        return None
    worst = max(bad, key=lambda a: a.sectors - a.ideal)
    spr, want = worst.sectors / worst.requests, worst.ideal / worst.requests
    what = f" (global {OP_NAMES[worst.op]})" if worst.op else ""
    short = f"{extra:,.0f} extra sectors"
    apart = ("at least 32 B apart (each lane its own sector)" if spr >= worst.lanes - 0.5
             else f"about {spr * 32 / worst.lanes:.0f} B apart (or scattered)")
    score = extra * c.sector
    return Issue(ls.line, "uncoalesced", score, f"line {ls.line}: {_n(spr)} sectors per request{what} where "
                 f"{_n(want)} would do",
                 f"uncoalesced global access, consecutive threads touch addresses {apart}, moving {short}"
                 f"{_cost(score, tot)}",
                 "make threadIdx.x index the contiguous (last) dimension, or stage the data through shared "
                 "memory.", short)


def shared_atomic_conflicts(result, ls: LineStats) -> tuple[int, int]:
    """(requests, wavefronts) of the line's shared-memory atomics."""
    table, idx = getattr(result, "table", None) or {}, list(ls.instructions)
    return tuple(int(np.asarray(table[k])[idx].sum()) if k in table else 0
                 for k in ("shared_atom_requests", "shared_atom_wavefronts"))


def atomics_issue(result, ls: LineStats, c: Costs, tot: Totals) -> Issue | None:
    """Global atomics that are a large share of the kernel (ATOMICS_SHARE), else shared
    atomics whose lanes serialise (wavefronts beyond one per request)."""
    atoms = [a for a in accesses(result, ls) if a.op in ("atom", "red")]
    lanes = sum(a.lanes * a.requests for a in atoms)
    req, sec = sum(a.requests for a in atoms), sum(a.sectors for a in atoms)
    score = sec * c.atomic_sector + max(0.0, sec - sum(a.ideal for a in atoms)) * c.sector
    if atoms and score >= ATOMICS_SHARE * tot.cost:
        short = f"{lanes:,.0f} lane atomics in {req:,} requests"
        return Issue(ls.line, "atomics", score, f"line {ls.line}: global atomics, {_n(lanes / req)} lanes per "
                     f"request over {_n(sec / req)} sectors",
                     f"{short}: each is a read-modify-write at an L2 slice, and lanes on one 32-B sector wait for "
                     f"each other there{_cost(score, tot)}",
                     "accumulate per block in shared memory first (privatization, as in histogram_shared), "
                     "then issue one global atomic per block and address.", short)
    sreq, swf = shared_atomic_conflicts(result, ls)
    extra = swf - sreq
    if not sreq or extra <= 0 or extra < MATERIAL_SHARE * tot.shared_wavefronts:
        return None
    score = extra * c.wavefront
    short = f"{_n(swf / sreq)} wavefronts per warp atomic ({extra:,} extra)"
    return Issue(ls.line, "shared-atomics", score, f"line {ls.line}: shared atomics serialise",
                 f"{short}: lanes of a warp that update the same address (or bank) take turns{_cost(score, tot)}",
                 "give each warp its own copy of the counters, or combine equal keys within the warp before "
                 "the atomic.", short)


def local_issue(ls: LineStats, c: Costs, tot: Totals) -> Issue | None:
    lreq, lsec = local_of(ls)
    score = lsec * c.sector
    if not lreq or score < MATERIAL_SHARE * tot.cost:
        return None
    short = f"{lreq:,} requests ({lsec:,} sectors)"
    return Issue(ls.line, "local", score, f"line {ls.line}: local memory",
                 f"{short} to per-thread local memory (an indexed cuda.local.array or a register spill), "
                 f"which lives in DRAM behind the L1{_cost(score, tot)}",
                 "index it with constants (fully unrolled loops) so it stays in registers.", short)


@dataclass(frozen=True)
class Verdict:
    issues: tuple[Issue, ...]          # worst first
    flags: dict                        # line -> LineFlags


def analyse(result) -> Verdict:
    """Every material issue of `result`, and each line's flags (cached on the result)."""
    extra = getattr(result, "extra", None)
    if isinstance(extra, dict) and isinstance(extra.get("_verdict"), Verdict):
        return extra["_verdict"]
    c = costs_for(str(getattr(result, "gpu", "")))
    tot = totals_of(result, c)
    lines = [ls for ls in result.lines.values() if not is_prologue(result, ls)]
    found: list[Issue] = []
    for ls in lines:
        found += [i for i in (simt_issue(result, ls, c, tot), bank_issue(ls, c, tot),
                              coalescing_issue(result, ls, c, tot), atomics_issue(result, ls, c, tot),
                              local_issue(ls, c, tot)) if i is not None]
    whole = partial_warp_issue(result, list(result.lines.values()), c, tot)
    found += [whole] if whole is not None else []
    found.sort(key=lambda i: (-i.score, i.line))
    kinds: dict[int, set[str]] = {}
    for i in found:
        kinds.setdefault(i.line, set()).add(i.kind)
    flags = {n: LineFlags(divergent="divergence" in k, conflicted=bool(k & {"bank", "shared-atomics"}),
                          uncoalesced=bool(k & {"uncoalesced", "atomics"}), local="local" in k)
             for n, k in kinds.items() if n}
    v = Verdict(tuple(found), flags)
    if isinstance(extra, dict):
        extra["_verdict"] = v
    return v


def flags(result, ls: LineStats) -> LineFlags:
    """Which of the line's cells show material waste."""
    return analyse(result).flags.get(ls.line, LineFlags())


def line_issues(result) -> list[Issue]:
    """Every material issue, highest score (SM-cycles) first; ties by line number."""
    return list(analyse(result).issues)
