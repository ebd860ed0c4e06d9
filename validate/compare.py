"""`python -m validate compare --data FILE [--preset NAME] [--json] [--plot PNG]`: the
simulator's predictions against committed measurements, metric by metric.

Every kernel of the data file (a program at one size, a microbenchmark, or a held-out kernel
of `validate.heldout` or `validate.heldout2`) is rebuilt
from its recorded name, size and seed and run through `gpusim.launch(timing=True)` on
the chosen preset (default: the measured GPU's preset, which is its calibrated one where
`python -m validate calibrate` wrote one, else the cited datasheet). Launches of more blocks than SMs use sampled timing, with
functional execution of the sampled blocks only (outputs are not needed here: the
measurement checked them on the GPU); the tensor set's launches are predicted with
`outputs=False`, so their tensor-core numerics that no path or address depends on are left
out (`gpusim/functional/relevance.py`; the same prediction, sooner).

Per kernel and metric: predicted, measured, relative error. Summary (errors in percent):
- duration: MAPE of `gpu__time_duration.sum`, and Spearman rank correlation;
- bank conflicts (ld, st) where the measured counter exceeds 1,000: max and mean relative
  error where the lanes' addresses conflict (the model's count is exact on addresses). Where
  the addresses prove the accesses conflict-free (the model counts 0, as Nsight does at the
  small sizes) but Nsight still reports conflicts (a few % of wavefronts on large launches,
  GPU_NOTES.md), the count is reported separately as Nsight's noise, with its largest share of
  the wavefronts;
- thread/instruction ratio (`smsp__thread_inst_executed` / `smsp__inst_executed`): max and mean
  error, over all kernels and over the programs (the microbenchmarks' tiny kernels are where
  ptxas's SASS differs most from the PTX the simulator counts);
- global sectors per request (ld and st): the share of kernels where they match exactly;
- L2 sectors (read + write), DRAM read and write bytes: MAPE and the share within 5%, over
  kernels that move > 1 MiB. Each launch starts with the dirty L2 data that ncu's kernel
  replay leaves before every profiled kernel (`data/measurements/ncu_replay.json`, about 2.4 MB
  on H100 and H200, measured by `benchmarks/ncu_dirty_probe.py`): a kernel whose traffic
  exceeds the L2 writes it back, as Nsight counts; and over each predicted duration the
  writes that reach the L2 and DRAM from outside the kernel while it runs (about 18 MB/s of
  DRAM writes and 0.9-1.0 M L2 write sectors per second, measured beside one spinning
  thread: `ncu_dirty_probe.py --background`);
- SASS warp instructions (`smsp__inst_executed.sum`): MAPE and the share within 5%;
- sampling: the predictions' own sampling-error estimates (`timing__sampling_error_pct`);
- per kind (program, microbenchmark, heldout, heldout2): duration MAPE; the eight worst kernels;
- for heldout2 kernels, the suite's textbook orderings (`validate.orderings.summary`): how many
  the measurement shows, and how many of those the predictions show.
`--jobs N` predicts in N processes (default: the CPU count), the costliest kernels first.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shlex
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from gpusim.api import resolve_gpu
from validate import journal
from validate.datadir import measurement_file
from validate.figures import kernel_counters, plot, rel_err, summarize
from validate.predict import (
    CLOCKS,
    DURATION,
    Row,
    default_preset,
    estimated_cost,
    measurement_environment,
    observed_clock_mhz,
    predict,
    usable,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=measurement_file, required=True, help="a measurement file, e.g. data/measurements/h200.json")
    p.add_argument("--preset", help="GPU preset or .toml spec to predict with (default: the measured GPU's "
                   "preset, calibrated where a calibration exists)")
    p.add_argument("--json", action="store_true", help="print one JSON object with the summary figures")
    p.add_argument("--plot", type=Path, help="write the predicted-vs-measured duration scatter plot here (PNG)")
    p.add_argument("--only", help="regex on kernel names")
    p.add_argument("--table", action="store_true", help="print the per-kernel table (default unless --json)")
    p.add_argument("--budget", type=float, default=None, help="skip kernels whose simulation would exceed about "
                   "this many warp instructions (estimated from the measured counts and the sampling); default: none")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: the CPU count)")
    p.add_argument("--out", type=Path, help="also write the summary and every kernel's figures here (JSON)")
    p.add_argument("--resume", action="store_true",
                   help="reuse the predictions an interrupted run of the same model, preset and data finished "
                        "(its journal: <--out>.partial.jsonl, or $GPUSIM_CACHE_DIR/compare/; validate.journal)")
    p.add_argument("--clock", choices=CLOCKS, default="preset",
                   help="SM clock the predicted cycles become nanoseconds at: the preset's (default); 'file': the "
                        "measurement's median observed clock (provenance.sm_clock_mhz_observed); 'kernel': each "
                        "kernel's own, sm__cycles_elapsed.max / gpu__time_duration.sum, where the clocks were not "
                        "locked (the GPU's boost chose them: 1603-1992 MHz on the H100 tensor set)")
    p.add_argument("--max-waves", type=int, default=None, metavar="N",
                   help="waves of blocks a sampled launch simulates per SM before extrapolating (default 4): more "
                        "cost more and depend less on how the first waves lined up (docs/mechanisms_24.md section 41)")
    p.add_argument("--timing-mode", choices=("auto", "full", "sampled"), default="auto",
                   help="'auto' (default): a launch of more blocks than SMs is sampled; 'full': every block simulated, "
                        "what a sampled prediction is checked against (slow for large grids)")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="give up a kernel's prediction after this many seconds (listed under no_prediction); "
                        "default: no limit")



def compare(data_path: Path, preset: str | None = None, only: str | None = None, progress=None,
            budget: float | None = None, jobs: int | None = 1,
            time_limit_s: float | None = None, journal_path: Path | None = None,
            resume: bool = False, clock: str = "preset", max_waves: int | None = None,
            timing_mode: str = "auto") -> tuple[list[Row], dict, str]:
    """Predict the measured kernels and summarise. With `journal_path`, each finished prediction
    is appended there as it finishes (validate.journal); `resume` reuses the predictions that
    journal already holds for the same model, preset, clock, sample depth and data. `max_waves`:
    the waves a sampled launch simulates (`TimingOptions.max_waves`; None: its default, 4); `timing_mode`:
    `TimingOptions.mode` ('auto', or 'full' / 'sampled' for every launch)."""
    data = json.loads(Path(data_path).read_text())
    preset = preset or default_preset(data)
    gpu = resolve_gpu(preset)
    kernels = [k for k in data["kernels"] if usable(k) and (not only or re.search(only, k["name"]))]
    skipped = [k["name"] for k in kernels if budget is not None and estimated_cost(k) > budget]
    kernels = [k for k in kernels if k["name"] not in skipped]
    environment = measurement_environment(data)
    if max_waves is not None:
        environment["max_waves"] = max_waves                  # a timing option, passed with the environment
    if timing_mode != "auto":
        environment["mode"] = timing_mode
    done: dict[str, Row] = {}
    on_row = None
    journal_note = {}
    if journal_path is not None:
        depth = clock if max_waves is None else f"{clock}, {max_waves} waves"
        jr = journal.Journal(journal_path, journal.header(Path(data_path), preset, depth if timing_mode == "auto"
                                                          else f"{depth}, {timing_mode}"))
        if resume:
            by_name = {k["name"]: k for k in kernels}
            done = {n: _row_from_journal(r, by_name[n]) for n, r in jr.resume().items() if n in by_name}
            journal_note = {"journal": str(journal_path), "resumed": len(done)}
        else:
            journal_note = {"journal": str(journal_path), "journal_replaced": jr.start()}
        on_row = lambda r: jr.append(_row_to_journal(r))          # noqa: E731
    todo = [k for k in kernels if k["name"] not in done]
    clocks = [observed_clock_mhz(k, data, clock) for k in todo]
    new = iter(_predict_all(todo, gpu, jobs, progress, environment, time_limit_s, clocks, on_row))
    rows = [done[k["name"]] if k["name"] in done else next(new) for k in kernels]
    summary = summarize(rows)
    summary["clock"] = clock
    if any(r.kind in ("heldout2", "tensor") for r in rows):
        from validate import orderings  # lazy: imports the heldout2 kernels (numba)
        timed = [r for r in rows if DURATION in r.predicted]
        if any(r.kind == "tensor" for r in rows):
            # lazy: the tensor set's kernels (CUDA C++, Triton sources) load only for a tensor file
            from validate.tensor_set.suite import orderings as tensor_orderings
            which = {"orderings": tensor_orderings()}
        else:
            which = {}
        summary.update(orderings.summary({r.name: r.measured[DURATION] for r in timed},
                                         {r.name: r.predicted[DURATION] for r in timed}, **which))
    summary["skipped_over_budget"] = skipped
    summary.update(journal_note)
    summary.update(environment)
    return rows, summary, preset


def _row_to_journal(r: Row) -> dict:
    return {"name": r.name, "kind": r.kind, "seconds": r.seconds, "predicted": r.predicted, "error": r.error,
            "predicted_ns": r.predicted.get(DURATION)}


def _row_from_journal(j: dict, k: dict) -> Row:
    return Row(j["name"], j["kind"], k["metrics"], j["predicted"], j["seconds"], error=j.get("error", ""))


def _predict_all(kernels: list[dict], gpu, jobs: int | None, progress, environment: dict | None = None,
                 time_limit_s: float | None = None, clocks: list | None = None, on_row=None) -> list[Row]:
    """Predictions in the data file's order, in `jobs` processes (the costliest first);
    `clocks`: per kernel, the SM clock to predict at (None: the preset's); `on_row(row)` is
    called in this process as each one finishes."""
    jobs = jobs or os.cpu_count() or 1
    clocks = clocks or [None] * len(kernels)
    if jobs <= 1 or len(kernels) <= 1:
        rows = []
        for i, k in enumerate(kernels):
            rows.append(predict(k, gpu, environment, time_limit_s, clocks[i]))
            if on_row:
                on_row(rows[-1])
            if progress:
                progress(i + 1, len(kernels), rows[-1])
        return rows
    order = sorted(range(len(kernels)), key=lambda i: -estimated_cost(kernels[i]))
    out: list[Row | None] = [None] * len(kernels)
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(predict, kernels[i], gpu, environment, time_limit_s, clocks[i]): i for i in order}
        for done, f in enumerate(as_completed(futures), 1):
            out[futures[f]] = f.result()
            if on_row:
                on_row(out[futures[f]])
            if progress:
                progress(done, len(kernels), out[futures[f]])
    return out


def run(args) -> int:
    show = (lambda i, n, r: print(f"[{i}/{n}] {r.name}: {r.seconds:.1f}s" + (f" no prediction: {r.error}" if r.error else ""),
                                  file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    preset_name = args.preset or default_preset(json.loads(Path(args.data).read_text()))
    journal_path = journal.default_path(args.data, preset_name, args.out)
    rows, summary, preset = compare(args.data, args.preset, args.only, show, args.budget, args.jobs,
                                    getattr(args, "time_limit", None), journal_path, getattr(args, "resume", False),
                                    getattr(args, "clock", "preset"), getattr(args, "max_waves", None),
                                    getattr(args, "timing_mode", "auto"))
    summary["wall_s"] = round(time.perf_counter() - t0, 1)
    summary["preset"] = preset
    summary["data"] = str(args.data)
    if args.plot:
        plot(rows, args.plot, f"{preset} vs {Path(args.data).stem}")
        summary["plot"] = str(args.plot)
    if args.out:
        kernels = [{"name": r.name, "kind": r.kind, "seconds": round(r.seconds, 2),
                    "measured_ns": r.measured.get(DURATION), "predicted_ns": r.predicted.get(DURATION),
                    "no_prediction": r.error or None,
                    "error_pct": round(100 * rel_err(r.predicted[DURATION], r.measured[DURATION]), 2)
                    if DURATION in r.predicted else None,
                    "sampling_error_pct": r.predicted.get("timing__sampling_error_pct"),
                    "bound": r.predicted.get("timing__bound"), "counters": kernel_counters(r)} for r in rows]
        command = "python -m validate " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        args.out.write_text(json.dumps({"command": command, "summary": summary, "kernels": kernels}, indent=1))
        journal_path.unlink(missing_ok=True)          # the result holds every row now
    if args.json:
        print(json.dumps(summary))
        return 0
    if args.table or not args.json:
        print(f"{'kernel':46s} {'measured us':>12s} {'predicted us':>12s} {'error':>8s} {'sampling':>9s}  bound")
        for r in rows:
            m, p = r.measured[DURATION] / 1e3, r.predicted.get(DURATION, float('nan')) / 1e3
            se = r.predicted.get("timing__sampling_error_pct", 0.0)
            print(f"{r.name:46s} {m:12.2f} {p:12.2f} {100 * (p - m) / m:+7.1f}% {'+-%.1f%%' % se if se else '':>9s}"
                  f"  {r.predicted.get('timing__bound')}")
    for k, v in summary.items():
        print(f"{k}: {v:.2f}" if isinstance(v, float) else f"{k}: {v}")
    return 0
