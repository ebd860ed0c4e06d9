"""Where a launch's warps wait, predicted against measured: the shares of Nsight's warp-state
samples (`smsp__pcsamp_warps_issue_stalled_<reason>`) per stall reason, beside the L2 sector hit
rate and the DRAM bytes read, for launches of a measurement file.

    python benchmarks/stall_mix.py --data data/measurements/h100_tensor.json --only 'cuda_mma_single/n4096$'
                                   [--denser-sample-factor 1 4] [--top 8] [--json FILE]

Each launch is rebuilt and predicted as `python -m validate compare` predicts it
(`validate.predict.build_case`, the data file's preset and measurement environment,
`TimingOptions(mode="auto", functional="sampled")`, `outputs=False`), once per
`--denser-sample-factor` given (`TimingOptions.denser_sample_factor`: 1 is the default model).
Per launch and factor: predicted and measured duration, the `--top` stall reasons of the GPU's
samples with their share there and in the prediction (percent of all samples of a stall reason,
the issued ones included), the L2 sector hit rate and DRAM bytes read on both sides, and the
prediction's wall seconds. A diagnosis aid: which part of the model a duration error comes from.
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gpusim  # noqa: E402
from gpusim.timing.engine import TimingOptions  # noqa: E402
from validate.predict import build_case, default_preset, measurement_environment  # noqa: E402

PREFIX = "smsp__pcsamp_warps_issue_stalled_"
OTHER = ("lts__t_sector_hit_rate.pct", "dram__bytes_read.sum")


def shares(metrics: dict) -> dict:
    """Stall reason -> percent of all warp-state samples (the `_not_issued` halves left out)."""
    stalls = {k[len(PREFIX):]: float(v) for k, v in metrics.items()
              if k.startswith(PREFIX) and not k.endswith("_not_issued") and isinstance(v, (int, float))}
    total = sum(stalls.values()) or 1.0
    return {k: 100.0 * v / total for k, v in stalls.items()}


def predict(record: dict, data: dict, factor: int) -> tuple[dict, float]:
    case = build_case(record)
    options = TimingOptions(mode="auto", functional="sampled", denser_sample_factor=factor,
                            **measurement_environment(data))
    t = time.perf_counter()
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu=default_preset(data),
                      shared_bytes=case.shared_bytes, timing=True, timing_options=options, outputs=False,
                      **case.options)
    return r.metrics, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="a measurement file, e.g. data/measurements/h100_tensor.json")
    ap.add_argument("--only", required=True, help="regex on launch names")
    ap.add_argument("--denser-sample-factor", type=int, nargs="+", default=[1])
    ap.add_argument("--top", type=int, default=8, help="stall reasons shown, the GPU's largest first")
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    data = json.loads(Path(a.data).read_text())
    rows = []
    for record in data["kernels"]:
        if not re.search(a.only, record["name"]):
            continue
        measured = record["metrics"]
        gpu_shares = shares(measured)
        for factor in a.denser_sample_factor:
            m, seconds = predict(record, data, factor)
            model_shares = shares(m)
            top = sorted(gpu_shares, key=lambda k: -gpu_shares[k])[:a.top]
            row = {"launch": record["name"], "denser_sample_factor": factor, "seconds": round(seconds, 1),
                   "duration_ns": [measured["gpu__time_duration.sum"], round(m["gpu__time_duration.sum"])],
                   "stall_share_pct": {k: [round(gpu_shares[k], 1), round(model_shares.get(k, 0.0), 1)] for k in top},
                   **{k: [measured.get(k), m.get(k)] for k in OTHER}}
            rows.append(row)
            print(f"{row['launch']}  factor {factor}  {row['seconds']} s  duration measured "
                  f"{row['duration_ns'][0]:,.0f} ns, predicted {row['duration_ns'][1]:,.0f} ns")
            for k, (g, p) in row["stall_share_pct"].items():
                print(f"    {k:24s} measured {g:5.1f}%  predicted {p:5.1f}%")
            for k in OTHER:
                g, p = row[k]
                print(f"    {k:32s} measured {g:,.2f}  predicted {p:,.2f}")
    if a.json:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
        Path(a.json).write_text(json.dumps({
            "what": __doc__.split("\n\n")[0], "command": "python " + " ".join(sys.argv),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": head.stdout.strip(), "data": a.data, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
