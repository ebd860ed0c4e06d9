"""Timing-mode speed: simulated warp instructions per second on one core.

    taskset -c 0 python benchmarks/timing_speed.py [--programs ...] [--json FILE]

Each program of programs/ at its default size is launched with `timing=True` (full
simulation), after one warm-up launch that fills the PTX and ptxas caches; the wall
time of the second launch covers functional execution, trace building and the SimPy
timing model. Reported per program and as the median over programs.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import gpusim
import programs
from gpusim.timing.engine import TimingOptions


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", nargs="*", default=sorted(programs.PROGRAMS))
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rows = []
    for name in a.programs:
        spec = programs.get(name)
        for rep in range(2):
            c = spec.case("default", seed=rep)
            t = time.perf_counter()
            r = gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes, timing=True,
                              timing_options=TimingOptions(mode="full"))
            wall = time.perf_counter() - t
        n = r.metrics["smsp__inst_executed.sum"]
        rows.append({"program": name, "warp_instructions": n, "wall_s": wall, "warp_inst_per_s": n / wall,
                     "predicted_us": r.metrics["gpu__time_duration.sum"] / 1000})
        print(f"{name:30s} {n:9,d} warp-inst  {wall:6.2f} s  {n / wall:10,.0f} warp-inst/s", flush=True)
    med = statistics.median(x["warp_inst_per_s"] for x in rows)
    total = sum(x["warp_instructions"] for x in rows) / sum(x["wall_s"] for x in rows)
    print(f"median {med:,.0f} warp-inst/s; aggregate {total:,.0f} warp-inst/s; "
          f"slowest {min(x['warp_inst_per_s'] for x in rows):,.0f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "median_warp_inst_per_s": med, "aggregate_warp_inst_per_s": total}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
