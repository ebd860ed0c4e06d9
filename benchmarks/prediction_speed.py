"""Per-launch prediction time, prediction only (`gpusim.launch(outputs=False)`): a register-tiled
2048^3 SGEMM, the held-out launches whose predictions took longest, and the tensor set's largest.

    nice python benchmarks/prediction_speed.py [--top 5] [--only REGEX] [--with-outputs]
                                               [--tensor-all] [--merge] [--json benchmarks/results/prediction_speed.json]

The launches are records of the measured held-out suites, rebuilt and predicted as `python -m
validate compare` predicts them (`validate.predict.build_case`, the data file's preset and
measurement environment, `TimingOptions(mode="auto", functional="sampled")`), with
`outputs=False`: only the blocks the sampled timing needs are executed. The SGEMM is held-out-2's
`sgemm_reg_8x8/n2048` (128 x 128 block tiles, 8 x 8 outputs a thread in registers; 1.0 ms on an
H200); the others are the `--top` launches of each held-out suite with the largest `seconds` in
the committed compare results (`benchmarks/results/compare_h200_heldout*.json`, predictions with
outputs). The tensor set (`data/measurements/h100_tensor.json`, H100 preset): a 4096^3 GEMM of
each kind (mma.sync single-buffered, wmma, the TMA + wgmma GEMM, Triton's wgmma f16) and Triton
attention at 4K and 16K tokens (`TENSOR`), or with `--tensor-all` every launch of the set. Per launch: wall and CPU seconds of the `gpusim.launch` call (the case's inputs are
built before; the kernel's compilation to PTX and SASS is inside, as in any fresh launch), the
prediction, the timing mode, and how many blocks ran. `--with-outputs` times the same launch
with outputs too. Nothing here is compared with a measurement: speed only.
`--merge` keeps the launches of the existing `--json` file that this run does not time (each row
then carries the command, date, commit and load of the run that timed it).

One process, one core's worth of work (`workers=1`); machine, versions, load averages, date and
command are written with the results: on a shared machine the load average says how much of a
core the run had.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import gpusim  # noqa: E402
from gpusim.timing.engine import TimingOptions  # noqa: E402
from validate.predict import build_case, default_preset, measurement_environment  # noqa: E402
from validate.datadir import DATA_DIR  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SUITES = {"heldout": (DATA_DIR / "h200_heldout.json",
                      ROOT / "benchmarks" / "results" / "compare_h200_heldout.json"),
          "heldout2": (DATA_DIR / "h200_heldout2.json",
                       ROOT / "benchmarks" / "results" / "compare_h200_heldout2.json")}
SGEMM = ("heldout2", "sgemm_reg_8x8/n2048")
TENSOR_DATA = DATA_DIR / "h100_tensor.json"
TENSOR_COMMITTED = ROOT / "benchmarks" / "results" / "compare_h100_tensor.json"
TENSOR = ("cuda_mma_single/n4096", "cuda_wmma_f16/n4096", "cuda_tma_wgmma/n4096", "triton_matmul_f16/n4096",
          "triton_attention/s4k", "triton_attention/s16k")


def launches(top: int, tensor_all: bool = False) -> list[tuple[str, str, float | None]]:
    """(suite, record name, its committed with-outputs seconds): the SGEMM, then each suite's
    `top` slowest committed predictions, then the tensor set's (`TENSOR`, or all)."""
    committed = {s: json.loads(c.read_text())["kernels"] for s, (_, c) in SUITES.items()}
    committed["tensor"] = json.loads(TENSOR_COMMITTED.read_text())["kernels"]
    secs = {(s, r["name"]): r.get("seconds") for s, rows in committed.items() for r in rows}
    out = [SGEMM + (secs.get(SGEMM),)]
    for suite, rows in committed.items():
        if suite == "tensor":
            continue
        for r in sorted(rows, key=lambda r: -(r.get("seconds") or 0.0))[:top]:
            if (suite, r["name"]) != SGEMM:
                out.append((suite, r["name"], r.get("seconds")))
    names = [r["name"] for r in committed["tensor"]] if tensor_all else TENSOR
    out += [("tensor", n, secs.get(("tensor", n))) for n in names]
    return out


def predict(data: dict, rec: dict, outputs: bool) -> dict:
    case = build_case(rec)
    opts = TimingOptions(mode="auto", functional="sampled", **measurement_environment(data))
    c0, t0 = time.process_time(), time.perf_counter()
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu=default_preset(data),
                      shared_bytes=case.shared_bytes, timing=True, timing_options=opts, outputs=outputs, workers=1,
                      **case.options)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "predicted_ns": float(r.metrics["gpu__time_duration.sum"]),
            "timing_mode": r.metrics.get("timing__mode"),
            "outputs": r.extra.get("outputs", "computed")}


def merged(old: dict, new: dict) -> dict:
    """`new`'s launches in place of `old`'s of the same suite and name (each stamped with the
    run that timed it), the others of `old` kept; the top-level fields are `new`'s, with the
    earlier runs' commands under "earlier"."""
    run = {k: new[k] for k in ("command", "date")} | {"commit": new["machine"]["commit"]}
    for row in new["launches"]:
        row["run"] = run
    fresh = {(r["suite"], r["name"]): r for r in new["launches"]}
    rows = [fresh.pop((r["suite"], r["name"]), r) for r in old["launches"]] + list(fresh.values())
    earlier = old.get("earlier", []) + [{k: old[k] for k in ("command", "date") if k in old}
                                         | {"commit": old.get("machine", {}).get("commit")}]
    return new | {"launches": rows, "earlier": earlier}


def machine() -> dict:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    return {"node": platform.node(), "cpu": cpu, "cpus": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__, "commit": commit}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=5, help="slowest committed launches of each held-out suite")
    ap.add_argument("--only", help="regex on the launch names")
    ap.add_argument("--with-outputs", action="store_true", help="also time each launch with outputs")
    ap.add_argument("--tensor-all", action="store_true", help="every launch of the tensor set, not only TENSOR")
    ap.add_argument("--merge", action="store_true",
                    help="keep the existing --json file's launches that this run does not time")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "prediction_speed.json")
    a = ap.parse_args(argv)
    host, load_before = machine(), os.getloadavg()
    data = {s: json.loads(p.read_text()) for s, (p, _) in SUITES.items()}
    data["tensor"] = json.loads(TENSOR_DATA.read_text())
    rows = []
    for suite, name, committed in launches(a.top, a.tensor_all):
        if a.only and not re.search(a.only, name):
            continue
        rec = next(k for k in data[suite]["kernels"] if k["name"] == name)
        load = os.getloadavg()[0]
        row = {"suite": suite, "name": name, "gpu_measured_ns": rec["metrics"]["gpu__time_duration.sum"],
               "committed_with_outputs_s": committed, "load_average_1min_before": round(load, 2),
               "prediction_only": predict(data[suite], rec, False)}
        if a.with_outputs:
            row["with_outputs"] = predict(data[suite], rec, True)
        rows.append(row)
        p = row["prediction_only"]
        print(f"{suite} {name}: {p['wall_s']} s wall, {p['cpu_s']} s CPU, {p['predicted_ns']:.0f} ns "
              f"({p['timing_mode']}; load {load:.2f})", flush=True)
    doc = {"what": __doc__.strip().splitlines()[0],
           "command": "python benchmarks/prediction_speed.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": host,
           "load_average_before": [round(x, 2) for x in load_before],
           "load_average_after": [round(x, 2) for x in os.getloadavg()], "launches": rows}
    if a.merge and a.json.exists():
        doc = merged(json.loads(a.json.read_text()), doc)
    a.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
