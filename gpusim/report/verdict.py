"""Per-line diagnosis: which source lines waste material work, one plain-English
sentence each, ranked by what the waste costs.

A timed result is priced in time: each waste's estimated share of the kernel's time
saved by removing it (Nsight Compute's "Est. Speedup"; `savings.py` says how), and
only a waste that saves at least MIN_SAVED = 2% is flagged, so a conflict that costs no
time (one hidden behind other work) is not. An untimed result (`--functional`) is priced
in SM-cycles of the resource the waste occupies (`waste.Costs`; H100 in brackets: an
issue slot 0.25, a shared wavefront 1, a 32-B sector 0.71, an atomic sector 0.99) and
flagged at MATERIAL_SHARE = 2% of the kernel's use of that resource; barrier stalls and
instruction overhead need the timing model and are only found in a timed result.

Kinds (detectors in `kinds.py`):
- divergence: idle lanes beyond what the block's partial last warp explains, below
  SIMT_MIN = 95% SIMT efficiency (of what the block shape allows). So a bounds check
  masking the ragged end of the data (99.7%, "31.9 of 32 lanes") is not flagged.
- predication: lanes predicated off in a line's non-control SASS (a branch ptxas
  if-converted: both sides issue to every lane; `smsp__thread_inst_executed_pred_on`),
  when at least 5% of those lanes are off.
- partial-warp: one item for the launch (line 0) when threads per block is not a
  multiple of 32: every block's last warp's idle lanes.
- bank: extra wavefronts (conflicts). The advice follows the source (`patterns.py`): a
  2-D shared tile gets row padding, a 1-D array the stride to change.
- uncoalesced: sectors beyond the contiguous, aligned ideal of a full warp of the same
  width (`access_bytes` sectors per request: 4 for float32, 8 for float64) over the
  accesses moving >= UNCOALESCED_RATIO = 1.5x it (stride 2 is 2x; a misaligned
  full-warp row, 1.25x, is not flagged). A 2-D subscript gets "index the last dimension
  with threadIdx.x", a 1-D one "consecutive threads, consecutive elements".
- atomics: global atomics and reductions (untimed: flagged at ATOMICS_SHARE = 10% of the
  kernel's SM-cycles, so a privatised histogram's final merge is not).
- shared-atomics: shared atomics' wavefronts beyond one per request.
- local: every local-memory sector (spills, indexed cuda.local.array).
- barrier (timed): the warp-cycles warps wait at cuda.syncthreads(), placed on the
  barrier's line (an upper bound of what balancing the work recovers).
- overhead (timed): the issue cycles of integer, move and branch SASS on lines that are
  not integer work of their own (index and address arithmetic, bounds checks, loop
  control; `patterns.py` tells the lines apart), one item for the kernel.
Never flagged: a function's `def` line (decorators and signature: the parameter loads
and Numba's initialisation of local arrays land there) and a line of nothing but
prologue instructions (parameter loads, address conversion, register and
special-register moves).

Not modelled: why a line diverges (which branch); contention between warps on the
same addresses (the counters see one request at a time); the addresses behind a
strided access: the sentences infer a stride from sectors per request, exact for a
constant stride from an aligned base and a lower bound otherwise. Estimates are one
waste at a time: fixes overlap, so the savings do not add up.
"""
from __future__ import annotations

from dataclasses import dataclass

from gpusim.report import kinds, savings
from gpusim.report.kinds import MATERIAL_SHARE, MIN_SAVED, SIMT_MIN, UNCOALESCED_RATIO  # noqa: F401 (documented)
from gpusim.report.waste import Costs, Issue, Pricing, costs_for, is_prologue, local_of, totals_of

__all__ = ["Costs", "Issue", "LineFlags", "Verdict", "analyse", "costs_for", "flags", "line_issues", "local_of"]


@dataclass(frozen=True)
class LineFlags:
    """Which cells of a line's row are bad."""
    divergent: bool = False
    conflicted: bool = False
    uncoalesced: bool = False
    local: bool = False
    predicated: bool = False


@dataclass(frozen=True)
class Verdict:
    issues: tuple[Issue, ...]          # worst first
    flags: dict                        # line -> LineFlags
    timed: bool = False                # priced in estimated time saved


def analyse(result) -> Verdict:
    """Every material issue of `result`, and each line's flags (cached on the result)."""
    extra = getattr(result, "extra", None)
    if isinstance(extra, dict) and isinstance(extra.get("_verdict"), Verdict):
        return extra["_verdict"]
    c = costs_for(str(getattr(result, "gpu", "")))
    p = Pricing(c, totals_of(result, c), savings.time_base(result))
    lines = [ls for ls in result.lines.values() if not is_prologue(result, ls)]
    found: list[Issue] = []
    for ls in lines:
        found += [i for i in (kinds.simt_issue(result, ls, p), kinds.predication_issue(result, ls, p),
                              kinds.bank_issue(result, ls, p), kinds.coalescing_issue(result, ls, p),
                              kinds.atomics_issue(result, ls, p), kinds.local_issue(ls, p)) if i is not None]
    for whole in (kinds.partial_warp_issue(result, list(result.lines.values()), p), kinds.barrier_issue(result, p),
                  kinds.overhead_issue(result, p)):
        found += [whole] if whole is not None else []
    found.sort(key=lambda i: (-i.score, i.line))
    per_line: dict[int, set[str]] = {}
    for i in found:
        per_line.setdefault(i.line, set()).add(i.kind)
    flags = {n: LineFlags(divergent="divergence" in k, conflicted=bool(k & {"bank", "shared-atomics"}),
                          uncoalesced=bool(k & {"uncoalesced", "atomics"}), local="local" in k,
                          predicated="predication" in k)
             for n, k in per_line.items() if n}
    v = Verdict(tuple(found), flags, p.timed)
    if isinstance(extra, dict):
        extra["_verdict"] = v
    return v


def flags(result, ls) -> LineFlags:
    """Which of the line's cells show material waste."""
    return analyse(result).flags.get(ls.line, LineFlags())


def line_issues(result) -> list[Issue]:
    """Every material issue, highest score first (estimated time saved when timed, else
    SM-cycles); ties by line number."""
    return list(analyse(result).issues)
