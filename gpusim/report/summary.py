"""Side-by-side comparison of several runs (a program family such as the reduction
ladder or the three transposes): one row per run, kernel-wide totals.

Columns: warp instructions (and the ratio to the first run), SIMT efficiency, bank
conflicts, global sectors per request, local sectors when any run has them, and
predicted time when every run carries `gpu__time_duration.sum`.
"""
from __future__ import annotations

from gpusim.report import fmt


def render_comparison(results: list[tuple[str, object]], title: str = "comparison", color: bool = False) -> str:
    """`results` is [(label, Result), ...] in the order to show."""
    if not results:
        return ""
    base = fmt.totals(results[0][1].metrics).warp_instructions or 1
    timed = all(fmt.TIME_KEY in r.metrics for _, r in results)
    has_local = any(fmt.local_traffic(r.metrics)[0] for _, r in results)
    headers = ["program", "warp inst", "vs first", "SIMT %", "shared wf", "conflicts", "sect/req"]
    headers += ["local sect"] if has_local else []
    headers += ["time", "speedup"] if timed else []
    rows = []
    t0 = float(results[0][1].metrics[fmt.TIME_KEY]) if timed else 0.0
    for label, r in results:
        t = fmt.totals(r.metrics)
        row = [label, fmt.num(t.warp_instructions), f"{t.warp_instructions / base:.2f}x",
               fmt.pct(t.simt_efficiency), fmt.num(t.shared_wavefronts), fmt.num(t.bank_conflicts),
               fmt.ratio(t.sectors_per_request) if t.global_requests else "-"]
        if has_local:
            row.append(fmt.num(fmt.local_traffic(r.metrics)[1]))
        if timed:
            ns = float(r.metrics[fmt.TIME_KEY])
            row += [fmt.duration(ns), f"{t0 / ns:.2f}x" if ns else "-"]
        rows.append(row)
    body = fmt.table(headers, rows, "l" + "r" * (len(headers) - 1))
    return "\n".join([fmt.paint(f"== {title} ==", fmt.BOLD, color), *body]) + "\n"
