"""Sampled timing against full simulation, where full simulation is feasible.

    python benchmarks/sampling_error.py [--json FILE]

For each program at a size with hundreds to thousands of blocks, the launch is timed
twice: `mode="full"` (every SM, every block) and `mode="sampled"` (the default
sample: `TimingOptions.sample_sms` SMs with the memory system scaled to their share,
at most `max_waves` waves, the rest extrapolated). Reported: both predicted times,
the relative error of the sampled one, and the wall-time speed-up.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import gpusim
import programs
from gpusim.timing.engine import TimingOptions

CASES = [
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
]


def predict(name, params, mode):
    c = programs.get(name).case(params)
    t = time.perf_counter()
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes, timing=True,
                      timing_options=TimingOptions(mode=mode, functional="sampled"))
    return r.metrics["gpu__time_duration.sum"], time.perf_counter() - t, r.metrics["launch__grid_size"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rows = []
    for name, params in CASES:
        full, wf, blocks = predict(name, params, "full")
        samp, ws, _ = predict(name, params, "sampled")
        err = 100.0 * (samp - full) / full
        rows.append(dict(program=name, params=params, blocks=blocks, full_ns=full, sampled_ns=samp, error_pct=err,
                         full_wall_s=wf, sampled_wall_s=ws))
        print(f"{name:30s} {blocks:6d} blocks  full {full / 1000:9.1f} us  sampled {samp / 1000:9.1f} us  "
              f"error {err:+6.1f}%  wall {wf:6.1f}s -> {ws:5.1f}s", flush=True)
    abs_err = [abs(r["error_pct"]) for r in rows]
    print(f"mean |error| {statistics.mean(abs_err):.1f}%  max |error| {max(abs_err):.1f}%")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "mean_abs_error_pct": statistics.mean(abs_err),
                       "max_abs_error_pct": max(abs_err)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
