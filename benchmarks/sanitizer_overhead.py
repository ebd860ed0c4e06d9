"""What the sanitizer tools cost: every program of programs/ at its default size, launched
functionally without and with `check="all"` (memcheck, racecheck, initcheck, synccheck).

    python benchmarks/sanitizer_overhead.py [--programs NAME ...] [--repeat 3] [--json FILE]

Each launch is timed warm (PTX compiled and decoded by a first, untimed launch), best of
`--repeat`, alternating plain and checked runs so machine load hits both alike. Also
timed: the plain launch with the hooks present but no tool on, against the same launch
with the hooks removed (`executor.san` attribute test, the only cost when check is off),
for the reduction. Reported per program: seconds plain, seconds checked, their ratio;
the target is a ratio of at most 3.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def time_launch(spec, check, repeat: int) -> float:
    import gpusim
    best = float("inf")
    for _ in range(repeat):
        c = spec.case("default", seed=0)
        t = time.perf_counter()
        gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes, check=check)
        best = min(best, time.perf_counter() - t)
    return best


def main(argv=None) -> int:
    import programs
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", nargs="*", default=list(programs.PROGRAMS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="write the rows and the summary to this file")
    a = ap.parse_args(argv)
    rows = []
    for name in a.programs:
        spec = programs.get(name)
        time_launch(spec, "all", 1)                       # compile, decode, warm caches
        plain, checked = [], []
        for _ in range(a.repeat):
            plain.append(time_launch(spec, None, 1))
            checked.append(time_launch(spec, "all", 1))
        row = {"program": name, "plain_s": round(min(plain), 4), "checked_s": round(min(checked), 4)}
        row["ratio"] = round(row["checked_s"] / row["plain_s"], 2)
        rows.append(row)
        print(f"{name:32s} plain {row['plain_s']:7.3f} s  checked {row['checked_s']:7.3f} s  x{row['ratio']:.2f}",
              flush=True)
    ratios = sorted(r["ratio"] for r in rows)
    tot_plain = sum(r["plain_s"] for r in rows)
    tot_checked = sum(r["checked_s"] for r in rows)
    out = {"rows": rows, "max_ratio": ratios[-1], "median_ratio": ratios[len(ratios) // 2],
           "total_plain_s": round(tot_plain, 3), "total_checked_s": round(tot_checked, 3),
           "total_ratio": round(tot_checked / tot_plain, 2), "target_max_ratio": 3.0,
           "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                       "load_1min": round(os.getloadavg()[0], 2)}}
    print(f"max x{out['max_ratio']}, median x{out['median_ratio']}, all programs x{out['total_ratio']} "
          f"({out['total_plain_s']} s -> {out['total_checked_s']} s)")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
