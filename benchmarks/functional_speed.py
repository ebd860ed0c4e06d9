"""Functional-mode speed at sizes people run: the fast core against the reference
interpreter, a Numba CPU loop computing the same result, and Numba's CUDA simulator.

    python benchmarks/functional_speed.py [--repeats 3] [--reference] [--cudasim] [--json FILE]

Per case (a program of `programs/` at a given size, default: matmul_tiled 512^3,
transpose_shared and transpose_naive 4096^2):
- gpusim, fast core, one worker (`workers=1`): the first launch in this process (cold: it
  loads the compiled LSU kernels and compiles the kernel's ALU segments) and the median of
  `--repeats` further launches, wall and CPU time; thread instructions per second from the
  launch's own counters (`smsp__thread_inst_executed.sum`: SASS, as Nsight counts them, and
  `gpusim__ptx_thread_inst_executed.sum`: PTX, what the functional core executes); the output
  checked against the program's numpy reference;
- with `--reference`: the reference interpreter (`core="reference"`), one launch: the speed-up;
- gpusim with every CPU (`workers=None`), one launch;
- a Numba CPU-target loop (`@numba.njit`) computing the same result (matmul: the same fused
  multiply-adds in the same order, `fastmath={"contract"}`, so its output is compared bit for
  bit with gpusim's; transpose: a copy), median of `--repeats` after one compiling call;
- with `--cudasim`: Numba's CUDA simulator (`NUMBA_ENABLE_CUDASIM=1`, in a subprocess) on the
  same kernel and arguments but only the first `CUDASIM_BLOCKS` blocks of the grid (the whole
  grid would take hours); its time scaled by blocks to the whole grid.
Machine, versions, load averages and the command are written with the rows.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import gpusim  # noqa: E402
import programs  # noqa: E402
import llvmlite  # noqa: E402
import numba  # noqa: E402

CASES = [("matmul_tiled", {"m": 512, "n": 512, "k": 512}),
         ("transpose_shared", {"rows": 4096, "cols": 4096}),
         ("transpose_naive", {"rows": 4096, "cols": 4096})]
CUDASIM_BLOCKS = 4

CUDASIM_SNIPPET = r"""
import os, sys, json, time
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import programs
c = programs.get(sys.argv[1]).case(json.loads(sys.argv[2]), seed=0)
grid = tuple(c.grid) if isinstance(c.grid, tuple) else (c.grid,)
blocks = int(sys.argv[3])
sub = (min(blocks, grid[0]),) + tuple(1 for _ in grid[1:])
t = time.perf_counter()
c.kernel[sub, c.block, 0, c.shared_bytes](*c.args)
print(json.dumps({"seconds": time.perf_counter() - t, "blocks": sub[0]}))
"""


def njit_reference(name: str):
    """A @numba.njit function computing the case's result on the CPU, and how to call it."""
    if name.startswith("matmul"):
        @numba.njit(fastmath={"contract"}, cache=True)
        def mm(a, b, c):
            m, k = a.shape
            n = b.shape[1]
            for i in range(m):
                for j in range(n):
                    acc = np.float32(0)
                    for t in range(k):
                        acc += a[i, t] * b[t, j]
                    c[i, j] = acc
        return lambda args: mm(*args)
    if name.startswith("transpose"):
        @numba.njit(cache=True)
        def tr(a, b):
            rows, cols = a.shape
            for i in range(rows):
                for j in range(cols):
                    b[j, i] = a[i, j]
        return lambda args: tr(*args)
    raise KeyError(name)


def launch(case, **kw):
    t, tc = time.perf_counter(), time.process_time()
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args, shared_bytes=case.shared_bytes, **kw)
    return r, time.perf_counter() - t, time.process_time() - tc


