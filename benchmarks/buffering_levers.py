"""What would make the model's single-buffered `mma.sync` GEMM slower than its double-buffered one
(issue 29; docs/mechanisms_24.md section 42).

    python benchmarks/buffering_levers.py [--data data/measurements/h100_tensor.json] [--preset h100-from-h200]
        [--size n4096] [--mode full] [--jobs 2] [--variants NAME ...] [--json FILE]

On the GPUs double buffering wins at 4096^3 by 4.2% (H100) and 6.2% (H200), where gpusim's
prediction puts the two within 0.3%. Each variant below changes one of the memory system's
numbers that decide how long a single-buffered tile waits for its copies, and both launches
(`cuda_mma_double/<size>`, `cuda_mma_single/<size>`, built as `validate compare` builds them, with
the measurement's environment) are predicted with it, by default in full simulation (every SM and
block; long loops sampled as compare samples them), so that no sampling decides the answer. A
lever that is the hardware's reason for the gap opens it (single slower than double by a few
percent) without moving the double-buffered launch far from the GPU's time.

Variants (`variants`: each a list of `gpusim.specs.overrides` settings, the relative ones computed
from the preset): `preset`; `l2_latency_plus_100` (an L2 hit 100 cycles longer, the GPU's loaded
hops in section 23); `slices_plus_20pct` (each slice's bytes a cycle x 1.2); `requests_plus_25pct`
(a slice's line requests a cycle x 1.25); `mshr_384` (384 missed sectors in flight a SM, not 1,024).

Per launch and variant: predicted and measured time, error, the predicted gap single over double,
`timing__utilization`, L2 read sectors, DRAM read bytes, long-scoreboard share of the stall samples,
wall time. Rows are appended to `<json>.partial.jsonl` as they finish and reused by a rerun with the
same arguments (an interrupted run loses nothing).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import gpusim
from gpusim.specs import presets
from gpusim.specs.overrides import resolve
from gpusim.timing.engine import TimingOptions
from validate.datadir import DATA_DIR
from validate.predict import build_case, measurement_environment

LAUNCHES = ("cuda_mma_double", "cuda_mma_single")


def variants(preset: str) -> dict[str, list[str]]:
    spec = presets.get(preset)
    return {
        "preset": [],
        "l2_latency_plus_100": [f"l2.hit_latency_cycles={spec.l2.hit_latency_cycles + 100}"],
        "slices_plus_20pct": [f"l2.bandwidth_bytes_per_cycle_per_slice={spec.l2.bandwidth_bytes_per_cycle_per_slice * 1.2:.4f}"],
        "requests_plus_25pct": [f"l2.requests_per_cycle_per_slice={spec.l2.requests_per_cycle_per_slice * 1.25:.4f}"],
        "mshr_384": ["l1.mshr_entries=384"],
    }


def _one(data_path: str, name: str, preset: str, sets: list[str], mode: str) -> dict:
    data = json.loads(Path(data_path).read_text())
    k = next(k for k in data["kernels"] if k["name"] == name)
    case = build_case(k)
    t = time.perf_counter()
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu=resolve(preset, sets),
                      shared_bytes=case.shared_bytes, timing=True, outputs=False,
                      timing_options=TimingOptions(mode=mode, functional="sampled", **measurement_environment(data)),
                      device_addresses=k.get("arg_addresses"), **case.options)
    m = r.metrics
    stalls = {key: v for key, v in m.items() if key.startswith("smsp__pcsamp_warps_issue_stalled_")
              and not key.endswith("_not_issued") and isinstance(v, (int, float))}
    total = sum(stalls.values()) or 1.0
    pred, meas = m["gpu__time_duration.sum"], k["metrics"]["gpu__time_duration.sum"]
    return {"launch": name, "predicted_us": round(pred / 1e3, 2), "measured_us": round(meas / 1e3, 2),
            "error_pct": round(100.0 * (pred / meas - 1.0), 2), "mode": m.get("timing__mode"),
            "utilization": m.get("timing__utilization"), "bound": m.get("timing__bound"),
            "lts_read_sectors": m.get("lts__t_sectors_op_read.sum"), "dram_read_bytes": m.get("dram__bytes_read.sum"),
            "long_scoreboard_share": round(stalls.get("smsp__pcsamp_warps_issue_stalled_long_scoreboard", 0.0) / total, 4),
            "sampling_error_pct": m.get("timing__sampling_error_pct"), "wall_s": round(time.perf_counter() - t, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA_DIR / "h100_tensor.json"), help="a tensor-set measurement file")
    ap.add_argument("--preset", default="h100-from-h200", help="the preset the variants change")
    ap.add_argument("--size", default="n4096", help="the launches' size name")
    ap.add_argument("--mode", default="full", choices=("full", "auto"), help="full simulation, or compare's sample")
    ap.add_argument("--jobs", type=int, default=2, help="processes")
    ap.add_argument("--variants", nargs="*", help="a subset of the variants (default: all)")
    ap.add_argument("--json", help="write the rows and the gaps here (JSON)")
    a = ap.parse_args(argv)
    every = variants(a.preset)
    chosen = {v: every[v] for v in (a.variants or every)}
    journal = Path(a.json + ".partial.jsonl") if a.json else None
    key = {"data": a.data, "preset": a.preset, "size": a.size, "mode": a.mode}
    done: dict[tuple[str, str], dict] = {}
    if journal and journal.is_file():
        for ln in journal.read_text().splitlines():
            row = json.loads(ln)
            if row.get("key") == key:
                done[(row["variant"], row["launch"])] = row
    todo = [(v, f"{n}/{a.size}") for v in chosen for n in LAUNCHES if (v, f"{n}/{a.size}") not in done]
    with ProcessPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futs = {pool.submit(_one, a.data, name, a.preset, chosen[v], a.mode): v for v, name in todo}
        for f in as_completed(futs):
            row = dict(f.result(), variant=futs[f], sets=chosen[futs[f]], key=key)
            done[(row["variant"], row["launch"])] = row
            print(json.dumps({x: row[x] for x in ("variant", "launch", "predicted_us", "measured_us", "error_pct")}),
                  flush=True)
            if journal:
                with journal.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
    gaps = {}
    for v in chosen:
        d, s = done.get((v, f"{LAUNCHES[0]}/{a.size}")), done.get((v, f"{LAUNCHES[1]}/{a.size}"))
        if d and s:
            gaps[v] = {"single_over_double_pct": round(100.0 * (s["predicted_us"] / d["predicted_us"] - 1.0), 2),
                       "measured_single_over_double_pct": round(100.0 * (s["measured_us"] / d["measured_us"] - 1.0), 2),
                       "double_error_pct": d["error_pct"], "single_error_pct": s["error_pct"]}
    for v, g in gaps.items():
        print(f"{v:24s} single/double {g['single_over_double_pct']:+6.2f}% (GPU {g['measured_single_over_double_pct']:+.2f}%)"
              f"  double {g['double_error_pct']:+.1f}%  single {g['single_error_pct']:+.1f}%")
    if a.json:
        out = {"command": "python benchmarks/buffering_levers.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               **key, "variants": chosen, "gaps": gaps,
               "rows": sorted(done.values(), key=lambda r: (list(chosen).index(r["variant"]) if r["variant"] in chosen else 99,
                                                           r["launch"]))}
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
