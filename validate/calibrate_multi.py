"""`python -m validate calibrate-multi`: fit the NCCL numbers of a preset (`nccl.*`) to a
measure-multi file and write them into the calibrated preset's `[nccl]` table.

What is fitted: the numbers NCCL's documentation does not give (a collective's fixed
cost, each protocol's per-step latency and payload efficiency, one channel's copy rate,
the tree's rate, point-to-point setup). The link itself (nvlink.*) is not fitted: its
bandwidth and efficiency come from nvidia-smi and the measured peer copy ([MEAS-NVL]).
Objective: mean squared log ratio of predicted to measured time over every collective
record (NCCL's own choice) and every forced-protocol all_reduce (`--forced Ring` keeps only the
forced rings: NCCL never chose Tree here and the tree model is the roughest part). Method: coordinate
search in log space (each number x or / a step, repeated while it helps; the step halves
when a pass gains nothing), deterministic; it starts from the preset's current numbers. Takes a few minutes on one core.

    python -m validate calibrate-multi --data data/measurements/h200x4_multi.json --preset h200
    python -m validate calibrate-multi --data data/measurements/h200x4_multi.json --data data/measurements/h200x2_multi.json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import time
from pathlib import Path

from gpusim.collectives import simulate
from gpusim.specs import calibrated, presets
from validate.compare_multi import DEFAULT_DATA
from validate.datadir import measurement_file

ROOT = Path(__file__).resolve().parents[1]
FITTED = ("launch_latency_ns", "ll_base_latency_ns", "ll128_base_latency_ns", "simple_base_latency_ns",
          "ll_step_latency_ns", "ll128_step_latency_ns", "simple_step_latency_ns",
          "simple_efficiency", "ll_efficiency", "ll128_efficiency", "channel_bandwidth_GBps", "p2p_latency_ns",
          "tree_efficiency", "launch_skew_per_gpu_ns", "p2p_channel_bandwidth_GBps", "p2p_receive_bandwidth_GBps",
          "p2p_warp_bandwidth_GBps", "simple_slice_sync_ns")
FRACTIONS = {"simple_efficiency", "ll_efficiency", "ll128_efficiency", "tree_efficiency"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=measurement_file, action="append",
                   help="measure-multi file; repeat to fit several together (their records pooled, each record "
                        f"once; default: {DEFAULT_DATA.relative_to(ROOT)})")
    p.add_argument("--preset", default="h200", help="preset whose calibrated file gets the [nccl] table")
    p.add_argument("--passes", type=int, default=12, help="coordinate-search passes at most")
    p.add_argument("--dry-run", action="store_true", help="print the fit, write nothing")
    p.add_argument("--only", help="comma list of nccl.* numbers to fit (default: all of them); the rest keep "
                                  "the preset's values")
    p.add_argument("--ops", help="comma list of collectives whose records enter the fit (default: all); with "
                                 "--only the numbers that only those collectives use fit as fast")
    p.add_argument("--forced", help="comma list of the forced all_reduce algorithms whose records enter the fit "
                                    "(Ring, Tree; default: both). NCCL never chose Tree within one node here, and "
                                    "the forced Tree calls are off by up to 50%% (DEVIATIONS.md), so a fit of the "
                                    "ring numbers can leave them out")


def records(data: dict, ops=None, forced=None) -> list[tuple]:
    out = []
    for r in data.get("collectives", []):
        if "time_us" in r:
            out.append((r["op"], r["bytes"], r["gpus"], None, None, r["time_us"]))
    for r in data.get("forced", []):
        if "time_us" in r and (forced is None or r["algorithm_forced"].lower() in forced):
            out.append(("all_reduce", r["bytes"], r["gpus"], r["algorithm_forced"], r["protocol_forced"], r["time_us"]))
    return [r for r in out if ops is None or r[0] in ops]


def pooled(datas: list[dict], ops=None, forced=None) -> list[tuple]:
    """The records of several measure-multi files together (a record of the same call measured on
    two machines enters once per machine: both are measurements)."""
    return [r for d in datas for r in records(d, ops, forced)]


def loss(spec, recs) -> float:
    return sum(math.log(simulate(op, b, spec, n, a, p).time_us / t) ** 2 for op, b, n, a, p, t in recs) / len(recs)


def fit(spec, recs, passes: int = 12, log=lambda m: print(m, flush=True), names=FITTED):
    values = {k: float(getattr(spec.nccl, k)) for k in FITTED}

    def with_values(v):
        return dataclasses.replace(spec, nccl=dataclasses.replace(spec.nccl, **v))

    best = loss(spec, recs)
    step = 0.3
    for i in range(passes):
        gained = False
        for k in names:
            for sign in (+1, -1):
                moved = False
                while True:                      # keep going while it helps (a line search)
                    trial = dict(values)
                    trial[k] = values[k] * math.exp(sign * step) if values[k] else (100.0 if sign > 0 else 0.0)
                    if k in FRACTIONS and trial[k] > 1:
                        break
                    val = loss(with_values(trial), recs)
                    if val >= best - 1e-9:
                        break
                    best, values, gained, moved = val, trial, True, True
                if moved:
                    break
        log(f"pass {i + 1}: rms log error {math.sqrt(best):.4f} (step {step:.3f})")
        if not gained:
            step /= 2
            if step < 0.01:
                break
    return values, math.sqrt(best)


def write_table(path: Path, values: dict, data_paths: list[Path], datas: list[dict], rms: float,
                extra: str = "") -> None:
    """Write `values` as the [nccl] table; a partial fit (`extra`: its --only/--ops) keeps the
    table's earlier provenance lines and adds its own below them."""
    text = path.read_text()
    provs = [d.get("provenance", {}) for d in datas]
    args = " ".join(f"--data {p.relative_to(ROOT)}" for p in data_paths)
    machines = " and ".join(f"{p.get('gpu_count')} GPUs ({p.get('date')})" for p in provs)
    line = (f"# fitted by `python -m validate calibrate-multi {args}{extra}` to "
            f"NCCL {provs[0].get('nccl_version')} on {machines}; rms log error {rms:.3f}")
    old = re.search(r"^\[nccl\][^\n]*\n((?:#[^\n]*\n)*)", text, flags=re.M)
    if extra and old:
        head = old.group(0).rstrip("\n").split("\n")
        lines = head[:1] + [h for h in head[1:]] + [line.replace("# fitted", "# then refitted", 1)]
    else:
        lines = ["[nccl]    " + line]
    for k in FITTED:
        v = values[k]
        lines.append(f"{k} = {round(v, 4) if k in FRACTIONS else round(v, 1)}")
    block = "\n".join(lines) + "\n"
    if re.search(r"^\[nccl\]", text, flags=re.M):
        text = re.sub(r"^\[nccl\][^\[]*", block + "\n", text, flags=re.M)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text.rstrip("\n") + "\n")