def bench(name: str, size: dict, repeats: int, reference: bool, cudasim: bool) -> dict:
    spec = programs.get(name)
    row: dict = {"program": name, "size": size}
    c = spec.case(size, seed=0)
    r, cold, cold_cpu = launch(c, workers=1)
    c.check()
    row.update(cold_s=cold, cold_cpu_s=cold_cpu, grid=list(c.grid) if isinstance(c.grid, tuple) else c.grid,
               block=list(c.block) if isinstance(c.block, tuple) else c.block,
               warp_inst=r.metrics["smsp__inst_executed.sum"],
               thread_inst_sass=r.metrics["smsp__thread_inst_executed.sum"],
               thread_inst_ptx=r.metrics["gpusim__ptx_thread_inst_executed.sum"])
    out_fast = [np.array(a, copy=True) for a in c.args if isinstance(a, np.ndarray)]
    walls, cpus = [], []
    for _ in range(repeats):
        c = spec.case(size, seed=0)
        r2, w, cp = launch(c, workers=1)
        c.check()
        walls.append(w)
        cpus.append(cp)
        assert r2.metrics == r.metrics
    row["fast_wall_s"] = walls
    row["fast_cpu_s"] = cpus
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    row.update(fast_median_wall_s=wall, fast_median_cpu_s=cpu,
               sass_thread_inst_per_s=row["thread_inst_sass"] / wall,
               ptx_thread_inst_per_s=row["thread_inst_ptx"] / wall,
               sass_thread_inst_per_cpu_s=row["thread_inst_sass"] / cpu,
               ptx_thread_inst_per_cpu_s=row["thread_inst_ptx"] / cpu)
    c = spec.case(size, seed=0)
    rp, w, cp = launch(c)
    c.check()
    row.update(all_cpus_workers=rp.extra["workers"][0], all_cpus_note=rp.extra["workers"][1],
               all_cpus_wall_s=w, all_cpus_cpu_s=cp)
    same = all(a.tobytes() == b.tobytes() for a, b in
               zip(out_fast, [np.array(a) for a in c.args if isinstance(a, np.ndarray)]))
    row["all_cpus_identical"] = same and rp.metrics == r.metrics
    if reference:
        c = spec.case(size, seed=0)
        rr, w, cp = launch(c, workers=1, core="reference")
        c.check()
        out_ref = [np.array(a) for a in c.args if isinstance(a, np.ndarray)]
        row.update(reference_wall_s=w, reference_cpu_s=cp, speedup_vs_reference_wall=w / wall,
                   speedup_vs_reference_cpu=cp / cpu,
                   reference_identical=rr.metrics == r.metrics and
                   all(a.tobytes() == b.tobytes() for a, b in zip(out_fast, out_ref)))
    fn = njit_reference(name)
    c = spec.case(size, seed=0)
    args = [np.array(a, copy=True) for a in c.args]
    fn(args)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn(args)
        times.append(time.perf_counter() - t)
    nj = statistics.median(times)
    row.update(njit_median_s=nj, gpusim_over_njit=wall / nj,
               njit_output_identical=args[-1].tobytes() == out_fast[-1].tobytes())
    if cudasim:
        out = subprocess.run([sys.executable, "-c", CUDASIM_SNIPPET, name, json.dumps(size), str(CUDASIM_BLOCKS)],
                             env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"), capture_output=True, text=True,
                             check=True)
        sim = json.loads(out.stdout.strip().splitlines()[-1])
        nblocks = int(np.prod(row["grid"]))
        est = sim["seconds"] * nblocks / sim["blocks"]
        row.update(cudasim_blocks=sim["blocks"], cudasim_s=sim["seconds"], cudasim_whole_grid_est_s=est,
                   gpusim_speedup_vs_cudasim=est / wall)
    return row


def machine() -> dict:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(__file__)).stdout.strip()
    return {"node": platform.node(), "cpu": cpu, "cpus": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__, "llvmlite": llvmlite.__version__,
            "commit": commit}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--reference", action="store_true", help="also time the reference interpreter (slow)")
    ap.add_argument("--cudasim", action="store_true", help="also time Numba's CUDA simulator on a few blocks")
    ap.add_argument("--only", nargs="*", help="program names to run (default: all cases)")
    ap.add_argument("--json", help="write the rows to this file")
    a = ap.parse_args(argv)
    rows = []
    load_before = os.getloadavg()
    for name, size in CASES:
        if a.only and name not in a.only:
            continue
        row = bench(name, size, a.repeats, a.reference, a.cudasim)
        rows.append(row)
        extra = ""
        if "reference_wall_s" in row:
            extra += f"  reference {row['reference_wall_s']:.1f}s ({row['speedup_vs_reference_wall']:.1f}x)"
        if "cudasim_whole_grid_est_s" in row:
            extra += f"  cudasim ~{row['cudasim_whole_grid_est_s']:.0f}s"
        print(f"{name} {size}: fast {row['fast_median_wall_s']:.2f}s wall / {row['fast_median_cpu_s']:.2f}s cpu "
              f"(cold {row['cold_s']:.2f}s), {row['sass_thread_inst_per_s'] / 1e6:.0f} M SASS thread-inst/s "
              f"({row['sass_thread_inst_per_cpu_s'] / 1e6:.0f} per cpu-s), all cpus "
              f"{row['all_cpus_wall_s']:.2f}s x{row['all_cpus_workers']}, njit {row['njit_median_s'] * 1e3:.1f} ms "
              f"({row['gpusim_over_njit']:.0f}x){extra}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"command": "python benchmarks/functional_speed.py " + " ".join(sys.argv[1:] if argv is None
                                                                                     else argv),
                       "machine": machine(), "load_average_before": load_before,
                       "load_average_after": os.getloadavg(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
