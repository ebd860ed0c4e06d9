"""How much a small Triton launch's time depends on the state of the CPU caches: one process
launches a program again and again, and before each timed launch reads and writes MIB of other
memory (untimed), the sizes taken in turn round after round (so that the machine's drift falls on
each size alike).

    python benchmarks/cache_sensitivity.py [PROGRAM] [--size default] [--mib 0 2 8 32 128] [--rounds 40]
                                           [--idle-ms 0 10]

Prints, per size of other memory touched, the median wall-clock and CPU time of a launch (gpusim,
functional mode, one core, after 60 untimed launches); with `--idle-ms`, per time the process
sleeps before each timed launch instead, in runs of 25 launches a setting (nothing else touched:
what a launch after a pause pays on this VM, whose host runs other work on an idle virtual CPU;
taken launch by launch, the launches with no sleep came out nearly as slow: a pause's effect
outlasts the launch after it). Session 52 on this 2-core VM (48 MiB L3), at ac63fa7:
the attention default 1.47-1.56 ms a launch with up to 8 MiB touched between launches,
1.74 ms with 32 MiB, 1.93 ms with 128 MiB; the matmul default 1.11-1.27, 1.25 and 1.63 ms: what a
launch pays when other processes ran since its last (`triton_speed.py --pollute` measures both
sides so). Session 53 at 5adf32b, `--idle-ms 0 10 --rounds 6`: the matmul default 1.30 ms a launch back to
back and 2.45 ms after a 10 ms sleep, the attention default 1.55 and 2.56 ms, CPU time alike (the
process's own time: not waiting, running slower).
"""
from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gpusim  # noqa: E402  (this checkout's, after the path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("program", nargs="?", default="flash_attention", help="a program of programs/triton_kernels")
    ap.add_argument("--size", default="default", help="a size name of the program, or a JSON dict of overrides")
    ap.add_argument("--mib", type=float, nargs="*", default=[0, 2, 8, 32, 128],
                    help="MiB of other memory read and written before each timed launch")
    ap.add_argument("--idle-ms", type=float, nargs="*", default=None,
                    help="instead: milliseconds the process sleeps before each timed launch")
    ap.add_argument("--rounds", type=int, default=40)
    a = ap.parse_args(argv)
    size = json.loads(a.size) if a.size.startswith("{") else a.size
    spec = importlib.import_module("programs.triton_kernels." + a.program).PROGRAM

    def launch():
        c = spec.case(size, seed=0)
        t, t0 = time.perf_counter(), time.process_time()
        gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", workers=1, **c.options)
        return time.perf_counter() - t, time.process_time() - t0

    for _ in range(60):
        launch()
    idle = a.idle_ms is not None
    settings = a.idle_ms if idle else a.mib
    other = {m: None if idle else np.zeros(int(m * (1 << 20)) // 8) for m in settings}
    times: dict[float, list[tuple[float, float]]] = {m: [] for m in settings}
    for _ in range(a.rounds):
        for m, buf in other.items():
            for _ in range(25 if idle else 1):   # (idle: in runs of 25, a pause's effect outlasting a launch)
                if idle:
                    time.sleep(m / 1e3)
                else:
                    buf += 1.0
                times[m].append(launch())
    what = "ms asleep" if idle else "MiB touched"
    for m in settings:
        wall, cpu = (statistics.median(t[i] for t in times[m]) * 1e3 for i in (0, 1))
        print(f"{a.program} {a.size}: {m:6g} {what} before each launch: {wall:.3f} ms (CPU {cpu:.3f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
