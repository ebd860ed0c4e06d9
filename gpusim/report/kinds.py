"""The verdict's detectors, one per kind of waste: each returns an `Issue` (priced by
`waste.Pricing`: estimated time saved when timed, SM-cycles otherwise) or None when the
waste is not material. Thresholds and sentences: `verdict.py`'s docstring."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from gpusim.frontend.sass.listing import op_class
from gpusim.report import patterns, savings
from gpusim.report.waste import (OP_NAMES, Access, Pricing, accesses, idle_slots, local_of, n, partial_share,
                                 threads_per_block)
from gpusim.result import LineStats

MATERIAL_SHARE = 0.02      # untimed: a waste is flagged when it is at least this share of its resource's use
MIN_SAVED = 0.02           # timed: a waste is flagged when fixing it saves at least this share of the time
ATOMICS_SHARE = 0.10       # untimed: global atomics are flagged at this share of the kernel's cost
SIMT_MIN = 0.95            # divergence: SIMT efficiency below this share of what the block shape allows
UNCOALESCED_RATIO = 1.5    # an access is uncoalesced at this many times the ideal sectors
OVERHEAD_CLASSES = ("int", "misc", "branch")     # SASS op classes counted as index arithmetic and control
CONTROL = frozenset({"BRA", "EXIT", "RET", "BSSY", "BSYNC", "CALL", "BREAK", "WARPSYNC", "KILL", "BRX", "JMP"})


def _flag(share: float | None, untimed_ok: bool) -> bool:
    return share >= MIN_SAVED if share is not None else untimed_ok


def simt_issue(result, ls: LineStats, p: Pricing) -> object:
    full = partial_share(result)
    _, idle = idle_slots(ls, full)
    eff = ls.simt_efficiency
    if not ls.warp_instructions or eff >= SIMT_MIN * full or idle <= 0:
        return None
    share = None
    if p.timed:
        lat = savings.latency_share(p.base, ls, idle / ls.warp_instructions)
        thr = idle / max(p.totals.warp_instructions, 1) * p.base.utilization.get("compute", 0.0)
        share = p.base.share(lat, thr)
    if not _flag(share, idle >= MATERIAL_SHARE * p.totals.warp_instructions):
        return None
    detail = (f"lanes of a warp take different branches or loop trip counts here (or fail a bounds check at a "
              f"ragged edge of the data), so the warp runs each path with the other lanes masked off (on average "
              f"{eff * 32:.1f} of 32 lanes do work: {idle:,.0f} idle issue slots, "
              f"{idle / p.totals.warp_instructions:.0%} of the kernel's)")
    if full < 1.0:
        detail += f"; the last warp of each block is also partial ({threads_per_block(result)} threads per block)"
    return p.issue(ls.line, "divergence", idle * p.costs.issue_slot, share, f"line {ls.line}: SIMT efficiency {eff:.0%}",
                   detail, "make branches and trip counts uniform within each group of 32 consecutive threads "
                   "(e.g. branch on threadIdx.x // 32), or move work out of the divergent region; at a ragged edge, "
                   "shape blocks so that whole warps fall inside or outside the data.",
                   f"{eff * 32:.1f} of 32 lanes do work")


def predication_issue(result, ls: LineStats, p: Pricing) -> object:
    """Lanes predicated off in the line's non-control SASS: a branch ptxas if-converted."""
    f = sass_lines(result).get(ls.line)
    if f is None or not ls.warp_instructions:
        return None
    off_slots = f.pred_off_threads / 32
    data = f.data_inst
    if data <= 0 or off_slots <= 0 or off_slots < (1 - SIMT_MIN) * data:
        return None
    share = None
    if p.timed:
        lat = savings.latency_share(p.base, ls, off_slots / ls.warp_instructions, savings.ISSUE)
        thr = off_slots / max(p.totals.warp_instructions, 1) * p.base.utilization.get("compute", 0.0)
        share = p.base.share(lat, thr)
    if not _flag(share, off_slots >= MATERIAL_SHARE * p.totals.warp_instructions):
        return None
    on = 32 * (1 - off_slots / data)
    short = f"{on:.1f} of 32 lanes predicated on"
    return p.issue(ls.line, "predication", off_slots * p.costs.issue_slot, share,
                   f"line {ls.line}: predicated, {on:.1f} of 32 lanes do work",
                   f"ptxas compiled this branch without a jump: every active lane issues its instructions, and those "
                   f"whose condition is false do nothing ({short} in {data:,.0f} warp instructions: "
                   f"{off_slots:,.0f} issue slots of idle lanes)",
                   "make the condition uniform across each warp (e.g. on threadIdx.x // 32) so a warp issues "
                   "only the side it takes, or leave the rare case (a halo, an edge) to fewer warps.", short)


