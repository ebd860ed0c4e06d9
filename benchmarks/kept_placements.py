"""What the rows' kept placements save, measured inside one process: launches of a Triton program
with the memory and cp.async rows taking their last placement (`fastpath/kept_placement.unchanged`)
against the same launches with it withheld, in alternating blocks.

    python benchmarks/kept_placements.py [PROGRAM ...] [--size JSON] [--rounds 40] [--launches 10] [--fresh]

Two checkouts compared in separate processes (`paired_launches.py`) carry each process's own
speed, which on a shared 2-core VM differs by up to tens of percent for a process's whole run; a
change that can be switched off at run time is measured better in one process: here each row op's
kept placement is swapped for one too small to hold a lane (`unchanged` then always places
afresh), block by block, the blocks alternating ABBA. `--fresh` launches each case on new inputs
(as `triton_speed.py` does). Printed per program: the median milliseconds a launch with and
without, and their ratio.
"""
from __future__ import annotations

import argparse
import gc
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
from gpusim.functional.fastpath.async_run import CopyRunOp  # noqa: E402
from gpusim.functional.fastpath.memory_run import MemoryRunOp  # noqa: E402


def measure(program: str, size, rounds: int, launches: int, fresh: bool) -> tuple[float, float]:
    """(ms a launch with the kept placements, without), at `size` (a size name or overrides)."""
    spec = importlib.import_module("programs.triton_kernels." + program).PROGRAM
    cases = [spec.case(size, seed=s) for s in range(2)]

    def launch(c) -> None:
        gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", workers=1, **c.options)
    for i in range(max(4, 100 // launches)):
        launch(cases[i % 2])
    kept = {o: o.placed for o in gc.get_objects()
            if isinstance(o, (CopyRunOp, MemoryRunOp)) and o.placed is not None}
    withheld = {o: (p[0], [(np.zeros((s[0].shape[0], 0), np.uint64),) + s[1:] for s in p[1]])
                for o, p in kept.items()}

    def block(placed: dict) -> float:
        for o, p in placed.items():
            o.placed = p
        t = time.process_time()
        for i in range(launches):
            launch(spec.case(size, seed=0) if fresh else cases[i % 2])
        return (time.process_time() - t) / launches * 1e3
    on, off = [], []
    for r in range(rounds):
        for which in ((kept, withheld) if r % 2 == 0 else (withheld, kept)):
            (on if which is kept else off).append(block(which))
    for o, p in kept.items():
        o.placed = p
    return statistics.median(on), statistics.median(off)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("programs", nargs="*", default=["matmul", "flash_attention"])
    ap.add_argument("--size", default='"default"', help="a size name or overrides, as JSON")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--fresh", action="store_true")
    a = ap.parse_args(argv)
    size = json.loads(a.size)
    for program in a.programs:
        on, off = measure(program, size, a.rounds, a.launches, a.fresh)
        print(f"{program} {a.size}: kept {on:.3f} ms  placed afresh {off:.3f} ms  kept/afresh {on / off:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
