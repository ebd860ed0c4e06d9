"""`figures_for`: every figure that applies to a launch, by name, for the CLI, the HTML
report and notebooks.

    figs = gpusim.viz.figures_for("transpose_shared", gpu="h200", out_dir="plots")
    figs["bank_map"]           # matplotlib Figure; plots/transpose_shared_bank_map.png written

A bank map needs a shared access and a coalescing map a global one (the most
conflicted / least coalesced access, its worst execution, of block 0 or the block asked
for); the divergence map covers one block's warps: the block asked for, else the most
divergent of `capture.sample_blocks` (Capture.block_efficiency); the roofline and the memory chart need a timed Result (pass `result=`, or one is
launched with timing on copies of the arguments), and the roofline floating-point work
(none is drawn for an integer kernel); the warp timeline needs a recording (a Result
launched with `TimingOptions(record=TraceWindow(...))`; the launch made here for want of
a Result records SM 0's first 20,000 cycles); occupancy needs only the compiled kernel.
"""
from __future__ import annotations

import importlib
from pathlib import Path

from gpusim import api
from gpusim.result import Result
from gpusim.viz import _mpl, bank_map, coalescing_map, divergence_map, memory_chart, occupancy, roofline, warp_timeline
from gpusim.viz.capture import capture as run_capture, sample_blocks, subject_of

FIGURES = ("bank_map", "coalescing_map", "divergence_map", "memory_chart", "roofline", "occupancy", "warp_timeline")


def figures_for(subject, names=None, *, gpu=None, result=None, block: int | None = None, warp: int | None = None,
                out_dir=None, measured_time_ns: float | None = None) -> dict:
    """{figure name: Figure} for `subject` (a programs Case, a program name, a
    `gpusim.viz.Subject`, a (kernel, grid, block, args[, shared_bytes]) tuple, or a timed
    `Result`, which gives the roofline alone). `names` picks from FIGURES (default: all
    that apply); `block`, `warp`: the maps' (default: representative ones, see the module
    docstring); `out_dir` also writes each as `<kernel>_<name>.png`."""
    kernel, data = figure_data(subject, names, gpu=gpu, result=result, block=block, warp=warp,
                               measured_time_ns=measured_time_ns)
    return _saved(draw_all(data), kernel, out_dir)


def figure_data(subject, names=None, *, gpu=None, result=None, block: int | None = None, warp: int | None = None,
                measured_time_ns: float | None = None, capture=None) -> tuple[str, dict]:
    """(kernel name, {figure name: its data}): what `figures_for` draws, computed but
    not drawn (plain dataclasses and arrays, picklable: `draw_all` may run elsewhere).
    `capture`: a `gpusim.viz.capture` of `subject` already made, holding `block` (or block 0
    and, for the divergence map, the blocks to choose from); else made here."""
    names = tuple(FIGURES if names is None else names)
    unknown = set(names) - set(FIGURES)
    if unknown:
        raise ValueError(f"figures_for: unknown figure(s) {sorted(unknown)}; known: {', '.join(FIGURES)}")
    data: dict = {}
    if isinstance(subject, Result):
        result, subject = subject, None
    if subject is None:
        if "memory_chart" in names and result is not None:
            data["memory_chart"] = memory_chart.memory_chart(result)
        if "roofline" in names and result is not None and has_flops(result):
            data["roofline"] = roofline.roofline(result, gpu, measured_time_ns=measured_time_ns)
        if "warp_timeline" in names and result is not None and "recording" in result.extra:
            data["warp_timeline"] = warp_timeline.warp_timeline(result)
        return (result.kernel if result is not None else "kernel"), data

    s = subject_of(subject, gpu)
    cap = capture
    if cap is None and {"bank_map", "coalescing_map", "divergence_map"} & set(names):
        if block is not None or "divergence_map" not in names:
            blocks = (block or 0,)
        else:
            blocks = sample_blocks(api.prepare(s.kernel, s.grid, s.block, s.args, s.gpu,
                                               s.shared_bytes).geometry.nblocks)
        cap = run_capture(s, blocks)
    at = block if block is not None else cap.blocks[0] if cap is not None else 0
    if "bank_map" in names and cap.lines_with("shared"):
        data["bank_map"] = bank_map.bank_map(cap, block=at, warp=warp)
    if "coalescing_map" in names and cap.lines_with("global"):
        data["coalescing_map"] = coalescing_map.coalescing_map(cap, block=at, warp=warp)
    if "divergence_map" in names:
        data["divergence_map"] = divergence_map.divergence_map(cap, block=block)
    if result is None and {"roofline", "warp_timeline", "memory_chart"} & set(names):
        result = warp_timeline.record(s)         # timed, with the default recording window
    if "memory_chart" in names:
        data["memory_chart"] = memory_chart.memory_chart(result)
    if "roofline" in names and has_flops(result):
        data["roofline"] = roofline.roofline(result, s.gpu, measured_time_ns=measured_time_ns)
    if "occupancy" in names:
        data["occupancy"] = occupancy.occupancy_view(s, prepared=cap.prepared if cap is not None else None)
    if "warp_timeline" in names and "recording" in result.extra:
        data["warp_timeline"] = warp_timeline.warp_timeline(result)
    return (cap.kernel_name if cap is not None else (s.name or getattr(s.kernel, "__name__", "kernel"))), data


def has_flops(result) -> bool:
    """Whether a roofline of `result` has a point: the kernel executed floating-point work
    (an integer kernel's roofline would be ceilings alone, so none is drawn)."""
    return sum(roofline.flops_of(result)[0].values()) > 0


def draw_all(data: dict) -> dict:
    """{figure name: Figure} from `figure_data`'s {figure name: data}."""
    return {name: importlib.import_module(f"gpusim.viz.{name}").plot(d) for name, d in data.items()}


def _saved(figs: dict, kernel: str, out_dir) -> dict:
    if out_dir is not None:
        for name, fig in figs.items():
            _mpl.save(fig, Path(out_dir) / f"{kernel}_{name}.png")
    return figs