def partial_warp_issue(result, lines: list[LineStats], p: Pricing) -> object:
    tpb, full = threads_per_block(result), partial_share(result)
    idle = sum(idle_slots(ls, full)[0] for ls in lines)
    if full >= 1.0 or idle <= 0:
        return None
    share = None
    if p.timed:
        lat = sum(savings.samples(ls) for ls in lines) * (1.0 - full) / p.base.warp_cycles
        thr = idle / max(p.totals.warp_instructions, 1) * p.base.utilization.get("compute", 0.0)
        share = p.base.share(lat, thr)
    if not _flag(share, idle >= MATERIAL_SHARE * p.totals.warp_instructions):
        return None
    return p.issue(0, "partial-warp", idle * p.costs.issue_slot, share, f"launch: {tpb} threads per block",
                   f"not a multiple of 32, so the last warp of each block runs with {tpb % 32} of 32 lanes and every "
                   f"line's SIMT efficiency is at most {full:.0%} ({idle:,.0f} idle issue slots, "
                   f"{idle / p.totals.warp_instructions:.0%} of the kernel's)",
                   "use a multiple of 32 threads per block.", "the partial last warp of each block")


def bank_issue(result, ls: LineStats, p: Pricing) -> object:
    if ls.bank_conflicts <= 0:
        return None
    share = None
    if p.timed:
        lat = savings.latency_share(p.base, ls, ls.bank_conflicts / ls.shared_wavefronts, savings.SHARED)
        thr = ls.bank_conflicts / max(p.totals.shared_wavefronts, 1) * p.base.utilization.get("shared_memory", 0.0)
        share = p.base.share(lat, thr)
    if not _flag(share, ls.bank_conflicts >= MATERIAL_SHARE * p.totals.shared_wavefronts):
        return None
    requests = ls.shared_wavefronts - ls.bank_conflicts
    ways = ls.shared_wavefronts / requests if requests else float(ls.shared_wavefronts)
    way = f"{ways:.0f}-way" if abs(ways - round(ways)) < 0.05 else f"{ways:.1f}-way (average)"
    short = (f"{n(ways - 1)} extra wavefront{'' if n(ways - 1) == '1' else 's'} per warp access "
             f"({ls.bank_conflicts:,} in all)")
    return p.issue(ls.line, "bank", ls.bank_conflicts * p.costs.wavefront, share, f"line {ls.line}: {way} bank conflict",
                   f"{short}: lanes of a warp hit different words of the same bank", bank_fix(result, ls.line, ways),
                   short)


def bank_fix(result, line: int, ways: float) -> str:
    """Advice for the shared arrays the line indexes: pad a 2-D tile's rows; fix a 1-D stride."""
    f = patterns.facts(getattr(result, "source_file", ""))
    on = f.shared_on(line)
    two = sorted({a for a, d in on if d >= 2})
    one = sorted({a for a, d in on if d == 1})
    if two:
        shape = f.shared_shapes.get(two[0], ())
        if len(shape) == 2 and shape[1]:
            pad = f"from [{shape[0] or '..'}][{shape[1]}] to [{shape[0] or '..'}][{shape[1] + 1}]"
        else:
            pad = "by one element (e.g. [32][33] for a 32 x 32 tile)"
        return (f"pad the rows of `{two[0]}` {pad}, so the elements of a column fall in different banks, or "
                "swap the indices so that consecutive lanes read along a row.")
    if one:
        return (f"consecutive lanes index `{one[0]}` about {n(ways)} words apart (a stride with a factor "
                f"{n(ways)} in common with the 32 banks): index it so that lane k reads word base + k (sequential "
                "addressing, the stride moved into the loop), or use an odd stride.")
    return ("change the index so the 32 lanes land in 32 different banks (pad a 2-D tile's rows by one element; "
            "give a 1-D array's lanes consecutive or odd-strided words).")


def coalescing_issue(result, ls: LineStats, p: Pricing) -> object:
    bad = [a for a in accesses(result, ls)
           if a.op not in ("atom", "red") and a.sectors >= UNCOALESCED_RATIO * a.ideal]
    extra = sum(a.sectors - a.ideal for a in bad)
    if not bad or extra <= 0:
        return None
    share = None
    if p.timed:
        lat = savings.latency_share(p.base, ls, extra / max(ls.global_sectors, 1), savings.GLOBAL)
        u = p.base.utilization
        thr = extra / max(p.totals.global_sectors, 1) * max(u.get("l2_bandwidth", 0.0), u.get("hbm_bandwidth", 0.0))
        share = p.base.share(lat, thr)
    if not _flag(share, extra >= MATERIAL_SHARE * p.totals.global_sectors):
        return None
    worst = max(bad, key=lambda a: a.sectors - a.ideal)
    spr, want = worst.sectors / worst.requests, worst.ideal / worst.requests
    what = f" (global {OP_NAMES[worst.op]})" if worst.op else ""
    short = f"{extra:,.0f} extra sectors"
    apart = ("at least 32 B apart (each lane its own sector)" if spr >= worst.lanes - 0.5
             else f"about {spr * 32 / worst.lanes:.0f} B apart (or scattered)")
    return p.issue(ls.line, "uncoalesced", extra * p.costs.sector, share,
                   f"line {ls.line}: {n(spr)} sectors per request{what} where {n(want)} would do",
                   f"uncoalesced global access, consecutive threads touch addresses {apart}, moving {short}",
                   coalescing_fix(result, ls.line), short)


