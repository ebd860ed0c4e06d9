"""What `--html` and `--plot` add to a `gpusim run`: wall time of the command with and without
them, as a user runs it (a fresh process each time, PTX and ptxas caches warm).

    python benchmarks/report_overhead.py [--program transpose] [--repeats 5] [--json FILE]

Runs are interleaved (plain, pictures, plain, ...) so that a busy machine slows both alike; the
medians are compared. The target (issue 9): the pictures add at most 50% to the run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


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
        plain_s, pictures_s = [], []
        for _ in range(a.repeats):
            plain_s.append(wall(run))
            pictures_s.append(wall(pictures))
    plain, pics = statistics.median(plain_s), statistics.median(pictures_s)
    row = {"program": a.program, "cpus": os.cpu_count(), "repeats": a.repeats,
           "plain_wall_s": plain_s, "html_plot_wall_s": pictures_s,
           "plain_median_s": plain, "html_plot_median_s": pics, "overhead_pct": 100.0 * (pics / plain - 1),
           "command": f"gpusim run {a.program} [--html r.html --plot plots/]"}
    print(f"gpusim run {a.program}: {plain:.2f} s; with --html and --plot: {pics:.2f} s "
          f"(+{row['overhead_pct']:.0f}%, medians of {a.repeats}, {os.cpu_count()} CPUs)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(row, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
