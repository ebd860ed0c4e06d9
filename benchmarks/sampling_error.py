"""Sampled timing against full simulation, where full simulation is feasible.

    python benchmarks/sampling_error.py [--json FILE] [--only REGEX]

Each launch is timed with `mode="full"` (every SM, every block) and `mode="sampled"` (the
default sample: `TimingOptions.sample_sms` SMs with the memory system scaled to their share,
at most `max_waves` waves, the rest extrapolated), and, where sampling cannot see a reuse
distance (`timing__sampling_note`), with `mode="auto"` (which then simulates in full).
Reported per launch: both predicted times and DRAM bytes (read + write), the sampled ones'
relative errors against full, the sampled run's own error estimates
(`timing__sampling_error_pct`, `timing__sampling_dram_error_pct`, percentages of the sampled
prediction) and whether full simulation lies within them, the note, and the wall times.

Launches: programs at sizes of hundreds to thousands of blocks (the default sample times all of
its share of those: no block is extrapolated), programs and a scatter into a wide table at 8,192
to 16,384 blocks (the sample extrapolates most of its share: `extrapolated` in the JSON), and L2
capacity sweeps
(an H100 with `l2.size_bytes` set below, at and above the working set) of a working set read
four times by the grid in order (`reread`: the case where Che's approximation of the whole
L2 and LRU disagree most) and gathered at random through an index (`gather`: where Che's
approximation holds).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time

import numpy as np
from numba import cuda

import gpusim
import programs
from gpusim.specs.overrides import resolve
from gpusim.timing.engine import TimingOptions

PROGRAM_CASES = [
    ("vector_add", {"n": 1 << 20}),
    ("saxpy", {"n": 1 << 20}),
    ("reduce_sequential", {"n": 1 << 20}),
    ("reduce_interleaved_divergent", {"n": 1 << 20}),
    ("reduce_warp_shuffle", {"n": 1 << 21}),
    ("transpose_naive", {"rows": 1024, "cols": 1024}),
    ("transpose_shared", {"rows": 1024, "cols": 1024}),
    ("transpose_padded", {"rows": 1024, "cols": 1024}),
    ("stencil_1d", {"n": 1 << 20}),
    ("histogram_global", {"n": 1 << 20}),
    ("matmul_tiled", {"m": 512, "n": 512, "k": 256}),
    ("vector_add", {"n": 1 << 22}),                # from here on: the sample extrapolates blocks
    ("saxpy", {"n": 1 << 22}),
    ("stencil_1d", {"n": 1 << 22}),
    ("transpose_naive", {"rows": 4096, "cols": 2048}),
]
MIB = 1 << 20
SWEEPS = [  # (kernel, working set MiB, L2 sizes MiB)
    ("reread", 1, (0.25, 0.5, 1, 2, 4)),
    ("reread", 4, (2, 4, 8, 16)),
    ("gather", 1, (0.25, 0.5, 1, 2, 4)),
]
SCATTER_ADDS = [(1 << 21, 1 << 17), (1 << 22, 1 << 18)]   # (keys, bins): reductions that saturate the L2


@cuda.jit
def reread(a, out, n):
    """The grid reads `a` (n floats) four times in order: block b reads a[(256 b) mod n ...]."""
    i = cuda.grid(1)
    if i < 4 * n:
        v = a[i % n]
        if v < -1.0:                    # never: only the reads are timed
            out[0] = v


@cuda.jit
def gather(a, idx, out):
    """Four reads per element of `a`, at random through `idx`."""
    i = cuda.grid(1)
    if i < idx.size:
        v = a[idx[i]]
        if v < -1.0:
            out[0] = v


@cuda.jit
def scatter_add(keys, bins):
    """One reduction per key into a wide table: uncontended, but enough of them to saturate the
    L2 slices and leave a backlog below the L1s when the blocks end."""
    i = cuda.grid(1)
    if i < keys.size:
        cuda.atomic.add(bins, keys[i], 1)


def scatter_add_launch(n: int, nbins: int):
    keys = np.random.default_rng(0).integers(0, nbins, n, dtype=np.int32)
    return dict(name=f"scatter_add {n} keys into {nbins} bins", kernel=scatter_add, grid=(n + 255) // 256, block=256,
                args=(keys, np.zeros(nbins, np.int32)), shared_bytes=0, gpu="h200")


def sweep_launch(kind: str, ws_mib: float, l2_mib: float):
    n = int(ws_mib * MIB) // 4
    a = np.ones(n, np.float32)
    out = np.zeros(1, np.float32)
    gpu = resolve("h100", [f"l2.size_bytes={int(l2_mib * MIB)}"])
    if kind == "reread":
        args = (a, out, n)
    else:
        args = (a, np.random.default_rng(0).integers(0, n, 4 * n).astype(np.int32), out)
    return dict(name=f"{kind} {ws_mib:g} MiB x4, L2 {l2_mib:g} MiB", kernel=reread if kind == "reread" else gather,
                grid=(4 * n + 255) // 256, block=256, args=args, shared_bytes=0, gpu=gpu)


def program_launch(name: str, params: dict):
    c = programs.get(name).case(params)
    return dict(name=f"{name} {params}", kernel=c.kernel, grid=c.grid, block=c.block, args=c.args,
                shared_bytes=c.shared_bytes, gpu="h100")


def predict(launch: dict, mode: str) -> dict:
    t = time.perf_counter()
    r = gpusim.launch(launch["kernel"], launch["grid"], launch["block"], launch["args"], gpu=launch["gpu"],
                      shared_bytes=launch["shared_bytes"], timing=True,
                      timing_options=TimingOptions(mode=mode, functional="sampled"))
    m = r.metrics
    return dict(ns=m["gpu__time_duration.sum"], dram=m["dram__bytes_read.sum"] + m["dram__bytes_write.sum"],
                simulated=m["timing__blocks_simulated"],
                err=m["timing__sampling_error_pct"], dram_err=m["timing__sampling_dram_error_pct"],
                note=m["timing__sampling_note"], mode=m["timing__mode"], wall=time.perf_counter() - t,
                blocks=m["launch__grid_size"])


def share_blocks(launch: dict, blocks: int) -> int:
    """The blocks the default sample's SMs would run: what it times, or extrapolates beyond."""
    gpu = gpusim.specs.get(launch["gpu"]) if isinstance(launch["gpu"], str) else launch["gpu"]
    return math.ceil(blocks * min(1.0, TimingOptions().sample_sms / gpu.sm_count))


