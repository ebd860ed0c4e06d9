"""The DRAM write-drain levers against the GPU's copy figures (issue 24; docs/mechanisms_24.md section 44).

    python benchmarks/dram_write_levers.py [--preset h200] [--json benchmarks/results/dram_write_levers_h200.json]
                                           [--levers "hbm.queue_ns=40" "hbm.queue_ns=30,hbm.t_wtr_ns=22"]

For each override set (none, then the write queue's depth and the write-to-read turnaround, one way and
together; or the `--levers` given, each a comma-separated override list, e.g. a field a patch of
benchmarks/results/ adds), gpusim's figures for the launches where the H200 and gpusim part (validate.copy_latency_probe,
validate.tile_copy_probe): a step of the 32-lane chase with write-backs at 32 warps a SM and reading alone
at 64, in SM cycles; the copy at 256 x 1 and 16 x 16 blocks, the grid-stride copy and the 16 x 16 read, in
us. Beside them the GPU's (data/measurements/copy_latency_<gpu>.json and tile_copy_<gpu>.json, the first run
of each). Each override set runs in a subprocess of its own.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEVERS = ([], ["hbm.write_queue_bursts=4"], ["hbm.write_queue_bursts=64"],
          ["hbm.write_queue_bursts=64", "hbm.t_wtr_ns=120"], ["hbm.write_queue_bursts=128", "hbm.t_wtr_ns=240"])
TILE = [("copy2d", 256, 1), ("copy2d", 16, 16), ("copy_stride", 256, 1), ("read2d", 16, 16)]
CHASE = [("random", 1, 32), ("random", 0, 64)]

WORKER = r"""
import json, sys, warnings
import numpy as np
import gpusim
import validate.copy_latency_probe as c
import validate.tile_copy_probe as tc
from gpusim.specs.overrides import resolve
warnings.simplefilter("ignore")
preset, overrides, chase, tile = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
spec = resolve(preset, overrides)
out = {}
copy = np.zeros(c.LINES * 32, np.uint32)
for order, write, warps in chase:
    nxt, start = c.tables(np, order, spec.sm_count * warps)
    grid, block = c.launch_shape({"warps_per_sm": warps, "blocks": spec.sm_count})
    m = gpusim.launch(gpusim.CudaSource(c.SOURCE, "chase"), grid, block,
                      (np.repeat(nxt, 32), copy, start, np.int32(c.STEPS), np.int32(write)),
                      gpu=spec, timing=True, outputs=False).metrics
    out[f"chase {order} write={write} {warps} warps/SM, cycles a step"] = (
        m["gpu__time_duration.sum"] / c.STEPS * m["sm__cycles_elapsed.avg.per_second"] * 1e-9)
del copy
n = tc.ROWS * (tc.COLS + tc.PAD)
a, b = (np.arange(n) % 1024).astype(np.float32), np.zeros(n, np.float32)
for kernel, bx, by in tile:
    case = {"kernel": kernel, "bx": bx, "by": by, "pitch": tc.COLS}
    grid, block, args = tc.launch_args(case, np, a, b, None)
    m = gpusim.launch(gpusim.CudaSource(tc.SOURCE, kernel), grid, block, args, gpu=spec, timing=True,
                      outputs=False).metrics
    out[f"{kernel} {bx}x{by}, us"] = m["gpu__time_duration.sum"] / 1e3
print(json.dumps(out))
"""


def measured(gpu: str) -> dict:
    """The GPU's figures for the same launches (the committed probe runs)."""
    chase = json.loads((ROOT / f"data/measurements/copy_latency_{gpu}.json").read_text())["rows"]
    tile = json.loads((ROOT / f"data/measurements/tile_copy_{gpu}.json").read_text())["rows"]
    out = {}
    for order, write, warps in CHASE:
        r = next(r for r in chase if r.get("kernel", "chase") == "chase" and r["order"] == order
                 and r["write"] == write and r["warps_per_sm"] == warps)
        out[f"chase {order} write={write} {warps} warps/SM, cycles a step"] = r["step_cycles"]
    for kernel, bx, by in TILE:
        r = next(r for r in tile if r["kernel"] == kernel and r["bx"] == bx and r["by"] == by and r["pitch"] == 8192)
        out[f"{kernel} {bx}x{by}, us"] = r["us"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="h200")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--levers", nargs="+", help="override lists to run instead of the default ones (a,b,c each)")
    a = ap.parse_args(argv)
    levers = [[o for o in lv.split(",") if o] for lv in a.levers] if a.levers else LEVERS
    rows = []
    gpu = measured(a.preset)
    print("GPU:", json.dumps({k: round(v, 1) for k, v in gpu.items()}))
    for ov in levers:
        r = subprocess.run([sys.executable, "-c", WORKER, a.preset, json.dumps(ov), json.dumps(CHASE), json.dumps(TILE)],
                           cwd=ROOT, capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"{ov}: {r.stderr[-2000:]}")
        got = json.loads(r.stdout.strip().splitlines()[-1])
        rows.append({"overrides": ov, "figures": got})
        print(ov or "preset", json.dumps({k: round(v, 1) for k, v in got.items()}))
    if a.json:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        cmd = f"python benchmarks/dram_write_levers.py --preset {a.preset} --json {a.json}"
        if a.levers:
            cmd += " --levers " + " ".join(f'"{lv}"' for lv in a.levers)
        a.json.write_text(json.dumps({"command": cmd, "date": time.strftime("%Y-%m-%d"), "model_commit": head,
                                      "measured": gpu, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
