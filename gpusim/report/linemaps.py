"""A source line's bank and coalescing maps for the HTML report: one map per shared or
global PTX instruction of the line (at most MAX_PER_LINE; an unrolled loop's copies are
told apart in the caption), each offering the distinct executions of that access in the
block drawn (its wavefronts; its sectors and lines) as options, worst first, at most
MAX_OPTIONS, drawn as inline SVG (`svgmap`)."""
from __future__ import annotations

from dataclasses import dataclass
from html import escape

from gpusim.report import svgmap
from gpusim.viz import bank_map, coalescing_map

MAX_PER_LINE = 4
MAX_OPTIONS = 6            # executions of one access a line map offers (its distinct outcomes, worst first)


@dataclass(frozen=True)
class MapOption:
    label: str                 # what the selector shows: "block 0, warp 3, execution 5 of 8: 8 wavefronts"
    caption: str               # HTML-safe text
    svg: str


@dataclass(frozen=True)
class LineMap:
    kind: str                  # 'bank' or 'coalescing'
    line: int
    caption: str               # HTML-safe text of the first option (the worst execution)
    svg: str
    options: tuple = ()        # MapOption per distinct execution, worst first (the first is caption/svg)


def maps_by_line(cap, block: int = 0, warp: int | None = None) -> dict[int, list[LineMap]]:
    """{source line: its bank maps then its coalescing maps} for every line of `cap` with a
    shared or global access in block `block` (and warp `warp`, if given): one map per PTX
    instruction of the line (at most MAX_PER_LINE; an unrolled loop's copies are told apart
    in the caption), offering each distinct execution (wavefronts; sectors and lines) as an
    option, worst first, at most MAX_OPTIONS."""
    out: dict[int, list[LineMap]] = {}
    for kind, space, mod in (("bank", "shared", bank_map), ("coalescing", "global", coalescing_map)):
        draw = svgmap.bank_svg if kind == "bank" else svgmap.coalescing_svg
        for line in cap.lines_with(space):
            for instr in cap.line_instructions(line, space)[:MAX_PER_LINE]:
                runs = cap.select(line, space, instr, block, warp)
                if not runs:
                    continue
                maps, seen = [], {}
                for a in runs:
                    m = mod.from_access(a, cap.kernel_name, cap.source(line), cap)
                    key = (m.wavefronts,) if kind == "bank" else (m.n_sectors, m.n_lines)
                    if key not in seen:
                        seen[key] = m
                maps = sorted(seen.items(), key=lambda kv: tuple(-k for k in kv[0]))[:MAX_OPTIONS]
                options = tuple(MapOption(escape(f"block {m.block}, warp {m.warp}, execution {m.occurrence + 1} of "
                                                 f"{m.executions}: {outcome(m)}"), svgmap.caption(m), draw(m))
                                for _, m in maps)
                out.setdefault(line, []).append(LineMap(kind, line, options[0].caption, options[0].svg, options))
    return dict(sorted(out.items()))


def outcome(m) -> str:
    """A map's count: '8 wavefronts' or '32 sectors in 32 lines'."""
    if hasattr(m, "wavefronts"):
        return f"{m.wavefronts} wavefront{'s' * (m.wavefronts != 1)}"
    return f"{m.n_sectors} sector{'s' * (m.n_sectors != 1)} in {m.n_lines} line{'s' * (m.n_lines != 1)}"