def rel(a: float, b: float) -> float:
    return 100.0 * (a - b) / b if b else 0.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--only", help="a regular expression over the launch names")
    a = ap.parse_args(argv)
    launches = [program_launch(n, p) for n, p in PROGRAM_CASES] + \
        [scatter_add_launch(n, b) for n, b in SCATTER_ADDS] + \
        [sweep_launch(k, ws, l2) for k, ws, sizes in SWEEPS for l2 in sizes]
    if a.only:
        launches = [x for x in launches if re.search(a.only, x["name"])]
    rows = []
    for x in launches:
        full, samp = predict(x, "full"), predict(x, "sampled")
        auto = predict(x, "auto") if samp["note"] else None
        row = dict(launch=x["name"], blocks=full["blocks"], sampled_blocks=samp["simulated"],
                   extrapolated=samp["simulated"] < share_blocks(x, full["blocks"]),
                   full_ns=full["ns"], sampled_ns=samp["ns"],
                   error_pct=rel(samp["ns"], full["ns"]), estimate_pct=samp["err"],
                   full_dram=full["dram"], sampled_dram=samp["dram"], dram_error_pct=rel(samp["dram"], full["dram"]),
                   dram_estimate_pct=samp["dram_err"], note=samp["note"], full_wall_s=full["wall"],
                   sampled_wall_s=samp["wall"])
        # the estimates are percentages of the sampled prediction: full simulation must lie within them
        row["covered"] = (100 * abs(full["ns"] - samp["ns"]) <= row["estimate_pct"] * samp["ns"]
                          and 100 * abs(full["dram"] - samp["dram"]) <= row["dram_estimate_pct"] * samp["dram"])
        if auto is not None:
            row.update(auto_mode=auto["mode"], auto_ns=auto["ns"], auto_dram=auto["dram"], auto_wall_s=auto["wall"])
        rows.append(row)
        print(f"{x['name']:40s} {row['blocks']:6d} blocks  time {row['error_pct']:+6.1f}% (est {row['estimate_pct']:5.1f}%)"
              f"  DRAM {full['dram'] / 1e6:7.2f} -> {samp['dram'] / 1e6:7.2f} MB {row['dram_error_pct']:+6.1f}% "
              f"(est {row['dram_estimate_pct']:5.1f}%) {'ok' if row['covered'] else 'NOT COVERED'}"
              + (f"  auto: {auto['mode']} {auto['dram'] / 1e6:.2f} MB" if auto else "")
              + f"  wall {full['wall']:.0f}s -> {samp['wall']:.0f}s", flush=True)
    covered = sum(r["covered"] for r in rows)
    abs_err = [abs(r["error_pct"]) for r in rows]
    extra = [abs(r["error_pct"]) for r in rows if r["extrapolated"]]
    print(f"{covered} of {len(rows)} launches within their error estimates (time and DRAM); "
          f"time |error| mean {statistics.mean(abs_err):.1f}%, max {max(abs_err):.1f}%"
          + (f"; the {len(extra)} that extrapolate blocks: mean {statistics.mean(extra):.1f}%, max {max(extra):.1f}%"
             if extra else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "covered": covered, "launches": len(rows),
                       "mean_abs_error_pct": statistics.mean(abs_err), "max_abs_error_pct": max(abs_err),
                       "extrapolated_mean_abs_error_pct": statistics.mean(extra) if extra else None,
                       "extrapolated_max_abs_error_pct": max(extra) if extra else None,
                       "command": "python " + " ".join(sys.argv)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