def run(args) -> int:
    paths = [p.resolve() for p in (args.data or [DEFAULT_DATA])]
    datas = [json.loads(p.read_text()) for p in paths]
    spec = presets.get(args.preset)
    ops = {o.strip() for o in args.ops.split(",")} if args.ops else None
    names = tuple(n.strip() for n in args.only.split(",")) if args.only else FITTED
    unknown = [n for n in names if n not in FITTED]
    if unknown:
        print(f"--only: not fitted numbers: {', '.join(unknown)}; known: {', '.join(FITTED)}")
        return 2
    forced = {a.strip().lower() for a in args.forced.split(",")} if args.forced else None
    recs = pooled(datas, ops, forced)
    t = time.perf_counter()
    values, rms = fit(spec, recs, args.passes, names=names)
    for k in FITTED:
        print(f"nccl.{k} = {values[k]:.4g}")
    print(f"rms log error {rms:.4f} over {len(recs)} records, {time.perf_counter() - t:.0f} s")
    if not args.dry_run:
        path = calibrated.path(spec.name.split("+")[0])
        if path is None:
            print(f"no calibrated file for {spec.name}; nothing written")
            return 1
        extra = (f" --only {args.only}" if args.only else "") + (f" --ops {args.ops}" if args.ops else "") \
            + (f" --forced {args.forced}" if args.forced else "")
        write_table(Path(path), values, paths, datas, rms, extra)
        print(f"wrote [nccl] into {path}")
    return 0
