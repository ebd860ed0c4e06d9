"""The pictures of one run, for `gpusim run --plot` and `--html`: the figures of
`gpusim.viz.figures_for` rendered once to PNG bytes, and per-source-line bank and
coalescing maps as inline SVG (`svgmap`).

    pics = pictures(subject, result)          # subject: the launch with its *initial* arguments
    pics.figures["bank_map"]                  # PNG bytes
    pics.line_maps[26]                        # [LineMap(kind='coalescing', ...), ...]

The run's own timed Result gives the roofline and (when it was launched with a
recording) the warp timeline; nothing is launched again. Bank, coalescing and
divergence maps come from a capture of block 0 or the block asked for
(`gpusim.viz.capture`, milliseconds for the programs of `programs/`; the divergence
map's block, when not asked for, is chosen once the run's SIMT efficiency is known);
a line's maps are `linemaps.py`'s.

Rendering figures to PNG is most of the pictures' cost (matplotlib's ticks, layout and
text: 35-90 ms a figure), so `gpusim run` hands it to a `Renderer`: two worker processes,
forked from a supervisor that loaded matplotlib while the caller loaded its programs,
drawing a program's figures while the simulator runs it (those needing no timing are
handed over before the launch) and the next ones. `pictures(..., renderer=r)` returns
at once with pending figures; `Pictures.wait()` collects their bytes. Without a
renderer they are drawn inline.

Cost (transpose: 3 programs, 18 figures; 2 cores): the workers' drawing ~1.0 s of CPU
(ticks ~0.3 s of it, drawn from one Tick per axis: `gpusim.viz._ticks`), matplotlib's
import 0.26 s (once, in the supervisor), this process ~0.1 s (capture, figure data,
line maps, HTML). Choices measured for it: PNGs encoded here (`encode_png`), text
unhinted (`TEXT`), the workers' collector frozen and thresholded and their malloc
keeping freed buffers (`_worker_start`), the figure modules imported before the fork
(`_preload`), the workers niced (`NICE`: when the cores are contended, the caller's
simulation, which the last figures wait for, goes first; measured neutral on an idle
2-core machine, 5-10% less wall time with two other busy processes).
"""
from __future__ import annotations

import ctypes
import gc
import importlib
import multiprocessing
import os
import pickle
import signal
import struct
import threading
import zlib
from concurrent.futures import Future
from dataclasses import dataclass, field
from multiprocessing.connection import wait

import numpy as np

from gpusim import api
from gpusim.report.linemaps import LineMap, MapOption, maps_by_line  # noqa: F401 (the report's API)
from gpusim.viz import FIGURES
from gpusim.viz.capture import capture, sample_blocks, subject_of, where_text
from gpusim.viz.figures import draw_all, figure_data

NEEDS_TIMING = ("memory_chart", "roofline", "warp_timeline")     # drawn from the run's own timed Result
DPI = 100                  # PNG resolution of the figures (theirs is 110-130)
NICE = 10                  # the workers yield a core to the caller's simulation, which the last figures wait for
TEXT = {"text.hinting": "no_hinting"}   # glyphs unhinted: the same text a shade softer, ~10% less drawing time


SURE_SIMT = 0.99           # a kernel at least this SIMT-efficient: every block alike, block 0's divergence map


@dataclass
class Pictures:
    kernel: str
    figures: dict[str, bytes] = field(default_factory=dict)       # figure name -> PNG
    line_maps: dict[int, list[LineMap]] = field(default_factory=dict)
    pending: dict[str, Future] = field(default_factory=dict)     # figures still being drawn by a Renderer
    captions: dict[str, str] = field(default_factory=dict)       # figure name -> which block/warp/execution
    capture: object = None                                       # the capture the maps came from
    deferred: tuple = ()                                         # figures waiting for the run's Result

    def describe(self, data: dict) -> None:
        """Caption each figure of `figure_data`'s {name: data} by the block, warp and execution drawn."""
        for name, d in data.items():
            if name in ("bank_map", "coalescing_map"):
                self.captions[name] = f"line {d.line}: {where_text(d)}"
            elif name == "divergence_map":
                why = "" if d.why in ("chosen", "") or d.why.startswith("block ") else f", {d.why}"
                self.captions[name] = f"block {d.block}{why}, all {len(d.warps)} warps"

    def wait(self) -> "Pictures":
        """Collect the figures a Renderer is drawing (a no-op when drawn inline); figures
        in `gpusim.viz.FIGURES` order whenever they were asked for."""
        done = {**self.figures, **{name: f.result() for name, f in self.pending.items()}}
        order = {n: k for k, n in enumerate(FIGURES)}
        self.figures = {n: done[n] for n in sorted(done, key=lambda n: order.get(n, len(order)))}
        self.pending = {}
        return self

    def draw(self, data: dict, renderer: "Renderer | None" = None) -> None:
        """Add the figures of `figure_data`'s {name: data}: drawn here, or pending on `renderer`."""
        if data and renderer is not None:
            self.pending.update(renderer.submit(data))
        elif data:
            self.figures.update(pngs(data))


