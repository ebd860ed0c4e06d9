"""The source view: a kernel's Python source with per-line counters beside it, the
way Nsight Compute's Source page shows them, as plain text.

    print(render_source_view(result, case_name="transpose_shared"))

Header: kernel, GPU, launch shape, kernel-wide totals, and predicted time, bound
and top stall reasons when the result carries them (the timing model adds
`gpu__time_duration.sum` and friends to `result.metrics`; without them the view says
nothing about time). Body: every line of the function(s) the kernel's instructions
come from; lines that executed nothing have blank columns. Columns: warp
instructions, SIMT efficiency (%: active lanes per warp instruction), predicated-on
efficiency ("pred %": lanes whose guard predicate held, Nsight's
`smsp__thread_inst_executed_pred_on.sum`; below SIMT % where ptxas predicated a branch,
shown when the SASS was mapped), shared wavefronts, bank conflicts, global sectors
per request (and local sectors when the kernel touches local memory). A cell that
shows waste ends in '!'; a line holding >= 20% of the warp instructions has '*'.
Footer: the verdict, the worst three lines with one sentence each (`verdict.py`).
"""
from __future__ import annotations

import ast
import linecache
import textwrap

from gpusim.report import fmt
from gpusim.report.verdict import flags, line_issues, local_of
from gpusim.specs import PRESETS
from gpusim.viz import memory_chart

HOT_SHARE = 0.20          # a line with at least this share of warp instructions is marked hot
VERDICT_LINES = 3
WRAP = 100                # verdict sentences wrap here when no width is given
BAD, HOT = "!", "*"


def source_lines(path: str) -> list[str]:
    return [s.rstrip("\n") for s in linecache.getlines(path)] if path else []


