"""The tensor-pipe microbenchmarks of validate/tensor_timing (run on an H100:
data/measurements/tensor_timing_h100.json) predicted by gpusim, cycles per loop iteration side by side.

    python benchmarks/tensor_timing_check.py [--only REGEX] [--out benchmarks/results/tensor_timing_check.json]

Each case is the same kernel (validate/tensor_timing/kernels.py, compiled to PTX by NVRTC for
sm_90a) launched as one block on a one-SM h100 (`sm_count=1`: the measurement ran one block
per SM, and a tensor pipe or a warp's latency chain does not depend on the others); its
cycles per iteration are the predicted `sm__cycles_elapsed.max` of two iteration counts,
differenced (the prologue and the cold instruction cache cancel). The iteration counts are
small (the functional core's tensor numerics are slow) but reach the steady state of ptxas'
unrolled loops. Measured: the record's `cycles_per_iteration` (clock64 over the loop, the
slowest warp of the block).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import gpusim  # noqa: E402
from gpusim.specs import resolve  # noqa: E402
from validate.tensor_timing import kernels  # noqa: E402
from validate.datadir import DATA_DIR  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = DATA_DIR / "tensor_timing_h100.json"
MMA_WARPS = (1, 4, 8, 16)
ITERS = {"mma_latency": (16, 48), "mma_throughput": (8, 24), "wgmma": (4, 8), "wgmma_group": (2, 4), "ldmatrix": (2, 6), "cp_async": (4, 12)}
# f64 m8n8k4 does not execute yet; e4m3 mma.sync is f16 HMMAs on sm_90 and its measurement is
# doubtful (the data file's caveats); the other types time as f16 does at the same shape
SKIP_TYPES = ("f64", "e4m3")


def cases(results: list[dict]):
    """(label, measured record) of the cases checked: mma.sync chains and warps (f16 at 1, 4, 8, 16
    warps, the other types at 1 and 16), wgmma f16 at every N with one and two warpgroups and the
    other types at N=128 with two, ldmatrix, cp.async."""
    for r in results:
        if "error" in r:
            continue
        kind = r["kind"]
        if kind.startswith("mma") and r["type"] in SKIP_TYPES:
            continue
        if kind == "mma_latency":
            yield f"{r['kernel']}", r
        elif kind == "mma_throughput" and r["warps_per_sm"] in (MMA_WARPS if r["type"] == "f16" else (1, 16)):
            yield f"{r['kernel']}/w{r['warps_per_sm']}", r
        elif kind == "wgmma" and r["warpgroups_per_sm"] <= 2 and (r["type"] == "f16" or
                                                                  (r["n"] == 128 and r["warpgroups_per_sm"] == 2)):
            yield f"{r['kernel']}/wg{r['warpgroups_per_sm']}", r
        elif kind == "wgmma_group" and r["warpgroups_per_sm"] <= 2:
            yield f"{r['kernel']}/wg{r['warpgroups_per_sm']}", r
        elif kind in ("ldmatrix", "cp_async"):
            yield f"{r['kernel']}/w{r['warps_per_sm']}" + (f"/s{r['sms']}" if "sms" in r else ""), r


def predict(ptx_path: str, r: dict, spec) -> tuple[float, dict]:
    """Predicted cycles per iteration of record `r`'s kernel, and the stall samples of the longer run."""
    block = r["block"]
    lo, hi = ITERS[r["kind"]]
    dynamic = 64 * 1024 if r["kind"] in ("wgmma", "wgmma_group", "cp_async") else 0
    cyc, stalls = [], {}
    for iters in (lo, hi):
        out, sink = np.zeros(block // 32, np.uint64), np.zeros(1, np.float64)
        args = ((out, np.int32(iters), np.zeros(1 << 18, np.int32), sink) if r["kind"] == "cp_async"
                else (out, np.int32(iters), sink))
        res = gpusim.launch(gpusim.PtxSource(ptx_path, r["kernel"]), 1, block, args, gpu=spec, timing=True,
                            shared_bytes=dynamic)
        cyc.append(res.metrics["sm__cycles_elapsed.max"])
        stalls = {k.rsplit("_stalled_", 1)[1]: round(v) for k, v in res.metrics.items()
                  if k.startswith("smsp__pcsamp_warps_issue_stalled_") and v}
    return (cyc[1] - cyc[0]) / (hi - lo), stalls


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="regex on the case labels")
    ap.add_argument("--data", type=Path, default=DATA, help="a run.py result (default: %(default)s)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "tensor_timing_check.json")
    ap.add_argument("--resume", action="store_true", help="keep the cases --out already holds, predict the rest")
    a = ap.parse_args(argv)
    doc = json.loads(a.data.read_text())
    ptx = Path(os.environ.get("TMPDIR", "/tmp")) / "gpusim_tensor_timing_check.ptx"
    ptx.write_text(kernels.compile_ptx("sm_90a"))
    spec = resolve("h100", ["sm_count=1"])
    old = json.loads(a.out.read_text()) if a.resume and a.out.exists() else {}
    rows = [x for x in old.get("cases", []) if "error_pct" in x]
    done = {x["case"] for x in rows}
    for label, r in cases(doc["results"]):
        if (a.only and not re.search(a.only, label)) or label in done:
            continue
        t = time.perf_counter()
        meas = r["cycles_per_iteration"]
        try:
            pred, stalls = predict(str(ptx), r, spec)
        except Exception as e:                       # noqa: BLE001 - recorded, the others go on
            print(f"{label:28s} no prediction: {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
            continue
        rows.append({"case": label, "kind": r["kind"], "measured_cycles_per_iteration": round(meas, 2),
                     "predicted_cycles_per_iteration": round(pred, 2),
                     "error_pct": round(100 * (pred - meas) / meas, 1), "seconds": round(time.perf_counter() - t, 1),
                     "stalls_longer_run": stalls})
        print(f"{label:28s} measured {meas:9.2f}  predicted {pred:9.2f}  {rows[-1]['error_pct']:+6.1f}%  "
              f"({rows[-1]['seconds']} s)", flush=True)
        _write(a, doc, rows)
    _write(a, doc, rows)
    return 0


def _write(a, doc: dict, rows: list[dict]) -> None:
    """The result file, after every case (a long run keeps what it did; --resume goes on)."""
    errs = [abs(x["error_pct"]) for x in rows]
    summary = {"cases": len(rows), "mape_pct": round(float(np.mean(errs)), 1) if errs else None,
               "max_ape_pct": round(max(errs), 1) if errs else None}
    for kind in sorted({x["kind"] for x in rows}):
        e = [abs(x["error_pct"]) for x in rows if x["kind"] == kind]
        summary[f"{kind}_mape_pct"] = round(float(np.mean(e)), 1)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"command": "python benchmarks/tensor_timing_check.py" + (f" --only '{a.only}'" if a.only else ""),
                                 "data": str(a.data.resolve().relative_to(ROOT)), "measured_on": doc.get("provenance", {}).get("gpu"),
                                 "preset": "h100 with sm_count=1", "date": time.strftime("%Y-%m-%d"),
                                 "summary": summary, "cases": rows}, indent=1))
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    sys.exit(main())
