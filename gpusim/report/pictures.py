"""The pictures of one run, for `gpusim run --plot` and `--html`: the figures of
`gpusim.viz.figures_for` rendered once to PNG bytes, and per-source-line bank and
coalescing maps as inline SVG (`svgmap`).

    pics = pictures(subject, result)          # subject: the launch with its *initial* arguments
    pics.figures["bank_map"]                  # PNG bytes
    pics.line_maps[26]                        # [LineMap(kind='coalescing', ...), ...]

The run's own timed Result gives the roofline and (when it was launched with a
recording) the warp timeline; nothing is launched again. Bank, coalescing and
divergence maps come from a capture of block 0 (`gpusim.viz.capture`, milliseconds
for the programs of `programs/`). A line's maps: warp 0's (or the first
warp running it) first execution of each shared / global PTX instruction of that line,
at most MAX_PER_LINE per kind.

Rendering figures to PNG is most of the pictures' cost (matplotlib's layout and text),
so a run of several programs hands it to a `Renderer`: one worker process that draws
program k's figures while the simulator runs program k+1 (the default machine has two
cores). `pictures(..., renderer=r)` returns at once with pending figures;
`Pictures.wait()` collects their bytes. Without a renderer they are drawn inline.
"""
from __future__ import annotations

import io
import multiprocessing
import pickle
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field

from gpusim.report import svgmap

MAX_PER_LINE = 4
NEEDS_TIMING = ("roofline", "warp_timeline")
DPI = 100                  # PNG resolution of the figures (theirs is 110-130)


@dataclass(frozen=True)
class LineMap:
    kind: str                  # 'bank' or 'coalescing'
    line: int
    caption: str               # HTML-safe text
    svg: str


@dataclass
class Pictures:
    kernel: str
    figures: dict[str, bytes] = field(default_factory=dict)       # figure name -> PNG
    line_maps: dict[int, list[LineMap]] = field(default_factory=dict)
    pending: dict[str, Future] = field(default_factory=dict)     # figures still being drawn by a Renderer

    def wait(self) -> "Pictures":
        """Collect the figures a Renderer is drawing (a no-op when drawn inline)."""
        self.figures.update({name: f.result() for name, f in self.pending.items()})
        self.pending = {}
        return self


class Renderer:
    """Worker processes that draw figures to PNG while the caller goes on (one figure per
    task, so the workers share a program's figures); a context manager. matplotlib is
    loaded once, before the workers fork, so they start warm. Where no worker can start
    (no fork), figures are drawn inline."""

    def __init__(self, workers: int = 2):
        self._pool = None
        _warm_up()                       # once, here: the forked workers inherit matplotlib and its fonts
        if "fork" in multiprocessing.get_all_start_methods():
            self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))

    def submit(self, data: dict) -> dict[str, Future]:
        """{figure name: future PNG} of `gpusim.viz.figures.figure_data`'s {figure name: data}."""
        out: dict[str, Future] = {}
        for name, d in data.items():
            if self._pool is None:
                out[name] = Future()
                out[name].set_result(pngs({name: d})[name])
            else:
                out[name] = self._pool.submit(_render, name, pickle.dumps(d))
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> "Renderer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _warm_up() -> None:
    """Import matplotlib's Agg canvas and load the default font in a worker."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(1, 1))
    fig.text(0.5, 0.5, "0")
    png(fig)


def _render(name: str, blob: bytes) -> bytes:
    return pngs({name: pickle.loads(blob)})[name]


def pngs(data: dict) -> dict[str, bytes]:
    """{figure name: PNG} of `figure_data`'s {figure name: data}."""
    from gpusim.viz.figures import draw_all
    return {name: png(fig) for name, fig in draw_all(data).items()}


def pictures(subject, result=None, *, names=None, line_maps: bool = True, block: int = 0,
             renderer: Renderer | None = None) -> Pictures:
    """Figures (PNG) and per-line maps of `subject` (anything `gpusim.viz.capture`
    takes, with the launch's initial arguments) using `result` (the run's Result) for
    the figures that need timing; without a timed result those are left out rather
    than launched again. With a `renderer` the PNGs are pending until `.wait()`."""
    from gpusim.viz import FIGURES, capture
    from gpusim.viz.capture import subject_of
    from gpusim.viz.figures import figure_data
    s = subject_of(subject)
    timed = result is not None and "gpu__time_duration.sum" in result.metrics
    names = [n for n in (FIGURES if names is None else names) if timed or n not in NEEDS_TIMING]
    cap = capture(s, (block,))
    data = figure_data(s, names, result=result, block=block)[1] if names else {}     # its own capture: ~10 ms
    pics = Pictures(cap.kernel_name)
    if data and renderer is not None:
        pics.pending = renderer.submit(data)
    elif data:
        pics.figures = pngs(data)
    if line_maps:
        pics.line_maps = maps_by_line(cap, block)
    return pics


def png(fig, dpi: float | None = DPI) -> bytes:
    """PNG bytes of `fig` at `dpi` (at most the figure's own), fast zlib level: the draw,
    not the pixels, is most of the cost; level 1 saves ~20% of it for ~30% larger files."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=min(dpi or fig.dpi, fig.dpi), pil_kwargs={"compress_level": 1})
    return buf.getvalue()


def maps_by_line(cap, block: int = 0) -> dict[int, list[LineMap]]:
    """{source line: its bank maps then its coalescing maps} for every line of `cap`
    with a shared or global access."""
    from gpusim.viz import bank_map, coalescing_map
    out: dict[int, list[LineMap]] = {}
    for kind, space, mod, draw in (("bank", "shared", bank_map, svgmap.bank_svg),
                                   ("coalescing", "global", coalescing_map, svgmap.coalescing_svg)):
        for line in cap.lines_with(space):
            firsts: dict[int, object] = {}                  # instruction -> warp 0's first execution of it
            for a in cap.select(line, space, block=block):
                cur = firsts.get(a.instr)
                if cur is None or (cur.warp != 0 and a.warp == 0 and a.occurrence == 0):
                    firsts[a.instr] = a
            chosen = [firsts[i] for i in sorted(firsts)][:MAX_PER_LINE]
            for a in chosen:
                m = mod.from_access(a, cap.kernel_name, cap.source(line))
                out.setdefault(line, []).append(LineMap(kind, line, svgmap.caption(m), draw(m)))
    return dict(sorted(out.items()))

