"""What `--html` and `--plot` add to a `gpusim run`: wall time of the command with and without
them, as a user runs it (a fresh process each time, PTX and ptxas caches warm).

    python benchmarks/report_overhead.py [--program transpose] [--repeats 5] [--json FILE]

Runs are interleaved (plain, pictures, plain, ...) so that a busy machine slows both alike; the
medians are compared. The target (issue 9): the pictures add at most 50% to the run.

Also recorded: each run's CPU time (user + system of the command and every process it started,
`getrusage(RUSAGE_CHILDREN)`), and the load average before the runs. The pictures are drawn by
worker processes beside the simulator, so the wall-time overhead depends on an idle second core:
on a machine whose cores are busy with other work, wall time follows CPU time instead.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def wall(cmd: list[str]) -> tuple[float, float]:
    """(wall s, CPU s of the command and its processes)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    w = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return w, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", default="transpose")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    run = [sys.executable, "-m", "gpusim.cli", "run", a.program]
    with tempfile.TemporaryDirectory() as d:
        pictures = run + ["--html", os.path.join(d, "r.html"), "--plot", os.path.join(d, "plots")]
        wall(pictures)                                   # warm the PTX / ptxas caches and the font cache
        load = os.getloadavg()
        plain_s, pictures_s = [], []
        for _ in range(a.repeats):
            plain_s.append(wall(run))
            pictures_s.append(wall(pictures))
    med = lambda runs, k: statistics.median(r[k] for r in runs)     # noqa: E731
    plain, pics = med(plain_s, 0), med(pictures_s, 0)
    plain_cpu, pics_cpu = med(plain_s, 1), med(pictures_s, 1)
    row = {"program": a.program, "cpus": os.cpu_count(), "repeats": a.repeats, "load_average_before": list(load),
           "plain_wall_s": [r[0] for r in plain_s], "html_plot_wall_s": [r[0] for r in pictures_s],
           "plain_cpu_s": [r[1] for r in plain_s], "html_plot_cpu_s": [r[1] for r in pictures_s],
           "plain_median_s": plain, "html_plot_median_s": pics, "overhead_pct": 100.0 * (pics / plain - 1),
           "plain_cpu_median_s": plain_cpu, "html_plot_cpu_median_s": pics_cpu,
           "cpu_overhead_pct": 100.0 * (pics_cpu / plain_cpu - 1),
           "command": f"gpusim run {a.program} [--html r.html --plot plots/]"}
    print(f"gpusim run {a.program}: {plain:.2f} s; with --html and --plot: {pics:.2f} s "
          f"(+{row['overhead_pct']:.0f}%, medians of {a.repeats}, {os.cpu_count()} CPUs); "
          f"CPU {plain_cpu:.2f} s vs {pics_cpu:.2f} s (+{row['cpu_overhead_pct']:.0f}%); "
          f"load average before {load[0]:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(row, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