def function_spans(text: str, lines: list[int]) -> list[tuple[int, int]]:
    """1-based inclusive spans of the innermost functions (decorators included) that
    contain `lines`; a line outside every function is a span of its own. Sorted,
    merged."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return [(min(lines), max(lines))] if lines else []
    funcs = [(min([n.lineno] + [d.lineno for d in n.decorator_list]), n.lineno, n.end_lineno or n.lineno)
             for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    spans = set()
    for ln in lines:
        inside = [f for f in funcs if f[1] <= ln <= f[2]]
        if inside:
            start, _, end = min(inside, key=lambda f: f[2] - f[1])
            spans.add((start, end))
        else:
            spans.add((ln, ln))
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def header(result, case_name: str | None, color: bool) -> list[str]:
    m = result.metrics
    t = fmt.totals(m)
    g, b = tuple(result.grid), tuple(result.block)
    blocks, tpb = g[0] * g[1] * g[2], b[0] * b[1] * b[2]
    title = case_name or result.kernel
    if result.kernel not in title:
        title += f"  (kernel {result.kernel})"
    gpu = result.gpu
    if gpu in PRESETS:
        gpu = f"{gpu} ({PRESETS[gpu].marketing_name})"
    out = [fmt.paint(f"== {title} ==", fmt.BOLD, color),
           f"gpu {gpu}   grid {g} x block {b} = {fmt.num(blocks)} blocks x {fmt.num(tpb)} threads"
           + (f", {fmt.num(result.shared_bytes)} B dynamic shared" if result.shared_bytes else "")]
    out.extend(timing_lines(m))
    out.append(f"warp instructions {fmt.num(t.warp_instructions)}   thread instructions "
               f"{fmt.num(m['smsp__thread_inst_executed.sum'])}   SIMT efficiency {fmt.pct(t.simt_efficiency)}%")
    out.append(f"shared: {fmt.num(t.shared_wavefronts)} wavefronts, {fmt.num(t.bank_conflicts)} bank conflicts"
               f"   global: {fmt.num(t.global_requests)} requests, {fmt.num(t.global_sectors)} sectors"
               f" ({fmt.ratio(t.sectors_per_request)} sectors/request)")
    lreq, lsec = fmt.local_traffic(m)
    if lreq:
        out.append(f"local: {fmt.num(lreq)} requests, {fmt.num(lsec)} sectors")
    if "lts__t_sectors.sum" in m:                   # timed: the memory chart's numbers
        out.extend(memory_chart.text_lines(memory_chart.memory_chart(result)))
    return out


def timing_lines(m: dict) -> list[str]:
    """Predicted time, cycles, bound and top stall reasons, if the timing model added them."""
    out = []
    if fmt.TIME_KEY in m:
        s = f"predicted time {fmt.duration(m[fmt.TIME_KEY])}"
        for k in fmt.CYCLE_KEYS:
            if k in m:
                s += f" ({fmt.num(m[k])} cycles)"
                break
        bound = [f"{v}" if isinstance(v, str) else f"{k} {v:.3g}" for k, v in sorted(m.items()) if "bound" in k]
        if bound:
            s += "   bound: " + ", ".join(bound)
        out.append(s)
    note = m.get("timing__sampling_note")
    if note:                                        # what sampled timing could not see (timing/sampling/extrapolation.py)
        out.append(f"sampling: {note}")
    settled = m.get("timing__sampling_settled")
    if settled:                                     # a sample timed again with more waves (timing/engine.py)
        out.append(f"sampling: {settled}")
    stalls = {k: float(v) for k, v in m.items() if "stall" in k and isinstance(v, (int, float)) and v > 0}
    if stalls:
        total = sum(stalls.values())
        top = sorted(stalls.items(), key=lambda kv: -kv[1])[:3]
        out.append("top stalls: " + ", ".join(f"{short_stall(k)} {100 * v / total:.0f}%" for k, v in top))
    return out


def short_stall(key: str) -> str:
    """'smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio' -> 'long_scoreboard'."""
    name = key.split("stalled_", 1)[-1] if "stalled_" in key else key
    return name.split(".", 1)[0]


def source_spans(result) -> tuple[list[str], list[tuple[int, int]]]:
    """The kernel file's lines and the (first, last) line spans the view shows: the kernel's
    functions, or each executed line alone when the source cannot be read."""
    text = source_lines(result.source_file)
    spans = function_spans("\n".join(text), list(result.lines)) if text else []
    if not spans and result.lines:
        spans = [(ln, ln) for ln in result.lines]
    return text, spans


def has_pred_on(result) -> bool:
    """Whether the result counts predicated-on threads per line (its SASS was mapped)."""
    return getattr(result, "sass", None) is not None


def column_names(result, has_local: bool) -> list[str]:
    """The counter columns of the view (the stalls column, when timed, is added after)."""
    return (["line", "warp inst", "SIMT %"] + ["pred %"] * has_pred_on(result)
            + ["shared wf", "conflicts", "sect/req"] + ["local sect"] * has_local)


def render_source_view(result, case_name: str | None = None, width: int | None = None,
                       color: bool = False) -> str:
    """The source view of `result` as text (see the module docstring).

    `width`: truncate source text so rows fit in this many columns (None: never
    truncate). `color`: ANSI color for bad cells (callers decide; see fmt.want_color).
    """
    lines = result.lines
    text, spans = source_spans(result)
    total_inst = result.metrics.get("smsp__inst_executed.sum", 0) or 0
    has_local = any(local_of(ls)[0] for ls in lines.values())
    total_stall = stall_total(result.metrics)

    # value cells end in a flag character (' ', '!' or '*'): headers get a space there so they line up with digits
    headers = [h + " " if h != "line" else h for h in column_names(result, has_local)]
    if total_stall:
        headers.append("stalls (top reason) ")
    rows, sources = [], []
    for i, (start, end) in enumerate(spans):
        if i:
            rows.append(["..."] + [""] * (len(headers) - 1))
            sources.append("")
        for n in range(start, end + 1):
            src = text[n - 1] if 0 < n <= len(text) else (lines[n].text if n in lines else "")
            cells = row_cells(result, lines.get(n), n, total_inst, has_local, color)
            if total_stall:
                cells.append(stall_cell(lines.get(n), total_stall))
            rows.append(cells)
            sources.append(src)

    body = fmt.table(headers, rows, "r" * len(headers))
    prefix = max(fmt.visible_len(r) for r in body) if body else 0
    out = header(result, case_name, color)
    out.append("")
    out.append(body[0].ljust(prefix) + " | source")
    for r, src in zip(body[1:], sources):
        if width is not None and prefix + 3 + len(src) > width:
            keep = max(8, width - prefix - 3 - 3)
            src = src[:keep] + "..."
        out.append((r.ljust(prefix + (len(r) - fmt.visible_len(r))) + " | " + src).rstrip())
    out.append(f"{BAD} waste (divergence, bank conflict, uncoalesced, local memory)   "
               f"{HOT} hot (>= {HOT_SHARE:.0%} of warp instructions)")
    out.append("")
    out.extend(verdict_lines(result, color, width or WRAP))
    return "\n".join(out) + "\n"


def stall_total(m: dict) -> float:
    """Warp-cycles not issuing, summed over reasons (0 without the timing model)."""
    return sum(v for k, v in m.items() if k.startswith("smsp__pcsamp_warps_issue_stalled_")
               and not k.endswith("_selected") and isinstance(v, (int, float)))


def stall_cell(ls, total: float) -> str:
    """'37% long_scoreboard': the line's share of all stall cycles and its top reason."""
    if ls is None:
        return ""
    per = {short_stall(k): v for k, v in ls.metrics.items() if k.startswith("smsp__pcsamp_warps_issue_stalled_")
           and not k.endswith("_selected") and v}
    if not per:
        return ""
    top = max(per, key=per.get)
    return f"{100 * sum(per.values()) / total:.0f}% {top} "