def coalescing_fix(result, line: int) -> str:
    arrays = patterns.facts(getattr(result, "source_file", "")).arrays_on(line)
    if any(d >= 2 for _, d in arrays):
        return ("make threadIdx.x index the contiguous (last) dimension, or stage the data through a shared-memory "
                "tile (read rows, write columns from the tile).")
    if arrays:
        return ("have consecutive threads access consecutive elements: index with i, not i * stride (an array of "
                "records read field by field: store each field as its own array).")
    return "make threadIdx.x index the contiguous (last) dimension, or stage the data through shared memory."


def shared_atomic_conflicts(result, ls: LineStats) -> tuple[int, int]:
    """(requests, wavefronts) of the line's shared-memory atomics."""
    table, idx = getattr(result, "table", None) or {}, list(ls.instructions)
    return tuple(int(np.asarray(table[k])[idx].sum()) if k in table else 0
                 for k in ("shared_atom_requests", "shared_atom_wavefronts"))


def atomics_issue(result, ls: LineStats, p: Pricing) -> object:
    """Global atomics that cost a material share (untimed: ATOMICS_SHARE of the SM-cycles),
    else shared atomics whose lanes serialise (wavefronts beyond one per request)."""
    atoms: list[Access] = [a for a in accesses(result, ls) if a.op in ("atom", "red")]
    if atoms:
        lanes = sum(a.lanes * a.requests for a in atoms)
        req, sec = sum(a.requests for a in atoms), sum(a.sectors for a in atoms)
        cycles = sec * p.costs.atomic_sector + max(0.0, sec - sum(a.ideal for a in atoms)) * p.costs.sector
        share = p.base.share(savings.latency_share(p.base, ls, 1.0, savings.GLOBAL)) if p.timed else None
        if _flag(share, cycles >= ATOMICS_SHARE * p.totals.cost):
            short = f"{lanes:,.0f} lane atomics in {req:,} requests"
            return p.issue(ls.line, "atomics", cycles, share, f"line {ls.line}: global atomics, {n(lanes / req)} lanes "
                           f"per request over {n(sec / req)} sectors",
                           f"{short}: each is a read-modify-write at an L2 slice, and lanes on one 32-B sector wait "
                           "for each other there",
                           "accumulate per block in shared memory first (privatization, as in histogram_shared), "
                           "then issue one global atomic per block and address.", short)
    sreq, swf = shared_atomic_conflicts(result, ls)
    extra = swf - sreq
    if not sreq or extra <= 0:
        return None
    share = p.base.share(savings.latency_share(p.base, ls, extra / swf, savings.SHARED)) if p.timed else None
    if not _flag(share, extra >= MATERIAL_SHARE * p.totals.shared_wavefronts):
        return None
    short = f"{n(swf / sreq)} wavefronts per warp atomic ({extra:,} extra)"
    return p.issue(ls.line, "shared-atomics", extra * p.costs.wavefront, share, f"line {ls.line}: shared atomics "
                   "serialise", f"{short}: lanes of a warp that update the same address (or bank) take turns",
                   "give each warp its own copy of the counters, or combine equal keys within the warp before "
                   "the atomic.", short)


def local_issue(ls: LineStats, p: Pricing) -> object:
    lreq, lsec = local_of(ls)
    if not lreq:
        return None
    cycles = lsec * p.costs.sector
    share = None
    if p.timed:
        u = p.base.utilization
        thr = lsec / max(p.totals.global_sectors + lsec, 1) * max(u.get("l2_bandwidth", 0.0),
                                                                  u.get("hbm_bandwidth", 0.0))
        share = p.base.share(savings.latency_share(p.base, ls, 1.0, savings.GLOBAL), thr)
    if not _flag(share, cycles >= MATERIAL_SHARE * p.totals.cost):
        return None
    short = f"{lreq:,} requests ({lsec:,} sectors)"
    return p.issue(ls.line, "local", cycles, share, f"line {ls.line}: local memory",
                   f"{short} to per-thread local memory (an indexed cuda.local.array or a register spill), "
                   "which lives in DRAM behind the L1",
                   "index it with constants (fully unrolled loops) so it stays in registers.", short)