class Renderer:
    """Worker processes that draw figures to PNG while the caller goes on (one figure per
    task, so the workers share a program's figures); a context manager (leaving it on an
    exception stops the workers at once). One supervisor process, forked at the start,
    loads matplotlib and then forks the workers, so they start warm while the caller
    loads and simulates its programs, and matplotlib is imported once, off the caller's
    path. Where no process can fork, figures are drawn inline."""

    def __init__(self, workers: int = 2):
        self._futures: dict[int, Future] = {}
        self._next = 0
        self._proc = None
        if "fork" not in multiprocessing.get_all_start_methods():
            return
        _preload()
        ctx = multiprocessing.get_context("fork")
        self._tasks = ctx.Queue()                         # (key, name, pickled data); None: stop
        self._recv, send = ctx.Pipe(duplex=False)           # results, one pickled (key, ok, PNG | error) each
        self._proc = ctx.Process(target=_supervise, args=(self._tasks, send, ctx.Lock(), workers),
                                 name="gpusim-pictures")
        self._proc.start()
        send.close()                                       # the workers hold the write end: EOF when they are gone
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._collect, name="gpusim-pictures-results", daemon=True)
        self._reader.start()
        self._workers = workers

    def submit(self, data: dict) -> dict[str, Future]:
        """{figure name: future PNG} of `gpusim.viz.figures.figure_data`'s {figure name: data}."""
        out: dict[str, Future] = {}
        for name, d in data.items():
            f = out[name] = Future()
            if self._proc is None:
                f.set_result(pngs({name: d})[name])
                continue
            with self._lock:
                key, self._next = self._next, self._next + 1
                self._futures[key] = f
            self._tasks.put((key, name, pickle.dumps(d)))
        return out

    def _collect(self) -> None:
        """Resolve the futures from the workers' results (a thread of the caller)."""
        while True:
            ready = wait([self._recv, self._proc.sentinel])
            if self._recv not in ready:
                break                                      # the supervisor is gone and nothing is left to read
            try:
                key, ok, payload = pickle.loads(self._recv.recv_bytes())
            except EOFError:
                break
            if key is None:                                # a worker died: what it held is lost
                self._fail(payload)
                continue
            with self._lock:
                f = self._futures.pop(key, None)
            if f is not None:                              # (None: already failed when a worker died)
                f.set_result(payload) if ok else f.set_exception(payload)
        self._fail("the picture workers stopped before drawing every figure")

    def _fail(self, why: str) -> None:
        with self._lock:
            pending, self._futures = self._futures, {}
        for f in pending.values():
            f.set_exception(RuntimeError(why))

    def close(self, cancel: bool = False) -> None:
        """Let the workers draw what they were given and stop (`cancel`: stop them now)."""
        if self._proc is None:
            return
        if cancel:
            self._proc.terminate()                         # the supervisor kills its workers
            self._tasks.cancel_join_thread()               # what was not sent yet is dropped
        else:
            for _ in range(self._workers):
                self._tasks.put(None)
        self._tasks.close()
        self._tasks.join_thread()
        self._proc.join()
        self._reader.join()
        self._recv.close()
        self._proc = None

    def __enter__(self) -> "Renderer":
        return self

    def __exit__(self, kind, *exc) -> None:
        self.close(cancel=kind is not None)


def _preload() -> None:
    """Import the figure modules before forking: the caller needs them anyway (for the
    figures' data) and the workers inherit them instead of each importing (and, without
    bytecode caches, compiling) them again on their first figure."""

    for name in (*FIGURES, "ladder"):
        importlib.import_module(f"gpusim.viz.{name}")