def row_cells(result, ls, n: int, total_inst: int, has_local: bool, color: bool) -> list[str]:
    """Cells of one source line; blank where the line executed nothing."""
    pred = has_pred_on(result)
    width = 5 + has_local + pred
    if ls is None or ls.warp_instructions == 0:
        return [str(n)] + [""] * width
    f = flags(result, ls)

    def mark(s: str, bad: bool) -> str:
        return fmt.paint(s + BAD, fmt.RED, color) if bad else s + " "

    inst = fmt.num(ls.warp_instructions)
    hot = total_inst and ls.warp_instructions >= HOT_SHARE * total_inst
    cells = [str(n), fmt.paint(inst + HOT, fmt.YELLOW, color) if hot else inst + " ",
             mark(fmt.pct(ls.simt_efficiency), f.divergent)]
    if pred:
        cells.append(mark(fmt.pct(ls.pred_on_efficiency), f.predicated))
    if ls.shared_wavefronts:
        cells += [fmt.num(ls.shared_wavefronts) + " ", mark(fmt.num(ls.bank_conflicts), f.conflicted)]
    else:
        cells += ["", ""]
    cells.append(mark(fmt.ratio(ls.sectors_per_request), f.uncoalesced) if ls.global_requests else "")
    if has_local:
        _, lsec = local_of(ls)
        cells.append(mark(fmt.num(lsec), f.local) if lsec else "")
    return cells


def verdict_lines(result, color: bool, width: int = WRAP) -> list[str]:
    issues = line_issues(result)[:VERDICT_LINES]
    head = fmt.paint("verdict:", fmt.BOLD, color)
    if not issues:
        out = [f"{head} no divergence, bank conflicts, uncoalesced global accesses or local memory traffic."]
        hottest = max(result.lines.values(), key=lambda ls: ls.warp_instructions, default=None)
        total = result.metrics.get("smsp__inst_executed.sum", 0)
        if hottest is not None and total:
            out.append(f"  the hottest line is {hottest.line} ({hottest.warp_instructions / total:.0%} of warp "
                       f"instructions): {hottest.text.strip()}")
        return out
    out = [head]
    first_of: dict[str, int] = {}
    for i in issues:
        sentence = i.sentence if i.kind not in first_of else i.repeat_of(first_of[i.kind])
        first_of.setdefault(i.kind, i.line)
        out.extend(textwrap.wrap(sentence, width=max(40, width), initial_indent="  ", subsequent_indent="    ",
                                 break_on_hyphens=False))
    return out