def barrier_issue(result, p: Pricing) -> object:
    """Warps waiting at barriers (timed only): the kernel's `barrier` samples, placed on
    the barrier lines."""
    if not p.timed:
        return None
    waits = savings.kernel_samples(result, "barrier")
    share = p.base.share(waits / p.base.warp_cycles)
    if share < MIN_SAVED:
        return None
    infos = getattr(result, "infos", None) or []
    lines = sorted({i.line for i in infos if i.line and getattr(i, "mnemonic", "").startswith(("bar", "barrier"))})
    where = f"line{'s' * (len(lines) > 1)} {', '.join(map(str, lines))}" if lines else "the kernel's barriers"
    return p.issue(lines[0] if lines else 0, "barrier", 0.0, share,
                   f"{'line ' + str(lines[0]) if lines else 'launch'}: barrier stalls, "
                   f"{waits / p.base.warp_cycles:.0%} of the warp cycles",
                   f"warps that reach cuda.syncthreads() ({where}) wait there for the slowest warp of their block",
                   "balance the work between barriers (warps with little to do wait for the rest), take fewer "
                   "barrier steps (e.g. finish the last 32 values with warp shuffles, no barrier), or keep more "
                   "blocks per SM so that other blocks' warps issue meanwhile.", f"{where}")


def overhead_issue(result, p: Pricing) -> object:
    """Index arithmetic and control (timed only): the issue cycles of the integer, move and
    branch SASS of every line that is not integer work of its own (`patterns`)."""
    facts = sass_lines(result)
    if not p.timed or not facts:
        return None
    share_by_line, over, total = {}, 0.0, 0.0
    for line, f in facts.items():
        ls = result.lines.get(line)
        total += f.inst
        if ls is None or not ls.warp_instructions or not f.overhead_inst:
            continue
        over += f.overhead_inst
        share_by_line[line] = savings.latency_share(p.base, ls, f.overhead_inst / max(f.inst, 1), savings.ISSUE)
    if not share_by_line or not total:
        return None
    thr = over / total * p.base.utilization.get("compute", 0.0)
    share = p.base.share(sum(share_by_line.values()), thr)
    if share < MIN_SAVED:
        return None
    top = sorted(share_by_line, key=lambda k: -share_by_line[k])[:3]
    return p.issue(top[0], "overhead", over * p.costs.issue_slot, share,
                   f"line {top[0]}: instruction overhead, {over / total:.0%} of the warp instructions",
                   f"{over:,.0f} of {total:,.0f} warp instructions compute indices, addresses, bounds checks and loop "
                   f"control (integer, move and branch SASS; most on lines {', '.join(map(str, top))}), and issuing "
                   "them is time the warps do no loads, stores or arithmetic of their own",
                   "compute indices once (hoist them out of loops), use shifts and masks instead of integer division "
                   "and modulo by a variable, leave halo and edge cases to fewer threads, and check whether the "
                   "caches already serve the reuse a shared-memory tile adds instructions for.",
                   f"{over / total:.0%} of the warp instructions")


# ---------------------------------------------------------------- SASS facts per line

class LineSass:
    __slots__ = ("inst", "data_inst", "pred_off_threads", "overhead_inst")

    def __init__(self):
        self.inst = self.data_inst = self.pred_off_threads = self.overhead_inst = 0.0


def sass_lines(result) -> dict[int, LineSass]:
    """Per source line: SASS warp instructions, those that are not control, the threads
    predicated off in those, and the index-arithmetic and control instructions (none of a
    line that is integer work of its own). Empty without SASS counts."""
    extra = getattr(result, "extra", None)
    if isinstance(extra, dict) and "_sass_lines" in extra:
        return extra["_sass_lines"]
    sass = getattr(result, "sass", None)
    out: dict[int, LineSass] = {}
    if sass is not None:
        work = patterns.facts(getattr(result, "source_file", "")).work_lines
        for ins, k, t, on in zip(sass.instructions, sass.inst.tolist(), sass.thread_inst.tolist(),
                                 sass.thread_inst_pred_on.tolist()):
            if not ins.source_line or not k:
                continue
            f = out.setdefault(ins.source_line, LineSass())
            f.inst += k
            if ins.base not in CONTROL:
                f.data_inst += k
                f.pred_off_threads += t - on
            if _overhead(ins.opcode, ins.base) and ins.source_line not in work:
                f.overhead_inst += k
    if isinstance(extra, dict):
        extra["_sass_lines"] = out
    return out


@lru_cache(maxsize=512)
def _overhead(opcode: str, base: str) -> bool:
    return op_class(opcode) in OVERHEAD_CLASSES and base not in ("BAR", "EXIT")