def _supervise(tasks, send, lock, workers: int) -> None:
    """The Renderer's supervisor: loads matplotlib, forks the workers, reports any that dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)           # ^C is the caller's; it stops us through close()
    os.nice(NICE)
    _worker_start()
    kids: set[int] = set()

    def stop(*_):
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
                os.waitpid(k, 0)
            except (ProcessLookupError, ChildProcessError):     # already gone
                pass
        os._exit(1)
    signal.signal(signal.SIGTERM, stop)
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            code = 1
            try:
                _serve(tasks, send, lock)
                code = 0
            finally:
                os._exit(code)
        kids.add(pid)
    while kids:
        pid, status = os.waitpid(-1, 0)
        kids.discard(pid)
        if status:
            with lock:
                send.send_bytes(pickle.dumps((None, False, f"a picture worker died (wait status {status})")))


def _serve(tasks, send, lock) -> None:
    """A worker: draw tasks until told to stop."""
    while (job := tasks.get()) is not None:
        key, name, blob = job
        try:
            msg = pickle.dumps((key, True, _render(name, blob)))
        except Exception as e:                                          # the caller's future raises it
            try:
                msg = pickle.dumps((key, False, e))
            except Exception:
                msg = pickle.dumps((key, False, RuntimeError(f"drawing {name}: {type(e).__name__}: {e}")))
        with lock:
            send.send_bytes(msg)


def _warm_up() -> None:
    """Import matplotlib's Agg canvas and what the figures use (image, bars, legend, the
    fonts at their sizes) by drawing a small figure, once, before the workers fork."""
    from matplotlib.figure import Figure  # lazy: matplotlib, only when a figure is drawn
    from matplotlib.patches import Patch  # lazy: matplotlib, only when a figure is drawn

    from gpusim.viz import _ticks  # noqa: F401  (the figures' tick drawing, with matplotlib)
    fig = Figure(figsize=(2, 2))
    ax = fig.subplots()
    ax.imshow([[0.0, 1.0]], cmap="viridis")
    ax.bar([0], [1])
    ax.legend(handles=[Patch(color="C0", label="0")], fontsize=7)
    for size in (6, 8, 9):
        ax.text(0, 0, "0", fontsize=size)
    ax.set_title("0", fontsize=8)
    png(fig)


def _worker_start() -> None:
    """The workers' start (in the supervisor, before it forks them): matplotlib loaded and
    warm; the objects inherited from the caller frozen out of the cyclic collector, and
    young collections rarer (a figure allocates tens of thousands of short-lived objects;
    the default thresholds spent ~10% of the drawing time in the collector); and glibc's
    malloc told to keep what it frees (a figure's canvas and PNG buffers, megabytes each,
    were mapped and unmapped anew: ~1/3 of a worker's page faults, ~5% of its time)."""
    gc.freeze()
    gc.set_threshold(20_000, 50, 1000)
    _keep_freed_memory()
    _warm_up()


def _keep_freed_memory() -> None:
    """mallopt: blocks up to 256 MiB from the heap, not mmap; the heap never trimmed (glibc only)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt              # this process's C library
    except (OSError, AttributeError):                    # none with mallopt: its defaults stay
        return
    mallopt(-3, 256 << 20)                               # M_MMAP_THRESHOLD
    mallopt(-1, 1 << 30)                                 # M_TRIM_THRESHOLD


def _render(name: str, blob: bytes) -> bytes:
    return pngs({name: pickle.loads(blob)})[name]


def pngs(data: dict) -> dict[str, bytes]:
    """{figure name: PNG} of `figure_data`'s {figure name: data}."""
    return {name: png(fig) for name, fig in draw_all(data).items()}


def pictures(subject, result=None, *, names=None, line_maps: bool = True, block: int | None = None,
             warp: int | None = None, renderer: Renderer | None = None) -> Pictures:
    """Figures (PNG) and per-line maps of `subject` (anything `gpusim.viz.capture`
    takes, with the launch's initial arguments) using `result` (the run's Result) for
    the figures that need it; without one those are left out rather than launched again
    (`add_timed` adds them once the run has one: the others can be drawn while it runs).
    `block`, `warp`: the maps' (default: block 0, the worst execution of each access, and
    for the divergence map the most divergent of a sample of blocks when the run shows
    divergence). With a `renderer` the PNGs are pending until `.wait()`."""
    s = subject_of(subject)
    names = [n for n in (FIGURES if names is None else names) if n not in NEEDS_TIMING]
    cap = capture(s, (block if block is not None else 0,))
    pics = Pictures(cap.kernel_name, capture=cap)
    now = [n for n in names if n != "divergence_map" or block is not None]
    if "divergence_map" in names and block is None:
        pics.deferred = ("divergence_map",)      # which block: once the run's SIMT efficiency is known
    data = figure_data(s, now, block=block, warp=warp, capture=cap)[1] if now else {}
    pics.describe(data)
    pics.draw(data, renderer)
    if line_maps:
        pics.line_maps = maps_by_line(cap, cap.blocks[0], warp)
    if result is not None:
        add_timed(pics, s, result, renderer=renderer)
    return pics


def add_timed(pics: Pictures, subject, result, *, names=None, renderer: Renderer | None = None) -> Pictures:
    """Add to `pics` the figures of `subject` that need its run's `result`: the divergence
    map of a representative block (block 0 when the run is at least SURE_SIMT efficient,
    else the most divergent of `capture.sample_blocks`), and when timed the roofline and
    warp timeline (those in `names`, default all)."""
    s = subject_of(subject)
    if "divergence_map" in pics.deferred:
        pics.deferred = ()
        m = result.metrics
        inst = m.get("smsp__inst_executed.sum", 0) or 0
        simt = m.get("smsp__thread_inst_executed.sum", 0) / (32 * inst) if inst else 1.0
        cap = pics.capture
        if simt < SURE_SIMT or cap is None:
            n = api.prepare(s.kernel, s.grid, s.block, s.args, s.gpu, s.shared_bytes).geometry.nblocks
            cap = capture(s, sample_blocks(n))
        data = figure_data(s, ["divergence_map"], capture=cap)[1]
        pics.describe(data)
        pics.draw(data, renderer)
    if "gpu__time_duration.sum" not in result.metrics:
        return pics
    wanted = [n for n in NEEDS_TIMING if names is None or n in names]
    pics.draw(figure_data(result, wanted, gpu=s.gpu)[1] if wanted else {}, renderer)
    return pics


def png(fig, dpi: float | None = DPI) -> bytes:
    """PNG bytes of `fig` drawn by Agg at `dpi` (at most the figure's own). The draw, not
    the pixels, is most of the cost (text unhinted: `TEXT`); the encoding is `encode_png`'s (a third of PIL's
    time, smaller files)."""
    from matplotlib import rc_context  # lazy: matplotlib, only when a figure is drawn
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib, only when a figure is drawn
    own = fig.dpi
    fig.dpi = min(dpi or own, own)
    try:
        with rc_context(TEXT):
            canvas = FigureCanvasAgg(fig)
            canvas.draw()
        return encode_png(np.asarray(canvas.buffer_rgba()))
    finally:
        fig.dpi = own


def encode_png(rgba) -> bytes:
    """A PNG of an (h, w, 4) uint8 image: RGB when it is opaque (a figure on its white
    face always is), each row stored as its difference from the row above (PNG filter 2,
    'Up': flat colour and vertical edges become runs of zeros) and deflated at zlib level 1.
    Lossless; the same pixels give the same bytes."""

    from PIL import Image  # lazy: Pillow (with matplotlib), only when a PNG is written
    rgba = np.ascontiguousarray(rgba, np.uint8)
    h, w, _ = rgba.shape
    px = rgba
    if (rgba[..., 3] == 255).all():                 # PIL drops the alpha bytes 3x faster than numpy's strided copy
        px = np.asarray(Image.frombuffer("RGBA", (w, h), rgba, "raw", "RGBA", 0, 1).convert("RGB"))
    c = px.shape[2]
    rows = px.reshape(h, w * c)
    raw = np.empty((h, 1 + w * c), np.uint8)
    raw[:, 0] = 2
    raw[0, 1:] = rows[0]
    np.subtract(rows[1:], rows[:-1], out=raw[1:, 1:])          # uint8: wraps modulo 256, as PNG's Up filter does

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", w, h, 8, 2 if c == 3 else 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 1))
            + chunk(b"IEND", b""))
