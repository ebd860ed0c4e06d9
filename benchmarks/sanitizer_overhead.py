"""What the sanitizer tools cost: every program of programs/ at its default size, launched
functionally without and with `check="all"` (memcheck, racecheck, initcheck, synccheck).

    python benchmarks/sanitizer_overhead.py [--programs NAME ...] [--repeat 3] [--json FILE]
                                            [--baseline DIR]

Each launch is timed warm (PTX compiled and decoded by a first, untimed launch), best of
`--repeat`, alternating plain and checked runs so machine load hits both alike. Also
timed, with `--baseline DIR` (a checkout of gpusim from before the sanitizer, e.g.
`git worktree add /tmp/base dcdf5c0^`): the functional run (`PreparedLaunch.run_all`) of
a few programs in that tree and in this one, alternating processes, best CPU time of all rounds:
what the hooks cost when no tool is on (one `executor.san` test per memory instruction,
barrier release and warp collective). Reported per program: seconds plain, seconds
checked, their ratio; the target is a ratio of at most 3.
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
import gpusim  # noqa: E402
import programs  # noqa: E402
import subprocess  # noqa: E402


def time_launch(spec, check, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        c = spec.case("default", seed=0)
        t = time.perf_counter()
        gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes, check=check)
        best = min(best, time.perf_counter() - t)
    return best


HOOK_PROGRAMS = ("reduce_sequential", "transpose_shared", "matmul_tiled", "scan_block", "histogram_shared",
                 "warp_vote_demo")
RUN_ALL = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import gpusim, programs
assert gpusim.__file__.startswith(sys.argv[1]), gpusim.__file__
out = {}
for name in sys.argv[3:]:
    spec = programs.get(name)
    c = spec.case(); gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes)
    best = 1e9
    for _ in range(int(sys.argv[2])):
        c = spec.case()
        p = gpusim.prepare(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes)
        t = time.process_time(); p.run_all(1 << 15); best = min(best, time.process_time() - t)
    out[name] = best
print(json.dumps(out))
"""


def hooks_off(baseline: str, rounds: int = 6, repeat: int = 5) -> dict:
    """Best functional run time per program in `baseline` and in this tree (see module doc)."""
    here = str(Path(__file__).resolve().parents[1])
    best = {"baseline": {}, "this": {}}
    for _ in range(rounds):
        for label, tree in (("baseline", baseline), ("this", here)):
            out = subprocess.run([sys.executable, "-c", RUN_ALL, tree, str(repeat), *HOOK_PROGRAMS],
                                 capture_output=True, text=True, check=True, cwd=tree)
            for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items():
                best[label][k] = round(min(best[label].get(k, 1e9), v), 4)
    best["baseline_total_s"] = round(sum(best["baseline"].values()), 4)
    best["this_total_s"] = round(sum(best["this"].values()), 4)
    best["ratio"] = round(best["this_total_s"] / best["baseline_total_s"], 3)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", nargs="*", default=list(programs.PROGRAMS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="write the rows and the summary to this file")
    ap.add_argument("--baseline", help="a gpusim checkout without the sanitizer hooks: time the hooks with no tool on")
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
    if a.baseline:
        out["hooks_off"] = hooks_off(a.baseline)
        h = out["hooks_off"]
        print(f"no tool on, functional run of {len(HOOK_PROGRAMS)} programs: {h['baseline_total_s']} s without the "
              f"hooks, {h['this_total_s']} s with them (x{h['ratio']})")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
