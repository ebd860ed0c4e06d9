"""Peak memory of a large timed launch: `transpose_shared` on a 4096 x 4096 float32 matrix
(its `large` size: 65,536 blocks of 32 x 8 threads) with the timing model, as
`gpusim run transpose_shared --size large` runs it (sampled timing, every block executed
functionally so the output is exact, checked against numpy).

    python benchmarks/peak_memory.py [--program transpose_shared] [--size large] [--json FILE]

Runs the launch in a fresh child process and reports its peak resident set size
(`ru_maxrss` of the child), the wall time, and the peak of the process before the launch
(imports, inputs). The target (issue 11): under 4 GB.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

LIMIT_BYTES = 4 << 30

CHILD = r"""
import json, resource, sys, time
import gpusim, programs
from gpusim.timing.engine import TimingOptions
spec = programs.PROGRAMS[sys.argv[1]]
case = spec.case(sys.argv[2])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t = time.perf_counter()
r = gpusim.launch(case.kernel, case.grid, case.block, case.args, timing=True, shared_bytes=case.shared_bytes,
                  timing_options=TimingOptions())
wall = time.perf_counter() - t
case.check()
print(json.dumps({"before_launch_rss_bytes": before, "launch_wall_s": wall, "grid": list(case.grid),
                  "block": list(case.block), "params": case.params,
                  "predicted_us": r.metrics["gpu__time_duration.sum"] / 1000,
                  "timing_mode": str(r.metrics.get("timing__mode", "")), "check": "passed"}))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", default="transpose_shared")
    ap.add_argument("--size", default="large")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    load = os.getloadavg()
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, a.program, a.size], check=True, capture_output=True, text=True)
    total = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024     # Linux: KiB
    doc = {"program": a.program, "size": a.size, **json.loads(out.stdout.strip().splitlines()[-1]),
           "peak_rss_bytes": peak, "peak_rss_GiB": round(peak / (1 << 30), 3), "limit_bytes": LIMIT_BYTES,
           "under_limit": peak < LIMIT_BYTES, "process_wall_s": total, "load_average_before": list(load),
           "cpus": os.cpu_count(), "python": platform.python_version(), "date": time.strftime("%Y-%m-%d")}
    print(json.dumps(doc, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    return 0 if doc["under_limit"] else 1


if __name__ == "__main__":
    sys.exit(main())
