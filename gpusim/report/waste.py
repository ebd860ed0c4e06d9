"""What the verdict's detectors share: the issue record, the resources' prices, a line's
global accesses, and which lines may never be flagged.

Two prices for every waste:
- `Costs`: SM-cycles of the resource it occupies, from the GPU preset (the untimed
  ranking, and the throughput view of a timed one). An issue slot (a warp instruction)
  is 1 / (sub-partitions x issue width) [H100: 0.25]; a shared wavefront
  `sm.shared_wavefront_cycles` [1]; a 32-B sector its share of the L2 bandwidth per SM,
  sector_bytes x sm_count / (slices x read bytes per cycle per slice) [0.71]; each
  sector of an atomic request the slices' time for its pass, (`l2.atomic_unit_cycles_per_pass`
  at its home + half a `l2.atomic_near_slice_cycles_per_pass`: half the lines are far) x
  sm_count / slices [3.8].
- `savings.TimeBase`: for a timed result, the share of the kernel's time the waste costs
  (`savings.py`), Nsight's estimated speedup.
"""
from __future__ import annotations

import ast
import linecache
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from gpusim.report import fmt
from gpusim.result import LineStats
from gpusim.specs import resolve

GLOBAL_OPS = ("ld", "st", "atom", "red")
PROLOGUE_OPS = ("ld.param", "cvta", "mov")
OP_NAMES = {"ld": "load", "st": "store", "atom": "atomic", "red": "reduction"}


@dataclass(frozen=True)
class Costs:
    """SM-cycles one unit of each resource costs (see the module docstring); the defaults
    are the calibrated h100 preset's (gpusim/specs/calibrated/h100.toml)."""
    issue_slot: float = 0.25
    wavefront: float = 1.0
    sector: float = 32 * 132 / (80 * 74.2)
    atomic_sector: float = (1.39 + 1.876 / 2) * 132 / 80      # a pass: its home slice and, for half, a near one


@lru_cache(maxsize=32)
def costs_for(gpu: str) -> Costs:
    """The Costs of the preset named `gpu` ('h100', 'h200+l2.slices=64' falls back to
    'h200'); the H100 numbers for a name that does not resolve."""
    for name in (gpu, str(gpu).split("+")[0]):
        try:
            s = resolve(name, [])
        except Exception:                        # unknown or hand-made names: try the next, then the default
            continue
        return Costs(issue_slot=1.0 / (s.sm.sub_partitions * s.sm.issue_width_warp_inst_per_cycle),
                     wavefront=float(s.sm.shared_wavefront_cycles),
                     sector=s.l2.sector_bytes * s.sm_count / (s.l2.slices * s.in_sm_cycles().l2.bandwidth_bytes_per_cycle_per_slice),
                     atomic_sector=(s.l2.atomic_unit_cycles_per_pass + s.l2.atomic_near_slice_cycles_per_pass / 2)
                     * s.sm_count / s.l2.slices)
    return Costs()


@dataclass(frozen=True)
class Issue:
    line: int          # source line; 0 for the launch as a whole
    kind: str          # 'divergence' | 'predication' | 'partial-warp' | 'bank' | 'uncoalesced' | 'atomics' |
    #                    'shared-atomics' | 'local' | 'barrier' | 'overhead'
    score: float       # the ranking: estimated ns saved (timed), else SM-cycles of the resource
    headline: str      # "line 14: 32-way bank conflict"
    detail: str        # "31 extra wavefronts per warp access (1,984 in all): lanes of a warp hit ..."
    fix: str           # "pad the shared array's rows (e.g. [32][33]) ..."
    short: str = ""    # the numbers of `detail`, for a repeat of the same kind
    saved_pct: float | None = None    # estimated share of the kernel's time saved (None: untimed)
    saved_ns: float | None = None

    @property
    def sentence(self) -> str:
        return f"{self.headline}: {self.detail}; {self.fix}"

    def repeat_of(self, first: int) -> str:
        """The sentence when an earlier line (`first`) already had this kind of issue."""
        return f"{self.headline}: {self.short or self.detail}; same cause and fix as line {first}."


@dataclass(frozen=True)
class Totals:
    """The kernel-wide use of each resource, the bases of the untimed material tests."""
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


@dataclass(frozen=True)
class Pricing:
    """How a detector prices a waste: SM-cycles always; a time share when timed."""
    costs: Costs
    totals: Totals
    base: object = None        # savings.TimeBase, or None (untimed)

    @property
    def timed(self) -> bool:
        return self.base is not None

    def text(self, sm_cycles: float, share: float | None) -> str:
        """The bracketed cost of a detail sentence."""
        if share is not None and self.base is not None:
            return f" [est. time saved {share:.0%} of the kernel's, ~{fmt.duration(share * self.base.time_ns)}]"
        return (f" [~{sm_cycles:,.0f} SM-cycles, {sm_cycles / self.totals.cost:.0%} of the kernel's]"
                if self.totals.cost else "")

    def issue(self, line: int, kind: str, sm_cycles: float, share: float | None, headline: str, detail: str,
              fix: str, short: str = "") -> Issue:
        timed = share is not None and self.base is not None
        return Issue(line, kind, share * self.base.time_ns if timed else sm_cycles, headline,
                     detail + self.text(sm_cycles, share), fix, short,
                     share if timed else None, share * self.base.time_ns if timed else None)


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


def n(x: float) -> str:
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
        return frozenset(k for k, s in enumerate(text.splitlines(), 1) if s.lstrip().startswith(("def ", "@")))
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
    return bool(names) and all(x.startswith(PROLOGUE_OPS) for x in names)
