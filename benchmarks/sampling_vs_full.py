"""Sampled timing against the model's own full simulation, on the launches of a measurement file.

    python benchmarks/sampling_vs_full.py --data data/measurements/h200_heldout2.json \
        [--only REGEX] [--jobs N] [--time-limit S] [--max-inst N] [--whole-loops | --loops-only] [--json FILE]

No measurement is used: each launch is built as `validate compare` builds it
(`validate.compare.build_case`, the data file's preset, `measurement_environment`), predicted
with compare's own options (`TimingOptions(mode="auto", functional="sampled")`: sampled above one
block per SM, unless the sample cannot see a reuse distance and full simulation is affordable)
and with `mode="full"` (every SM, every block; long loops still sampled as compare samples them,
`TimingOptions.instruction_budget`, unless `--whole-loops` times every iteration: that loop
sampling has an error of its own, +11.4% on the H200's cuda_mma_single/n2048, where the sample
of 8 SMs times the whole loop). `--loops-only` takes compare's own sample with every loop iteration timed
as the reference instead (the same SMs and blocks): the gap is then loop sampling's alone
(docs/mechanisms_24.md section 25). Any gap between the two is the sampler's
(which blocks, which loop iterations, how the rest is extrapolated), not a hardware question, so
this may run on any suite, the held-out ones included, without tuning on them.

Per launch: both cycle counts (`sm__cycles_elapsed.max`) and durations, the sampled run's own
`timing__sampling_error_pct`, whether full simulation lies within it (the estimate is a
percentage of the sampled prediction), the mode compare's options chose, the note, wall times.
A launch compare already simulates in full needs no second run (listed as such); one of at most a
block per SM is not run at all. Launches whose measured warp instructions exceed `--max-inst` are
skipped; `--time-limit` bounds each run;
`--reuse-full` takes the full results of an earlier run (after a change of the sampler only).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import multiprocessing
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import gpusim
from gpusim.timing.engine import TimingOptions
from gpusim.api import resolve_gpu
from validate.predict import build_case, default_preset, measurement_environment, usable

CYCLES = "sm__cycles_elapsed.max"
DURATION = "gpu__time_duration.sum"


def _predict(k: dict, gpu, env: dict, mode: str, time_limit_s: float | None, whole_loops: bool = False) -> dict:
    t = time.perf_counter()
    try:
        case = build_case(k)
        opts = TimingOptions(mode=mode, functional="sampled", **env)
        if whole_loops:                 # every loop iteration timed (no loop sampling: issue_stream.py)
            opts = dataclasses.replace(opts, instruction_budget=None)
        r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu=gpu, shared_bytes=case.shared_bytes,
                          timing=True, timing_options=opts, time_limit_s=time_limit_s,
                          outputs="tensor" not in k, **case.options)
    except Exception as e:          # recorded: one launch never costs the others theirs
        return dict(error=f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}", wall_s=time.perf_counter() - t)
    m = r.metrics
    return dict(cycles=float(m[CYCLES]), ns=float(m[DURATION]), mode=m["timing__mode"],
                dram_read_bytes=float(m.get("dram__bytes_read.sum", 0.0)),
                err_pct=float(m["timing__sampling_error_pct"]), note=m.get("timing__sampling_note", ""),
                blocks_simulated=int(m["timing__blocks_simulated"]),
                loop_fraction=float(m["timing__loop_sampled_fraction"]), wall_s=time.perf_counter() - t)


def compare_one(k: dict, gpu, env: dict, time_limit_s: float | None, max_inst: float | None,
                known_full: dict | None = None, whole_loops: bool = False, loops_only: bool = False) -> dict:
    """One launch: compare's prediction, then full simulation where compare's was sampled
    (`known_full`: that simulation's result from an earlier run of the same model, if any), or
    with `loops_only` compare's own mode with every loop iteration timed."""
    row = dict(name=k["name"], blocks=math.prod(k.get("grid") or [1]),
               measured_inst=k["metrics"].get("smsp__inst_executed.sum", 0.0))
    if row["blocks"] <= gpu.sm_count:        # TimingOptions' auto rule: full up to one block per SM
        row["skipped"] = "compare simulates it in full (at most one block per SM)"
        return row
    if max_inst is not None and row["measured_inst"] > max_inst and known_full is None:
        row["skipped"] = f"{row['measured_inst']:.3g} warp instructions > --max-inst"
        return row
    s = _predict(k, gpu, env, "auto", time_limit_s)
    row["sampled"] = s
    if "error" in s:
        return row
    if loops_only:
        if s["loop_fraction"] >= 1.0:
            row["full"] = "compare's prediction times every loop iteration"
            return row
        f = _predict(k, gpu, env, "auto", time_limit_s, whole_loops=True)
        row["measured_ns"] = k["metrics"].get(DURATION)
        row["full"] = f
        if "error" not in f:
            row["gap_pct"] = 100.0 * (s["cycles"] - f["cycles"]) / f["cycles"] if f["cycles"] else 0.0
            row["covered"] = 100.0 * abs(f["cycles"] - s["cycles"]) <= s["err_pct"] * s["cycles"]
        return row
    if s["mode"] == "full":
        row["full"] = "compare's prediction is full simulation"
        return row
    f = known_full if known_full is not None else _predict(k, gpu, env, "full", time_limit_s, whole_loops)
    row["full"] = f
    if "error" not in f:
        row["gap_pct"] = 100.0 * (s["cycles"] - f["cycles"]) / f["cycles"] if f["cycles"] else 0.0
        # the estimate is a percentage of the sampled prediction: full simulation must lie within it
        row["covered"] = 100.0 * abs(f["cycles"] - s["cycles"]) <= s["err_pct"] * s["cycles"]
    return row


def line(r: dict) -> str:
    head = f"{r['name']:36s} {r['blocks']:7d} blk"
    if "skipped" in r:
        return f"{head}  skipped: {r['skipped']}"
    s, f = r["sampled"], r.get("full")
    if "error" in s:
        return f"{head}  sampled: {s['error']}"
    out = f"{head}  {s['mode']:7s} {s['cycles']:12,.0f} cyc (est {s['err_pct']:5.1f}%, {s['wall_s']:5.0f}s)"
    if isinstance(f, str):
        return f"{out}  full: {f}"
    if "error" in f:
        return f"{out}  full: {f['error']} ({f['wall_s']:.0f}s)"
    return (f"{out}  full {f['cycles']:12,.0f} cyc ({f['wall_s']:5.0f}s)  gap {r['gap_pct']:+7.1f}%  "
            + ("ok" if r["covered"] else "NOT COVERED") + (f"  note: {s['note'][:80]}" if s["note"] else ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="a measurement file (data/measurements/*.json)")
    ap.add_argument("--only", help="a regular expression over the launch names")
    ap.add_argument("--jobs", type=int, default=1, help="processes (the costliest launches first)")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds each prediction may take")
    ap.add_argument("--max-inst", type=float, default=None,
                    help="skip launches with more measured warp instructions than this (unless --reuse-full has them)")
    ap.add_argument("--preset", help="preset to predict with (default: the data file's, as compare)")
    ap.add_argument("--json", help="write the rows and a summary here")
    ap.add_argument("--whole-loops", action="store_true",
                    help="time every loop iteration in the full simulation (TimingOptions(instruction_budget=None)): "
                         "by default it samples long loops as compare does, which has an error of its own")
    ap.add_argument("--loops-only", action="store_true",
                    help="the reference is compare's own sample with every loop iteration timed (the same SMs and "
                         "blocks): the gap is loop sampling's alone")
    ap.add_argument("--reuse-full", metavar="JSON",
                    help="take full simulation results from this earlier --json output (a change of the sampler "
                         "only leaves them as they were)")
    a = ap.parse_args(argv)
    data = json.loads(Path(a.data).read_text())
    preset = a.preset or default_preset(data)
    gpu, env = resolve_gpu(preset), measurement_environment(data)
    kernels = [k for k in data["kernels"] if usable(k) and (not a.only or re.search(a.only, k["name"]))]
    rows: list = [None] * len(kernels)
    known = {}
    if a.reuse_full:
        known = {r["name"]: r["full"] for r in json.loads(Path(a.reuse_full).read_text())["rows"]
                 if isinstance(r.get("full"), dict) and "error" not in r["full"]}
    if a.jobs <= 1:
        for i, k in enumerate(kernels):
            rows[i] = compare_one(k, gpu, env, a.time_limit, a.max_inst, known.get(k["name"]), a.whole_loops,
                                  a.loops_only)
            print(line(rows[i]), flush=True)
            write(a, preset, rows, argv)
    else:
        order = sorted(range(len(kernels)), key=lambda i: -kernels[i]["metrics"].get("smsp__inst_executed.sum", 0))
        with ProcessPoolExecutor(a.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            futs = {pool.submit(compare_one, kernels[i], gpu, env, a.time_limit, a.max_inst,
                                 known.get(kernels[i]["name"]), a.whole_loops, a.loops_only): i for i in order}
            for fut in as_completed(futs):
                rows[futs[fut]] = fut.result()
                print(line(rows[futs[fut]]), flush=True)
                write(a, preset, rows, argv)
    summary = write(a, preset, rows, argv)
    print(f"{summary['compared']} of {len(rows)} launches compared with full simulation, {summary['covered']} within "
          f"their error estimates; {summary['full_by_compare']} full in compare, {summary['skipped']} skipped; "
          f"max |gap| {summary['max_abs_gap_pct']:.1f}%", flush=True)
    return 0


def write(a, preset: str, rows: list, argv) -> dict:
    """The summary of the rows done so far, written with them to --json (after each row: a run
    stopped by a time limit keeps what it finished)."""
    rows = [r for r in rows if r is not None]
    done = [r for r in rows if "gap_pct" in r]
    summary = dict(data=a.data, preset=preset, launches=len(rows), compared=len(done),
                   covered=sum(r["covered"] for r in done),
                   full_by_compare=sum(r.get("full") == "compare's prediction is full simulation" or
                                       r.get("skipped", "").startswith("compare") for r in rows),
                   skipped=sum("skipped" in r for r in rows),
                   max_abs_gap_pct=max((abs(r["gap_pct"]) for r in done), default=0.0),
                   not_covered={r["name"]: round(r["gap_pct"], 1) for r in done if not r["covered"]})
    if a.json:
        args = list(argv if argv is not None else sys.argv[1:])
        Path(a.json).write_text(json.dumps(dict(command=" ".join(["python", "benchmarks/sampling_vs_full.py"] + args),
                                                summary=summary, rows=rows), indent=1))
    return summary


if __name__ == "__main__":
    sys.exit(main())
