"""How much a small Triton launch's time depends on the state of the CPU caches: one process
launches a program again and again, and before each timed launch reads and writes MIB of other
memory (untimed), the sizes taken in turn round after round (so that the machine's drift falls on
each size alike).

    python benchmarks/cache_sensitivity.py [PROGRAM] [--size default] [--mib 0 2 8 32 128] [--rounds 40]

Prints, per size of other memory touched, the median wall-clock time of a launch (gpusim, functional
mode, one core, after 60 untimed launches). Session 52 on this 2-core VM (48 MiB L3), at ac63fa7:
the attention default 1.47-1.56 ms a launch with up to 8 MiB touched between launches,
1.74 ms with 32 MiB, 1.93 ms with 128 MiB; the matmul default 1.11-1.27, 1.25 and 1.63 ms: what a
launch pays when other processes ran since its last (`triton_speed.py --pollute` measures both
sides so).
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
    ap.add_argument("--rounds", type=int, default=40)
    a = ap.parse_args(argv)
    size = json.loads(a.size) if a.size.startswith("{") else a.size
    spec = importlib.import_module("programs.triton_kernels." + a.program).PROGRAM

    def launch():
        c = spec.case(size, seed=0)
        t = time.perf_counter()
        gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", workers=1, **c.options)
        return time.perf_counter() - t

    for _ in range(60):
        launch()
    other = {m: np.zeros(int(m * (1 << 20)) // 8) for m in a.mib}
    times: dict[float, list[float]] = {m: [] for m in a.mib}
    for _ in range(a.rounds):
        for m, buf in other.items():
            buf += 1.0
            times[m].append(launch())
    for m in a.mib:
        print(f"{a.program} {a.size}: {m:6g} MiB touched before each launch: {statistics.median(times[m]) * 1e3:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
