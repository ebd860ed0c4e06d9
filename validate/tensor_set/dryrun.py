"""The tensor set's dry run, on a machine without a GPU: what `validate measure --suite
tensor` would run, built and predicted, so the harness is checked before device time is spent.

    python -m validate.tensor_set.dryrun [--all-sizes] [--gpu h100] [--time-limit 300] [--out FILE]
    python -m validate measure --suite tensor --dry-run      # the same

For every entry of `validate.tensor_set.suite`: whether its program imports (the measurement
leaves out those that do not, with the same note); then for its smallest size (every size
with --all-sizes): the case built as the GPU side builds it (inputs, numpy reference) and what
the GPU side would launch it as (language, Nsight kernel name, grid, block, and for CUDA C++
whether every argument can be passed without a `device_args` hook). Then gpusim's prediction
on `--gpu` (prediction only: `outputs=False`, sampled functional execution; `--time-limit`
seconds at most each) of a smoke case, the entry's variant at the program's 'default' size
(the measured sizes' tensor instructions take the functional core minutes to hours until its
tensor numerics are vectorised), and with --predict of every size built. Nothing is measured
and no GPU library is imported. Exit status 1 if an available entry fails to build or to
predict.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import gpusim
from gpusim.timing.engine import TimingOptions
from validate.tensor_set import launch as L
from validate.tensor_set.suite import ENTRIES, load, spec


def _check_launchable(case) -> str:
    """'' if the GPU side can launch `case` as built, else why not (static checks only)."""
    try:
        kind = L.language(case.kernel)
    except L.NotLaunchable as e:
        return str(e)
    if kind == "numba":
        return "a Numba kernel: measured by `validate measure --suite programs`"
    if kind == "cuda":
        bad = sorted({type(a).__name__ for a in case.args
                      if not isinstance(a, (np.ndarray, np.generic)) and not L._is_tensor_map(a)})
        if bad:
            return f"arguments of type {', '.join(bad)} need a device_args(case, cupy) hook in the program module"
    return ""


def _predict(case, gpu: str, time_limit_s: float | None) -> dict:
    t = time.perf_counter()
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu=gpu, timing=True,
                      shared_bytes=case.shared_bytes, outputs=False, time_limit_s=time_limit_s,
                      timing_options=TimingOptions(mode="auto", functional="sampled"), **case.options)
    m = r.metrics
    return {"predicted_ns": m["gpu__time_duration.sum"], "bound": m.get("timing__bound"),
            "mode": m.get("timing__mode"), "sampling_error_pct": m.get("timing__sampling_error_pct"),
            "predict_s": round(time.perf_counter() - t, 2)}


def _smoke(entry, program):
    """The entry's variant at the program's 'default' size (the program's default alone where
    the variant does not fit it, e.g. a tile larger than the default matrix)."""
    base = program.sizes.get("default", {})
    try:
        return program.case({**base, **entry.variant}), {**base, **entry.variant}
    except (ValueError, TypeError, KeyError):
        return program.case("default"), dict(base)


def dry_run(all_sizes: bool = False, gpu: str = "h100", time_limit_s: float | None = 300.0, predict_all=False,
            progress=None) -> dict:
    """{"entries": {name: {...}}, "cases": [{...}], "failed": [...]} (see the module docstring)."""
    out = {"gpu": gpu, "entries": {}, "cases": [], "failed": []}
    for entry in ENTRIES:
        program, why = load(entry)
        out["entries"][entry.name] = {"module": entry.module, "available": program is not None, "note": why}
        if program is None:
            continue
        labels = list(entry.sizes)
        todo = [(label, None) for label in (labels if all_sizes else labels[:1])] + [("smoke", program)]
        for label, smoke_of in todo:
            row = {"name": f"{entry.name}/{label}", "module": entry.module}
            t = time.perf_counter()
            try:
                if smoke_of is None:
                    case = spec(entry.name).case(label)
                else:
                    case, row["smoke_params"] = _smoke(entry, smoke_of)
                row.update(language=L.language(case.kernel), kernel=L.kernel_name(case.kernel),
                           grid=L.launch_grid(case), block=L.launch_block(case), shared_bytes=case.shared_bytes,
                           params=case.params)
                row["launch_note"] = _check_launchable(case)
                row["build_s"] = round(time.perf_counter() - t, 2)
                if smoke_of is not None or predict_all:
                    row.update(_predict(case, gpu, time_limit_s))
                del case
            except Exception as e:                 # noqa: BLE001 - reported, the others go on
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                out["failed"].append(row["name"])
            out["cases"].append(row)
            if progress:
                progress(row)
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all-sizes", action="store_true", help="every size of every entry (default: the smallest)")
    p.add_argument("--gpu", default="h100", help="preset to predict with (default h100)")
    p.add_argument("--time-limit", type=float, default=300.0, help="seconds per prediction (default 300)")
    p.add_argument("--predict", action="store_true", help="also predict every size built (slow: see above)")
    p.add_argument("--out", type=Path, help="write the result as JSON here")


def run(args) -> int:
    def show(row):
        what = row.get("error") or (
            (f"{row['predicted_ns'] / 1e3:.1f} us predicted ({row.get('bound')}) in {row['predict_s']} s, "
             if "predicted_ns" in row else "") + f"built in {row['build_s']} s"
            + (f"; {row['launch_note']}" if row.get("launch_note") else ""))
        print(f"{row['name']:34s} {row.get('language', ''):7s} {what}", flush=True)

    res = dry_run(args.all_sizes, args.gpu, args.time_limit, getattr(args, "predict", False), show)
    for name, e in res["entries"].items():
        if not e["available"]:
            print(f"{name:34s} left out: {e['note']}")
    if args.out:
        args.out.write_text(json.dumps(res, indent=1, default=str))
    print(f"{len(res['cases'])} cases, {len(res['failed'])} failed {res['failed']}; "
          f"{sum(not e['available'] for e in res['entries'].values())} of {len(res['entries'])} entries left out")
    return 1 if res["failed"] else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="python -m validate.tensor_set.dryrun", description=__doc__.splitlines()[0])
    add_arguments(ap)
    sys.exit(run(ap.parse_args()))
