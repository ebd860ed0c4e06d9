"""Source and SASS side by side, for the HTML report (as Nsight Compute's Source page shows
"Source and SASS"): the kernel's lines on the left, the SASS listing on the right in
program order, each instruction with the line it came from, its executions (warp
instructions), active threads and predicated-on threads per executed instance
(`Result.sass`: `inst`, `thread_inst`, `thread_inst_pred_on`). Clicking a source line
marks its SASS instructions (and the first of them is scrolled into view); clicking an
instruction marks its line. Guarded instructions (`@P0 ...`) whose predicated-on lanes
are fewer than the active ones are shown in red: ptxas predicated that work. Each instruction
shows ptxas' control bits as CuAssembler writes them (`[B------:R-:W1:Y:S04]`: the scoreboards it
waits on, the read and write barrier it sets, yield, its stall count; `frontend/sass/control.py`).

A pure function returning HTML; the page's script (`html.JS`) wires the clicks."""
from __future__ import annotations

from html import escape

import numpy as np


def sass_view(result, sid: str, text: list[str], spans: list[tuple[int, int]]) -> str:
    """The side-by-side view of `result` (empty when it has no SASS counts)."""
    sass = getattr(result, "sass", None)
    if sass is None or not len(sass.instructions):
        return ""
    inst = np.asarray(sass.inst, float)
    thr = np.asarray(sass.thread_inst, float)
    on = np.asarray(sass.thread_inst_pred_on, float)
    lines_with = {ins.source_line for ins in sass.instructions if ins.source_line}
    src = []
    for start, end in spans:
        for n in range(start, end + 1):
            code = text[n - 1] if 0 < n <= len(text) else ""
            cls = ' class="has-sass"' if n in lines_with else ""
            src.append(f'<tr data-line="{n}"{cls}><td>{n}</td><td class="code">{escape(code)}</td></tr>')
    rows = []
    for k, ins in enumerate(sass.instructions):
        n = ins.source_line or 0
        simt = f"{thr[k] / (32 * inst[k]):.0%}" if inst[k] else ""
        pred = f"{on[k] / (32 * inst[k]):.0%}" if inst[k] else ""
        off = inst[k] and ins.predicate and on[k] < thr[k]
        where = ins.function or (str(n) if n else "")
        cls = ' class="pred-off"' if off else ""
        ctrl = getattr(ins, "control", None)
        rows.append(f'<tr data-line="{n}"{cls}><td>{where}</td>'
                    f"<td>{ins.offset:04x}</td><td class=\"code\">{ctrl.text if ctrl is not None else ''}</td>"
                    f"<td class=\"code\">{escape(ins.text)}</td>"
                    f"<td>{int(inst[k]):,}</td><td>{simt}</td><td>{pred}</td></tr>")
    return (f'<details class="sass-view" id="{sid}-sass"><summary>Source and SASS side by side '
            f"({len(sass.instructions)} SASS instructions; click a line to mark its instructions)</summary>"
            f'<div class="sass-panes"><div class="pane"><table class="pane-src"><thead><tr><th>line</th>'
            f"<th>source</th></tr></thead><tbody>{''.join(src)}</tbody></table></div>"
            f'<div class="pane"><table class="pane-sass"><thead><tr><th>line</th><th>offset</th><th>control</th><th>SASS</th>'
            f"<th>warp inst</th><th>SIMT %</th><th>pred %</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"</div></div></details>")


CSS = """
.sass-view{margin:1em 0}.sass-view summary{cursor:pointer;font-weight:600}
.sass-panes{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:10px;margin-top:6px}
.sass-panes .pane{max-height:480px;overflow:auto;border:1px solid #ddd}
.sass-panes table{border-collapse:collapse;font-size:12px;width:100%}
.sass-panes td,.sass-panes th{padding:0 6px;white-space:nowrap;text-align:right}
.sass-panes td.code{text-align:left;white-space:pre;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.sass-panes th{position:sticky;top:0;background:#fff;border-bottom:1px solid #999}
.sass-panes tr.has-sass{cursor:pointer}.sass-panes tr.mark td{background:#ffe8a8}
.sass-panes tr.pred-off td{color:#b00}
"""

JS = """
  document.querySelectorAll('.sass-view').forEach(function (v) {
    function mark(line) {
      v.querySelectorAll('tr.mark').forEach(function (r) { r.classList.remove('mark'); });
      var first = null;
      v.querySelectorAll('tr[data-line="' + line + '"]').forEach(function (r) {
        r.classList.add('mark');
        if (!first && r.closest('.pane-sass')) first = r;
      });
      if (first) first.scrollIntoView({block: 'nearest'});
      v.dataset.marked = v.querySelectorAll('.pane-sass tr.mark').length;
    }
    v.querySelectorAll('tr[data-line]').forEach(function (r) {
      r.addEventListener('click', function () { mark(r.dataset.line); });
    });
  });
"""
