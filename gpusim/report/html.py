"""The HTML report of `gpusim run --html FILE`: one self-contained page (CSS, JS,
images inline; no external URL) per run or program family.

    page = render_html([Section("transpose_shared [rows=192 cols=256]", result, pics)])

Each section is the source view of `sourceview.py` as a table: every line of the
kernel with its counters (warp instructions, SIMT efficiency, shared wavefronts, bank
conflicts, sectors per request, local sectors, stalls), '!' cells of waste in red,
and the line's *heat*: its share of the stall samples (warp-cycles not issuing, from
the timing model) when the result is timed, else its share of warp instructions (the
legend says which), shading the source cell. Then the verdict, the kernel's source and SASS side by side (`sass_view.py`: executions, SIMT and
predicated-on efficiency per SASS instruction), the figures of `gpusim.viz` as PNG
data: URIs, and, for each line with shared or global accesses, a button revealing that
line's bank and coalescing maps (inline SVG, `pictures.py`).
A family's page opens with its comparison table and, when given, its ladder figure
(`gpusim.viz.ladder`: predicted time and counters per member, PNG).

The inline script wires the buttons and, on load, writes what the page holds into
`<body data-...>` (lines, figures, decoded images, toggles, maps, whether a toggle
opens and closes its map), which the browser test reads from the rendered DOM.
Pure functions returning a string; nothing here prints or writes files.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass
from html import escape

from gpusim.report.sourceview import (BAD, HOT, column_names, header, row_cells, source_spans, stall_cell,
                                      stall_total)
from gpusim.report.sass_view import CSS as SASS_CSS
from gpusim.report.sass_view import JS as SASS_JS
from gpusim.report.sass_view import sass_view
from gpusim.report.verdict import line_issues, local_of

FIGURE_TITLES = {
    "bank_map": "Bank map: the most conflicted shared access, its worst execution",
    "coalescing_map": "Coalescing map: the global access moving the most sectors, its worst execution",
    "divergence_map": "Divergence map: one block's warps, lanes active per executed instruction",
    "memory_chart": "Memory chart: requests, sectors, hit rates and bytes from the kernel to DRAM",
    "roofline": "Roofline: the kernel's point under the preset's ceilings",
    "occupancy": "Occupancy and waves",
    "warp_timeline": "Warp timeline: SM 0's warp slots, issue and stall states",
}


@dataclass(frozen=True)
class Section:
    label: str                 # e.g. "transpose_shared [rows=192 cols=256]"
    result: object             # gpusim.result.Result
    pictures: object = None    # gpusim.report.pictures.Pictures, or None for the table alone


def render_html(sections: list[Section], title: str = "gpusim report", comparison: str | None = None,
                ladder: bytes | None = None) -> str:
    """The page (see the module docstring); `comparison`: a family's comparison table text;
    `ladder`: its ladder figure as PNG bytes."""
    body = [f"<h1>{escape(title)}</h1>"]
    if len(sections) > 1:
        body.append("<nav>" + " · ".join(f'<a href="#s{i}">{escape(s.label)}</a>'
                                          for i, s in enumerate(sections)) + "</nav>")
    if comparison:
        body.append(f'<pre class="comparison">{escape(comparison)}</pre>')
    if ladder:
        body.append(ladder_html(ladder))
    for i, s in enumerate(sections):
        body.append(section_html(s, f"s{i}"))
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}{SASS_CSS}</style></head>\n"
            f"<body>\n{''.join(body)}\n<script>{JS.replace('/*SASS*/', SASS_JS)}</script>\n</body></html>\n")


def ladder_html(png: bytes) -> str:
    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return (f'<figure class="ladder" data-figure="ladder"><img alt="ladder" src="{src}"><figcaption>Ladder: '
            f"each member's predicted time, and its counters below</figcaption></figure>")


def heat_of(result) -> tuple[dict[int, float], str]:
    """({line: share}, what the share is of): stall samples when timed, else warp instructions."""
    total = stall_total(result.metrics)
    if total:
        share = {n: sum(v for k, v in ls.metrics.items() if k.startswith("smsp__pcsamp_warps_issue_stalled_")
                        and not k.endswith("_selected")) / total for n, ls in result.lines.items()}
        return share, "its share of the stall samples (warp-cycles not issuing, timing model)"
    total = result.metrics.get("smsp__inst_executed.sum", 0) or 0
    share = {n: ls.warp_instructions / total if total else 0.0 for n, ls in result.lines.items()}
    return share, "its share of the warp instructions executed"


def section_html(s: Section, sid: str) -> str:
    r = s.result
    head = header(r, s.label, False)
    out = [f'<section id="{sid}" class="program"><h2>{escape(head[0].strip("= "))}</h2>',
           '<div class="summary">' + "".join(f"<div>{escape(h)}</div>" for h in head[1:]) + "</div>"]
    out.append(source_table(s, sid))
    text, spans = source_spans(r)
    out.append(sass_view(r, sid, text, spans))
    issues = line_issues(r)[:3]
    out.append('<h3>Verdict</h3><ul class="verdict">' + ("".join(f"<li>{escape(i.sentence)}</li>" for i in issues)
                                                        or "<li>no divergence, bank conflicts, uncoalesced global "
                                                           "accesses or local memory traffic</li>") + "</ul>")
    figs = s.pictures.figures if s.pictures is not None else {}
    if figs:
        out.append('<h3>Figures</h3><div class="figures">')
        for name, data in figs.items():
            src = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
            which = getattr(s.pictures, "captions", {}).get(name)
            title = FIGURE_TITLES.get(name, name) + (f" ({which})" if which else "")
            out.append(f'<figure class="fig" data-figure="{escape(name)}"><img alt="{escape(name)}" src="{src}">'
                       f"<figcaption>{escape(title)}</figcaption></figure>")
        out.append("</div>")
    out.append("</section>")
    return "\n".join(out)


def source_table(s: Section, sid: str) -> str:
    r = s.result
    lines = r.lines
    text, spans = source_spans(r)
    total_inst = r.metrics.get("smsp__inst_executed.sum", 0) or 0
    has_local = any(local_of(ls)[0] for ls in lines.values())
    total_stall = stall_total(r.metrics)
    heat, heat_what = heat_of(r)
    top = max(heat.values(), default=0.0) or 1.0
    maps = s.pictures.line_maps if s.pictures is not None else {}
    heads = column_names(r, has_local)
    heads += ["stalls (top reason)"] * bool(total_stall) + ["heat", "maps", "source"]
    ncol = len(heads)
    out = [f'<p class="legend">Heat: each line shaded by {escape(heat_what)}, relative to the hottest line '
           f'<span class="swatch" style="background:{heat_colour(1.0)}"></span>. '
           f'<span class="bad">{BAD}</span> waste (divergence, bank conflict, uncoalesced, local memory); '
           f'{HOT} hot (&ge; 20% of warp instructions). Buttons show a line\'s bank / coalescing maps '
           f"(each access's worst execution in the block drawn; a selector offers its other outcomes).</p>",
           '<table class="source"><thead><tr>' + "".join(f"<th>{escape(h)}</th>" for h in heads)
           + "</tr></thead><tbody>"]
    for i, (start, end) in enumerate(spans):
        if i:
            out.append(f'<tr class="gap"><td colspan="{ncol}">…</td></tr>')
        for n in range(start, end + 1):
            src = text[n - 1] if 0 < n <= len(text) else (lines[n].text if n in lines else "")
            cells = row_cells(r, lines.get(n), n, total_inst, has_local, False)
            if total_stall:
                cells.append(stall_cell(lines.get(n), total_stall))
            h = heat.get(n, 0.0)
            tds = [f"<td>{_cell(c)}</td>" for c in cells]
            tds.append(f"<td>{100 * h:.0f}%</td>" if h else "<td></td>")
            line_maps = maps.get(n, [])
            if line_maps:
                kinds = [k for k in ("bank", "coalescing") if any(m.kind == k for m in line_maps)]
                tds.append(f'<td><button type="button" class="map-toggle" data-target="{sid}-m{n}" '
                           f'aria-expanded="false">{" + ".join(kinds)}</button></td>')
            else:
                tds.append("<td></td>")
            style = f' style="background:{heat_colour(h / top)}"' if h else ""
            tds.append(f'<td class="code"{style}>{escape(src)}</td>')
            out.append(f'<tr class="src" data-line="{n}">' + "".join(tds) + "</tr>")
            if line_maps:
                out.append(f'<tr class="map-row" id="{sid}-m{n}" hidden><td colspan="{ncol}"><div class="maps">'
                           + "".join(line_map_html(m, f"{sid}-m{n}-{k}") for k, m in enumerate(line_maps))
                           + "</div></td></tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def line_map_html(m, mid: str) -> str:
    """One line map: its SVG and caption, and where the access ran differently in other
    executions (warps, loop iterations) a selector of them, worst first."""
    options = getattr(m, "options", ()) or ()
    if len(options) <= 1:
        return (f'<figure class="line-map" data-kind="{m.kind}">{m.svg}<figcaption>line {m.line}, {m.kind} map: '
                f"{m.caption}</figcaption></figure>")
    select = (f'<label class="map-pick">execution: <select data-map="{mid}">'
              + "".join(f'<option value="{k}">{o.label}</option>' for k, o in enumerate(options)) + "</select></label>")
    views = "".join(f'<div class="map-option" data-map="{mid}" data-option="{k}"{"" if k == 0 else " hidden"}>{o.svg}'
                    f"<figcaption>line {m.line}, {m.kind} map: {o.caption}</figcaption></div>"
                    for k, o in enumerate(options))
    return f'<figure class="line-map" data-kind="{m.kind}">{select}{views}</figure>'


def _cell(c: str) -> str:
    """A source-view cell ('12.00!', '44,160*', '100.0 ') as HTML, waste in red."""
    c = c.rstrip()
    if c.endswith(BAD):
        return f'<span class="bad">{escape(c)}</span>'
    if c.endswith(HOT):
        return f'<span class="hot">{escape(c)}</span>'
    return escape(c)


def heat_colour(x: float) -> str:
    """Shade for a heat fraction 0..1 (of the hottest line)."""
    return f"rgba(230, 85, 13, {0.08 + 0.6 * max(0.0, min(1.0, x)):.3f})"


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.4em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:2em}h3{font-size:1em}
.summary div,pre,.code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
table.source{border-collapse:collapse;font-size:12px}
table.source td,table.source th{padding:1px 6px;text-align:right;white-space:nowrap;vertical-align:top}
table.source th{border-bottom:1px solid #999;position:sticky;top:0;background:#fff}
table.source td.code,table.source th:last-child{text-align:left;white-space:pre}
tr.gap td{text-align:left;color:#888}
.bad{color:#c00;font-weight:600}.hot{color:#a60}
.swatch{display:inline-block;width:1.2em;height:.9em;vertical-align:middle}
.map-toggle{font-size:11px;padding:0 4px;cursor:pointer}
.maps{display:flex;flex-wrap:wrap;gap:12px;padding:6px 0}
tr.map-row td{white-space:normal;text-align:left}
figure{margin:0}figure.line-map{max-width:100%}
figure.line-map figcaption{font-size:12px;max-width:440px;white-space:normal;overflow-wrap:anywhere}
.map-pick{display:block;font-size:11px;margin-bottom:4px}.map-pick select{font-size:11px;max-width:420px}
.figures{display:flex;flex-wrap:wrap;gap:16px}.figures figure{max-width:100%}
.figures figcaption{font-size:14px;max-width:900px}
.figures img{max-width:100%;height:auto;border:1px solid #ddd}
.legend{font-size:12px;color:#444}nav{margin-bottom:1em}
figure.ladder img{max-width:100%;height:auto;border:1px solid #ddd}
"""

