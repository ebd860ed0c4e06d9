"""What settling an unsettled sample does (docs/mechanisms_24.md section 46).

    python benchmarks/sampling_settle.py [--jobs N] [--json FILE] [SET:KERNEL ...]

Each launch (a measured kernel of data/measurements/SET.json, predicted as `validate compare` predicts it:
its arrays where the GPU had them, the measurement's L2 state, the preset named by the set) is predicted
three ways: a 4-wave sample (`mode='sampled'`, what 'auto' timed before settling), a 16-wave sample
(`mode='sampled', max_waves=16`) and 'auto' mode, which times an unsettled 4-wave sample again with four
times its waves (`timing__sampling_settled`). Reported per launch: the measured time, the three
predictions and their errors, the 4-wave sample's `timing__sampling_unsettled_pct` (what 'auto' decides
on, against engine.SETTLE_PCT), whether 'auto' settled, and the 4-wave sample's gap to the 16-wave one.
The default launches are those that settle in the committed sets (benchmarks/results/compare_*.json at
b61165d) and steady streaming launches beside them that do not.
"""
from __future__ import annotations

import argparse
import json
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import gpusim
from gpusim.specs import presets
from gpusim.timing import TimingOptions
from gpusim.timing.engine import SETTLE_PCT
from validate.datadir import DATA_DIR
from validate.predict import build_case, measurement_environment

SETTLED = ["h200:const_lookup/large", "h200_heldout:stencil2d_5pt/large", "h200_heldout:gather_small_table/large",
           "h200_heldout:gather_small_table/medium", "h200_heldout:histogram_global_wide/large",
           "h200_heldout:histogram_global_wide/medium", "h200_heldout:spmv_csr_vector/medium",
           "h200_heldout:matrix_copy2d/b32x8", "h200_heldout:scatter_store/large", "h200_heldout:scatter_store/medium",
           "h200_heldout2:vec_triad/n64M", "h200_heldout2:vec_triad/n32M", "h200_heldout2:spmv_warp_row/powerlaw",
           "h100_heldout2:spmv_warp_row/powerlaw", "h200_heldout2:mandelbrot_f32/full2k",
           "h100_heldout2:mandelbrot_f32/full2k", "h200_heldout2:hist_global_atomic/bins1M",
           "h100_heldout2:hist_global_atomic/bins1M", "h200_heldout2:strided_copy/lane4B",
           "h100_heldout2:strided_copy/lane4B"]
STEADY = ["h200:saxpy/large", "h200:vector_add/large", "h200:transpose_padded/large", "h200_heldout:warp_scan/medium",
          "h200_heldout:gather_rows/large", "h200_heldout2:conv2d_3x3_global/s8192",
          "h100_heldout2:bitonic_step_global/far", "h200_heldout2:scan_blelloch_block/n16M"]


def predict(setname: str, name: str, mode: str, waves: int) -> dict:
    data = json.loads((DATA_DIR / f"{setname}.json").read_text())
    k = next(k for k in data["kernels"] if k["name"] == name)
    case = build_case(k)
    opts = TimingOptions(mode=mode, functional="sampled", max_waves=waves, **measurement_environment(data))
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu=presets.get(setname.split("_")[0]),
                          shared_bytes=case.shared_bytes, timing=True, timing_options=opts, outputs=False,
                          device_addresses=k.get("arg_addresses"))
    m = r.metrics
    return {"measured_ns": k["metrics"]["gpu__time_duration.sum"], "ns": m["gpu__time_duration.sum"],
            "unsettled_pct": m.get("timing__sampling_unsettled_pct", 0.0),
            "error_estimate_pct": m["timing__sampling_error_pct"], "settled": m.get("timing__sampling_settled", ""),
            "seconds": time.perf_counter() - t}


def row(launch: str) -> dict:
    setname, name = launch.split(":", 1)
    four, sixteen, auto = (predict(setname, name, mode, w) for mode, w in
                           (("sampled", 4), ("sampled", 16), ("auto", 4)))
    meas = four["measured_ns"]

    def err(p):
        return round(100 * (p["ns"] / meas - 1), 2)

    return {"set": setname, "kernel": name, "measured_ns": meas,
            "sampled4_ns": round(four["ns"], 1), "sampled16_ns": round(sixteen["ns"], 1), "auto_ns": round(auto["ns"], 1),
            "sampled4_error_pct": err(four), "sampled16_error_pct": err(sixteen), "auto_error_pct": err(auto),
            "unsettled4_pct": round(four["unsettled_pct"], 1), "settled": bool(auto["settled"]),
            "settled_note": auto["settled"], "gap4_to_16_pct": round(100 * (four["ns"] / sixteen["ns"] - 1), 2),
            "auto_gap_to_16_pct": round(100 * (auto["ns"] / sixteen["ns"] - 1), 2),
            "error_estimate4_pct": round(four["error_estimate_pct"], 1),
            "seconds4": round(four["seconds"], 1), "seconds_auto": round(auto["seconds"], 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("launches", nargs="*", help="SET:KERNEL (default: the settled launches and steady ones beside them)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    launches = a.launches or SETTLED + STEADY
    with ProcessPoolExecutor(a.jobs) as pool:
        rows = list(pool.map(row, launches))
    for r in rows:
        print(f"{r['set']:14s} {r['kernel']:36s} unsettled {r['unsettled4_pct']:5.1f}%  4 waves {r['sampled4_error_pct']:+7.1f}%"
              f"  16 {r['sampled16_error_pct']:+7.1f}%  auto {r['auto_error_pct']:+7.1f}%  {'settled' if r['settled'] else ''}")
    settled = [r for r in rows if r["settled"]]
    summary = {"launches": len(rows), "settled": len(settled), "settle_pct": SETTLE_PCT,
               "settled_mean_abs_gap4_to_16_pct": round(sum(abs(r["gap4_to_16_pct"]) for r in settled) / max(len(settled), 1), 2),
               "settled_mean_abs_auto_gap_to_16_pct": round(sum(abs(r["auto_gap_to_16_pct"]) for r in settled)
                                                            / max(len(settled), 1), 2),
               "steady_mean_gap4_to_16_pct": round(sum(r["gap4_to_16_pct"] for r in rows if not r["settled"])
                                                   / max(len(rows) - len(settled), 1), 2)}
    print(json.dumps(summary))
    if a.json:
        cmd = "python benchmarks/sampling_settle.py" + (f" --jobs {a.jobs}" if a.jobs != 1 else "") + \
            (" " + " ".join(a.launches) if a.launches else "") + f" --json {a.json}"
        a.json.write_text(json.dumps({"command": cmd, "date": time.strftime("%Y-%m-%d"), "summary": summary,
                                      "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
