"""Small inline SVG drawings of one warp's memory access, for the HTML report's
per-line maps: the bank map (lanes x banks, each touched cell coloured by the
wavefront serving it) and the coalescing map (lanes -> the 32-byte sectors of the
128-byte lines they touch).

They draw the data of `gpusim.viz.bank_map.BankMap` and
`gpusim.viz.coalescing_map.CoalescingMap` (the exact per-lane offsets of the
functional core), the same data as those modules' matplotlib `plot`s, but as a few
kilobytes of SVG text built directly: a page with a map for every line costs
milliseconds instead of a matplotlib draw per map. Each cell has a `<title>`
(hover: lane, word, bank, wavefront / address, sector). Pure functions returning
strings.
"""
from __future__ import annotations

from html import escape

import numpy as np

from gpusim.viz.capture import where_text

CELL = 11                     # px per lane row and per bank column
LEFT, TOP = 34, 30            # room for the lane and bank labels


def _palette(n: int) -> list[str]:
    """n colours from dark blue to yellow (viridis-like), one per wavefront."""
    stops = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]
    if n <= 1:
        return ["#21918c"]
    out = []
    for k in range(n):
        t = k / (n - 1) * (len(stops) - 1)
        i = min(int(t), len(stops) - 2)
        f = t - i
        r, g, b = (round(a + (c - a) * f) for a, c in zip(stops[i], stops[i + 1]))
        out.append(f"#{r:02x}{g:02x}{b:02x}")
    return out


def bank_svg(m) -> str:
    """SVG of a BankMap: 32 lanes (rows) x 32 banks (columns), and a colour legend of the
    wavefronts below."""
    n = max(m.wavefronts, 1)
    colours = _palette(n)
    w, h = LEFT + 32 * CELL + 4, TOP + 32 * CELL + 34
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="map bank-map" width="{w}" height="{h}" '
           f'viewBox="0 0 {w} {h}" role="img">',
           f'<rect x="{LEFT}" y="{TOP}" width="{32 * CELL}" height="{32 * CELL}" fill="#fff" stroke="#bbb"/>']
    for k in range(0, 32, 4):
        out.append(f'<text x="{LEFT + k * CELL + CELL / 2}" y="{TOP - 4}" font-size="9" '
                   f'text-anchor="middle">{k}</text>')
        out.append(f'<text x="{LEFT - 4}" y="{TOP + k * CELL + CELL - 2}" font-size="9" text-anchor="end">{k}</text>')
    out.append(f'<text x="{LEFT}" y="11" font-size="10">bank (word % 32) &#8594;   rows: lanes 0-31</text>')
    for lane, bank in zip(*np.nonzero(m.grid_word >= 0)):
        wf, word = int(m.grid_wavefront[lane, bank]), int(m.grid_word[lane, bank])
        out.append(f'<rect x="{LEFT + bank * CELL}" y="{TOP + lane * CELL}" width="{CELL}" height="{CELL}" '
                   f'fill="{colours[wf % n]}" stroke="#fff" stroke-width="0.5"><title>lane {lane}: word {word}, '
                   f'bank {bank}, wavefront {wf}</title></rect>')
    step = getattr(m, "lanes_per_phase", 32)          # ldmatrix/stmatrix: a line between phases of 8 lanes
    for k in range(step, 32, step):
        out.append(f'<line x1="{LEFT}" y1="{TOP + k * CELL}" x2="{LEFT + 32 * CELL}" y2="{TOP + k * CELL}" '
                   f'stroke="#333" stroke-width="1.2"><title>phase {k // step}: lanes {k}-{k + step - 1}</title></line>')
    out.append(_legend(colours, TOP + 32 * CELL + 10))
    out.append("</svg>")
    return "".join(out)


def _legend(colours: list[str], y: float) -> str:
    """Swatches of the wavefront colours (replay 0 .. n-1, as the PNG's colour bar), five of them
    across the range when there are many."""
    n = len(colours)
    parts = [f'<text x="{LEFT}" y="{y + 9}" font-size="9">wavefront:</text>']
    shown = list(range(n)) if n <= 8 else [0, n // 4, n // 2, 3 * n // 4, n - 1]
    x = LEFT + 58
    for k in shown:
        parts.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{colours[k]}"/>'
                     f'<text x="{x + 13}" y="{y + 9}" font-size="9">{k}</text>')
        x += 34
    if n > 8:
        parts.append(f'<text x="{x}" y="{y + 9}" font-size="9">({n} in all)</text>')
    return "".join(parts)