JS = """
(function () {
/*SASS*/
  document.querySelectorAll('.map-pick select').forEach(function (sel) {
    sel.addEventListener('change', function () {
      document.querySelectorAll('.map-option[data-map="' + sel.dataset.map + '"]').forEach(function (v) {
        v.hidden = v.dataset.option !== sel.value;
      });
    });
  });
  document.querySelectorAll('.map-toggle').forEach(function (b) {
    b.addEventListener('click', function () {
      var row = document.getElementById(b.dataset.target);
      row.hidden = !row.hidden;
      b.setAttribute('aria-expanded', String(!row.hidden));
    });
  });
  function selfCheck() {
    var d = document.body.dataset, q = function (s) { return document.querySelectorAll(s); };
    d.lines = q('tr.src').length;
    d.figures = q('figure.fig img').length;
    d.imagesDecoded = Array.prototype.filter.call(q('figure.fig img'),
      function (i) { return i.complete && i.naturalWidth > 0; }).length;
    d.toggles = q('.map-toggle').length;
    d.maps = q('.map-row figure.line-map').length;
    d.mapOptions = q('.map-row .map-option').length;
    var sel = document.querySelector('.map-pick select');
    if (sel && sel.options.length > 1) {
      sel.value = '1'; sel.dispatchEvent(new Event('change'));
      var shown = document.querySelectorAll('.map-option[data-map="' + sel.dataset.map + '"]:not([hidden])');
      d.selectorWorks = shown.length === 1 && shown[0].dataset.option === '1' ? '1' : '0';
      sel.value = '0'; sel.dispatchEvent(new Event('change'));
    }
    var t = document.querySelector('.map-toggle');
    if (t) {
      var row = document.getElementById(t.dataset.target);
      t.click(); var opened = !row.hidden; t.click();
      d.toggleWorks = opened && row.hidden ? '1' : '0';
    }
    var sv = document.querySelector('.sass-view');
    if (sv) {
      var was = sv.open;
      sv.open = true;
      var row = sv.querySelector('.pane-src tr.has-sass');
      if (row) { row.click(); d.sassMarked = sv.dataset.marked; }
      d.sassRows = sv.querySelectorAll('.pane-sass tbody tr').length;
      sv.querySelectorAll('tr.mark').forEach(function (r) { r.classList.remove('mark'); });
      sv.open = was;
    }
    d.ready = '1';
  }
  if (document.readyState === 'complete') selfCheck(); else window.addEventListener('load', selfCheck);
})();
"""
