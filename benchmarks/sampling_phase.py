"""How much a sampled launch's prediction moves when only its start moves (docs/mechanisms_24.md section 41).

    python benchmarks/sampling_phase.py [--waves 4 8 16] [--json FILE] [SET:KERNEL ...]

Each launch (a measured kernel of data/measurements/SET.json, predicted as `validate compare` predicts it:
its arrays where the GPU had them, the measurement's L2 state) is predicted with the preset as it is and
with the constant cache's measured fills in the SM's fields (validate/constant_cache_probe.py: a few
hundred cycles less at each SM's start, nothing else), at each number of sampled waves
(`TimingOptions.max_waves`, 4 by default). A sample whose extrapolated rate depends on how its first
waves happened to line up moves by far more than the start's cycles; with more waves the two settle
toward each other. Reported per launch and waves: the measured time, both predictions, their errors,
the spread between them (percent of the measured time), and the preset's own error estimate
(`timing__sampling_error_pct`); per launch, whether the estimate at the fewest waves covers the gap
to the prediction at the most.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
import warnings
from pathlib import Path

import gpusim
from gpusim.specs import presets
from gpusim.timing import TimingOptions
from validate.constant_cache_probe import MEASURED_FILLS
from validate.datadir import DATA_DIR
from validate.predict import build_case, measurement_environment

# launches the constant cache's measured fills moved most in the compares of section 41 (4 waves)
DEFAULT = ["h200_heldout2:conv2d_3x3_global/s4096", "h200_heldout2:strided_copy/lane4B",
           "h200_heldout:gather_rows/large", "h200_heldout2:mandelbrot_f32/full2k",
           "h100_heldout2:spmv_warp_row/powerlaw", "h200_heldout2:bitonic_step_global/near",
           "h200_heldout:gather_small_table/medium", "h100:stencil_1d/large"]


def predict(setname: str, name: str, fills: bool, waves: int) -> float:
    data = json.loads((DATA_DIR / f"{setname}.json").read_text())
    k = next(k for k in data["kernels"] if k["name"] == name)
    spec = presets.get(setname.split("_")[0])
    if fills:
        spec = dataclasses.replace(spec, sm=dataclasses.replace(spec.sm, **MEASURED_FILLS))
    case = build_case(k)
    opts = TimingOptions(mode="auto", functional="sampled", max_waves=waves, **measurement_environment(data))
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu=spec, shared_bytes=case.shared_bytes,
                      timing=True, timing_options=opts, outputs=False, device_addresses=k.get("arg_addresses"))
    return r.metrics["gpu__time_duration.sum"], k["metrics"]["gpu__time_duration.sum"], r.metrics["timing__sampling_error_pct"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("launches", nargs="*", default=DEFAULT, help="SET:KERNEL (default: section 41's)")
    ap.add_argument("--waves", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    rows = []
    for item in a.launches:
        setname, name = item.split(":", 1)
        for w in a.waves:
            t0 = time.time()
            (base, meas, est), (fill, _, _) = predict(setname, name, False, w), predict(setname, name, True, w)
            row = {"set": setname, "kernel": name, "waves": w, "measured_ns": meas, "preset_ns": round(base, 1),
                   "measured_fills_ns": round(fill, 1), "preset_error_pct": round(100 * (base / meas - 1), 1),
                   "measured_fills_error_pct": round(100 * (fill / meas - 1), 1),
                   "spread_pct": round(100 * abs(base - fill) / meas, 1), "error_estimate_pct": round(est, 1),
                   "seconds": round(time.time() - t0, 1)}
            rows.append(row)
            print(f"{setname:14s} {name:34s} waves {w:2d}: preset {row['preset_error_pct']:+6.1f}%  measured fills "
                  f"{row['measured_fills_error_pct']:+6.1f}%  spread {row['spread_pct']:5.1f}  estimate "
                  f"{row['error_estimate_pct']:5.1f}", flush=True)
        mine = [r for r in rows if r["set"] == setname and r["kernel"] == name]
        lo, hi = min(mine, key=lambda r: r["waves"]), max(mine, key=lambda r: r["waves"])
        gap = 100 * abs(lo["preset_ns"] / hi["preset_ns"] - 1)
        lo["gap_to_most_waves_pct"], lo["estimate_covers_gap"] = round(gap, 1), gap <= lo["error_estimate_pct"]
        print(f"{'':14s} {name:34s} {lo['waves']} against {hi['waves']} waves: {gap:.1f}%, estimate "
              f"{lo['error_estimate_pct']:.1f}%: {'covered' if lo['estimate_covers_gap'] else 'NOT covered'}")
    if a.json:
        a.json.write_text(json.dumps({"command": "python benchmarks/sampling_phase.py " + " ".join(
            f"--waves {' '.join(map(str, a.waves))}".split()) + (f" --json {a.json}"), "date": time.strftime("%Y-%m-%d"),
            "fills": MEASURED_FILLS, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