def coalescing_svg(m, sector_bytes: int = 32, line_bytes: int = 128) -> str:
    """SVG of a CoalescingMap: one row per lane, the touched 128-byte lines side by side
    (only those), their 32-byte sectors shaded where moved, a mark per lane's bytes."""
    nl = max(m.n_lines, 1)
    px_line = max(40, min(128, 640 // nl))            # pixels per 128-byte line
    scale = px_line / line_bytes
    w, h = max(LEFT + nl * px_line + 4, 300), TOP + 12 + 32 * CELL + 22
    top = TOP + 12                                    # two title lines
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="map coalescing-map" width="{w}" height="{h}" '
           f'viewBox="0 0 {w} {h}" role="img">',
           f'<text x="4" y="11" font-size="10">{m.n_lines} line{"s" * (m.n_lines != 1)} of 128 B touched '
           f'(only those drawn);</text>',
           f'<text x="4" y="24" font-size="10">shaded: the {m.n_sectors} sector{"s" * (m.n_sectors != 1)} of 32 B '
           f'moved; rows: lanes</text>']
    li = np.searchsorted(m.lines, m.sectors, "right") - 1
    slot = li * 4 + ((m.sectors - m.lines[li]) // np.uint64(sector_bytes)).astype(np.int64)
    for k, addr in zip(slot.tolist(), m.sectors.tolist()):
        out.append(f'<rect x="{LEFT + k * sector_bytes * scale:.1f}" y="{top}" width="{sector_bytes * scale:.1f}" '
                   f'height="{32 * CELL}" fill="#f4c06a"><title>sector {addr:#x}</title></rect>')
    for x in range(0, nl * line_bytes + 1, sector_bytes):
        major = x % line_bytes == 0
        out.append(f'<line x1="{LEFT + x * scale:.1f}" y1="{top}" x2="{LEFT + x * scale:.1f}" y2="{top + 32 * CELL}" '
                   f'stroke="{"#333" if major else "#bbb"}" stroke-width="{1.2 if major else 0.5}"/>')
    for k in range(0, 32, 4):
        out.append(f'<text x="{LEFT - 4}" y="{top + k * CELL + CELL - 2}" font-size="9" text-anchor="end">{k}</text>')
    every = max(1, -(-nl * 70 // (nl * px_line)))      # an address label needs ~70 px
    for k, base in enumerate(m.lines.tolist()):
        if k % every == 0:
            out.append(f'<text x="{LEFT + (k + 0.5) * px_line:.1f}" y="{top + 32 * CELL + 14}" font-size="9" '
                       f'text-anchor="middle">{base:#x}</text>')
    x0 = m.cache_line * line_bytes + (m.address - m.lines[m.cache_line]).astype(np.int64)
    wmark = max(m.access_bytes * scale, 2.0)
    for lane, x, a in zip(m.lane.tolist(), x0.tolist(), m.address.tolist()):
        out.append(f'<rect x="{LEFT + x * scale:.1f}" y="{top + lane * CELL + 2}" width="{wmark:.1f}" '
                   f'height="{CELL - 4}" fill="#1f5fa8"><title>lane {lane}: {a:#x} ({m.access_bytes} B)</title></rect>')
    out.append("</svg>")
    return "".join(out)


def caption(m) -> str:
    """One line of HTML describing the access drawn (instruction, warp, the count)."""
    if hasattr(m, "wavefronts"):
        phases = (f": {' + '.join(map(str, m.phase_wavefronts))}, one 8 x 8 matrix per phase"
                  if getattr(m, "phase_wavefronts", ()) else "")
        conflict = m.conflict_text()
        conflict = conflict if conflict == "conflict-free" else conflict.replace("conflict", "bank conflict")
        what = f"{m.wavefronts} wavefront{'s' * (m.wavefronts != 1)}{phases} ({conflict})"
    else:
        what = (f"{m.n_sectors} sector{'s' * (m.n_sectors != 1)} in {m.n_lines} line{'s' * (m.n_lines != 1)}, "
                f"{100 * m.efficiency:.0f}% of the bytes moved used")
    return escape(f"{where_text(m)}: {what}")
