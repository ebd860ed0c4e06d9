"""Functional-mode speed: gpusim against Numba's own CUDA simulator on the same kernels.

    python benchmarks/functional_vs_cudasim.py [--programs reduce_interleaved_divergent ...] [--json FILE]

For each program (default: the shared-memory reduction of 16,384 floats in 64
blocks of 256 threads, and a few more), one launch at the default size is timed:
- Numba's simulator (`NUMBA_ENABLE_CUDASIM=1`, in a subprocess so the variable is set
  before numba.cuda is imported), `kernel[grid, block](*args)` once;
- gpusim `launch()` cold (empty PTX cache: includes Numba -> PTX compilation) and
  warm (PTX from the cache, as on any later run), best of 3.
Both outputs are checked against the numpy reference. Reported: seconds, the ratio
Numba-sim / gpusim, threads per second of Numba's simulator, and gpusim's simulated
warp instructions per second.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

DEFAULT = ["reduce_interleaved_divergent", "reduce_sequential", "vector_add", "transpose_shared", "histogram_shared"]

CUDASIM_SNIPPET = r"""
import os, sys, time
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import programs
c = programs.get(sys.argv[1]).case("default", seed=0)
t = time.perf_counter()
c.kernel[c.grid, c.block, 0, c.shared_bytes](*c.args)
dt = time.perf_counter() - t
c.check()
print(dt)
"""


def time_cudasim(name: str) -> float:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    out = subprocess.run([sys.executable, "-c", CUDASIM_SNIPPET, name], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def time_gpusim(name: str, cache_dir: str) -> tuple[float, float, int]:
    env = dict(os.environ, GPUSIM_CACHE_DIR=cache_dir)
    snippet = r"""
import sys, time, json
import gpusim, programs
from gpusim.frontend import compile as fc
spec = programs.get(sys.argv[1])
c = spec.case("default", seed=0)
t = time.perf_counter(); r = gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes)
cold = time.perf_counter() - t
c.check()
warm = []
for _ in range(3):
    fc.clear_memory_cache()
    c = spec.case("default", seed=0)
    t = time.perf_counter(); r = gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes)
    warm.append(time.perf_counter() - t)
    c.check()
print(json.dumps([cold, min(warm), r.metrics["smsp__inst_executed.sum"]]))
"""
    out = subprocess.run([sys.executable, "-c", snippet, name], env=env, capture_output=True, text=True, check=True)
    cold, warm, inst = json.loads(out.stdout.strip().splitlines()[-1])
    return cold, warm, int(inst)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", nargs="*", default=DEFAULT)
    ap.add_argument("--json", help="also write the rows to this file")
    a = ap.parse_args(argv)
    import programs  # after NUMBA_CACHE_DIR is set to a fresh cache
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for name in a.programs:
            c = programs.get(name).case("default", seed=0)
            threads = c.grid[0] * (c.grid[1] if len(c.grid) > 1 else 1) * c.block[0] * (c.block[1] if len(c.block) > 1 else 1)
            sim = time_cudasim(name)
            cold, warm, inst = time_gpusim(name, cache)
            rows.append(dict(program=name, threads=threads, numba_cudasim_s=sim, gpusim_cold_s=cold, gpusim_warm_s=warm,
                             ratio_cold=sim / cold, ratio_warm=sim / warm, cudasim_threads_per_s=threads / sim,
                             warp_instructions=inst, gpusim_warp_inst_per_s=inst / warm))
            r = rows[-1]
            print(f"{name:30s} threads {threads:6d}  numba-sim {sim:7.2f}s  gpusim cold {cold:6.3f}s warm {warm:6.3f}s  "
                  f"ratio cold {r['ratio_cold']:6.0f}x warm {r['ratio_warm']:6.0f}x  "
                  f"numba-sim {r['cudasim_threads_per_s']:6.0f} threads/s  gpusim {r['gpusim_warp_inst_per_s']:,.0f} warp-inst/s",
                  flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": os.uname().nodename, "python": sys.version.split()[0], "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
