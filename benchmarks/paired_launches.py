"""Two checkouts' functional launch time on one Triton program, measured paired: a change of a few
percent, which this machine's drift between minutes (tens of percent) hides from separate runs.

    python benchmarks/paired_launches.py BEFORE AFTER PROGRAM [--size JSON] [--rounds 20] [--pairs 4]
                                         [--launches 10] [--warmup 150]

BEFORE and AFTER are checkouts of this repository (e.g. `git worktree add /tmp/before <commit>`).
For each, `--pairs` worker processes (PYTHONHASHSEED=0, OPENBLAS_NUM_THREADS=1) import that
checkout's gpusim, launch PROGRAM (a module of `programs/triton_kernels/`, `--size` a size name or
overrides as JSON) `--warmup` times untimed (segments compiled or loaded from the disk cache),
then, round after round, each worker in turn times `--launches` launches (CPU time of its process)
while the others wait on their stdin: the checkouts' launches alternate within seconds, so the
machine's drift falls on both. Printed: per checkout the mean over its workers of each worker's
median milliseconds a launch, the ratio AFTER / BEFORE, and every worker's median (their spread is
the noise floor). Two processes of one checkout differ by up to ~5% for the whole run (where
their memory landed: a checkout run against itself with two pairs gave 0.944), so the pairs
alternate which checkout starts first and the rounds alternate direction, and a change of a few
percent wants four pairs or more, and a run of BEFORE against itself beside it.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time


def worker(root: str, program: str, size, warmup: int) -> None:
    """One worker: gpusim from `root`, `warmup` launches, then one timed batch per stdin line."""
    sys.path.insert(0, root)
    import gpusim                                # noqa: PLC0415  (the checkout's, from root)
    if not gpusim.__file__.startswith(os.path.realpath(root)) and not gpusim.__file__.startswith(root):
        raise SystemExit(f"imported {gpusim.__file__}, not {root}'s gpusim")
    spec = importlib.import_module("programs.triton_kernels." + program).PROGRAM
    cases = [spec.case(size, seed=s) for s in range(2)]

    def launches(n: int) -> None:
        for i in range(n):
            c = cases[i % 2]
            gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", workers=1, **c.options)

    launches(warmup)
    print("ready", flush=True)
    for line in sys.stdin:
        n = int(line)
        t = time.process_time()
        launches(n)
        print(time.process_time() - t, flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("program")
    ap.add_argument("--size", default='"default"', help="a size name or overrides, as JSON")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    size = json.loads(a.size) if a.size.lstrip().startswith(("{", '"')) else a.size
    if a.worker:
        worker(a.before, a.program, size, a.warmup)
        return 0
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    env.pop("PYTHONPATH", None)
    # pairs alternate which checkout starts first, and rounds alternate direction: a worker's place in the
    # order (its start, its turn after another's batch) falls on both checkouts alike
    sides = [side for i in range(a.pairs) for side in ((0, 1) if i % 2 == 0 else (1, 0))]
    roots = [(a.before, a.after)[side] for side in sides]
    procs = [subprocess.Popen([sys.executable, __file__, root, root, a.program, "--size", json.dumps(size),
                               "--warmup", str(a.warmup), "--worker"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env, cwd=root) for root in roots]
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            raise SystemExit("a worker failed to start")
    times: list[list[float]] = [[] for _ in procs]
    for r in range(a.rounds):
        order = list(enumerate(procs))
        for k, p in (order if r % 2 == 0 else order[::-1]):
            p.stdin.write(f"{a.launches}\n")
            p.stdin.flush()
            times[k].append(1e3 * float(p.stdout.readline()) / a.launches)
    for p in procs:
        p.stdin.close()
        p.wait()
    med = [statistics.median(t) for t in times]
    before = statistics.mean([m for m, side in zip(med, sides) if side == 0])
    after = statistics.mean([m for m, side in zip(med, sides) if side == 1])
    print(f"{a.program} {a.size}: before {before:.3f} ms  after {after:.3f} ms  after/before {after / before:.3f}"
          f"   per worker (b: before, a: after): "
          f"{' '.join(f'{m:.3f}' + 'ba'[side] for m, side in zip(med, sides))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
