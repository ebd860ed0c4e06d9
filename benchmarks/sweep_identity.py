"""Snapshot of predictions, to check that a speed change of the timing model or of the sweep's
replay leaves every prediction bit for bit as it was.

    python benchmarks/sweep_identity.py --write FILE     # record the snapshot
    python benchmarks/sweep_identity.py --check FILE     # compare against it (exit 1 on any difference)
    python benchmarks/sweep_identity.py --independent FILE   # the snapshot's sweep points against
                                                            # independent gpusim.launch runs of their configs

Covers independent `gpusim.launch(..., timing=True)` runs of programs, sizes and presets
(transpose, matmul, reductions, histograms, local memory, a sampled large launch, h100 and
h200) and, through `gpusim.sweep.replay.timed_launch`, the recorded first point and the
replayed points of benchmarks/sweep_speed.py (HBM bandwidth, L2 latency, SM clock, SM count).
Per launch: every metric (its repr) and every per-instruction stall table (its bytes' digest).

Predictions depend on the toolchain that makes the SASS (ptxas, NVVM) and on numba/numba-cuda's
PTX: the snapshot records their versions under "_toolchain", and --check names any that differ
(a snapshot from another toolchain is no reference: record one with --write first).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import gpusim  # noqa: E402
import programs  # noqa: E402
import importlib.metadata as md  # noqa: E402
from gpusim.specs import resolve  # noqa: E402
from gpusim.sweep.replay import timed_launch  # noqa: E402
from gpusim.sweep.streams import StreamCache  # noqa: E402
from gpusim.timing.engine import TimingOptions  # noqa: E402
from gpusim.timing.record import TraceWindow  # noqa: E402

LAUNCHES = [  # (program, size, preset, timing options as a dict or None)
    ("transpose_shared", "default", "h100", None),
    ("transpose_shared", {"rows": 1024, "cols": 1024}, "h200", None),
    ("matmul_tiled", "medium", "h100", None),
    ("matmul_tiled", "default", "h200", None),
    ("reduce_sequential", "default", "h100", None),
    ("reduce_warp_shuffle", "large", "h200", {"functional": "sampled"}),
    ("reduce_interleaved_divergent", "small", "h100", {"mode": "full"}),
    ("histogram_shared", "default", "h200", None),
    ("histogram_global", "default", "h100", None),
    ("local_array_sort", "default", "h100", None),
    ("softmax_rows", "medium", "h200", None),
    ("scan_block", "default", "h100", {"mode": "full"}),
    ("bank_conflict_demo", "default", "h100", None),
    ("transpose_shared", "small", "h100", {"record": {"sms": (0, 1), "end_cycle": 4000}}),
    ("matmul_tiled", "default", "h100", {"record": {"sms": 0}}),
]
SPEED_POINTS = [[], ["hbm.bandwidth_GBps=6704"], ["l2.hit_latency_cycles=400"], ["clocks.sm_clock_mhz=1500"],
                ["sm_count=66"], ["sm_count=66", "hbm.bandwidth_GBps=6704"]]   # benchmarks/sweep_speed.py's
MORE_POINTS = [["sm_count=16", "hbm.bandwidth_GBps=1500"], ["sm.warp_scheduler=lrr"],
               ["sm.warp_scheduler=oldest", "l2.hit_latency_cycles=150"]]
REPLAYS = [("transpose_shared", {"rows": 1024, "cols": 1024}, "h100", SPEED_POINTS + MORE_POINTS),
           ("matmul_tiled", {"m": 512, "n": 512, "k": 512}, "h100", SPEED_POINTS),
           ("histogram_global", "default", "h200", SPEED_POINTS + MORE_POINTS),
           ("reduce_sequential", "small", "h100", [[], ["sm.warp_scheduler=lrr"], ["sm_count=8"]])]


def toolchain() -> dict:
    """Versions of what turns a kernel into PTX and SASS (the snapshot's "_toolchain" entry)."""
    out = {}
    for dist in ("numba", "numba-cuda", "llvmlite", "numpy", "nvidia-cuda-nvcc", "nvidia-nvvm",
                 "nvidia-cuda-nvdisasm", "simpy"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def snapshot(result) -> dict:
    out = {f"m:{k}": repr(v) for k, v in sorted(result.metrics.items())}
    for k, v in sorted(result.table.items()):
        a = np.ascontiguousarray(np.asarray(v))
        if a.dtype == object:
            out[f"t:{k}"] = repr(a.tolist())
        else:
            out[f"t:{k}"] = a.dtype.str + ":" + hashlib.sha256(a.tobytes()).hexdigest()
    rec = result.extra.get("recording")
    if rec is not None:                   # TimingOptions(record=...): the recorded events
        for k in ("issues", "stalls", "barriers", "memory", "counter_cycles", "l2_bytes", "hbm_bytes", "dropped",
                  "sm_issued"):
            out[f"r:{k}"] = hashlib.sha256(repr(getattr(rec, k)).encode()).hexdigest()
    return out


def _label(name, size, gpu, extra) -> str:
    return f"{name} {json.dumps(size, sort_keys=True)} {gpu} {json.dumps(extra, sort_keys=True)}"


def _options(opts):
    if not opts:
        return None
    opts = dict(opts)
    if "record" in opts:
        opts["record"] = TraceWindow(**opts["record"])
    return TimingOptions(**opts)


def collect() -> dict:
    snap = {}
    for name, size, gpu, opts in LAUNCHES:
        t = time.perf_counter()
        c = programs.get(name).case(size)
        r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu=gpu, timing=True, shared_bytes=c.shared_bytes,
                          timing_options=_options(opts))
        snap[_label(name, size, gpu, opts)] = snapshot(r)
        print(f"{name} {size} {gpu}: {r.metrics['gpu__time_duration.sum']!r} ns "
              f"({time.perf_counter() - t:.1f} s)", flush=True)
    for name, size, gpu, points in REPLAYS:
        with tempfile.TemporaryDirectory() as d:
            cache = StreamCache(d)
            for sets in points:
                t = time.perf_counter()
                c = programs.get(name).case(size)
                r, how = timed_launch(c.kernel, c.grid, c.block, c.args, resolve(gpu, sets), c.shared_bytes,
                                      cache=cache)
                s = snapshot(r)
                s["how"] = how
                snap[_label(name, size, gpu, sets)] = s
                print(f"{name} {size} {gpu} {sets} {how}: {r.metrics['gpu__time_duration.sum']!r} ns "
                      f"({time.perf_counter() - t:.1f} s)", flush=True)
    return snap


def independent() -> dict:
    """The sweep points of REPLAYS as independent `gpusim.launch` runs (no stream cache), labelled
    as collect() labels them: a snapshot's replayed points must equal these."""
    snap = {}
    for name, size, gpu, points in REPLAYS:
        for sets in points:
            t = time.perf_counter()
            c = programs.get(name).case(size)
            r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu=resolve(gpu, sets), timing=True,
                              shared_bytes=c.shared_bytes)
            snap[_label(name, size, gpu, sets)] = snapshot(r)
            print(f"{name} {size} {gpu} {sets} launched: {r.metrics['gpu__time_duration.sum']!r} ns "
                  f"({time.perf_counter() - t:.1f} s)", flush=True)
    return snap


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write")
    g.add_argument("--check")
    g.add_argument("--independent")
    a = ap.parse_args(argv)
    snap = independent() if a.independent else collect()
    if a.write:
        with open(a.write, "w") as f:
            json.dump({"_toolchain": toolchain(), **snap}, f, indent=0, sort_keys=True)
        print(f"{len(snap)} launches, {sum(len(v) for v in snap.values())} values written to {a.write}")
        return 0
    with open(a.check or a.independent) as f:
        want = json.load(f)
    recorded = want.pop("_toolchain", None)
    if recorded != toolchain():
        print(f"NOTE the snapshot was recorded with another toolchain: {recorded} (now {toolchain()}); "
              "differences may come from it")
    if a.independent:                     # only the sweep points; how they were obtained differs by design
        want = {k: {kk: vv for kk, vv in v.items() if kk != "how"} for k, v in want.items() if k in snap}
    bad = 0
    for label in sorted(set(want) | set(snap)):
        w, g = want.get(label), snap.get(label)
        if w is None or g is None:
            print(f"MISSING {label}: {'snapshot' if w is None else 'this run'} lacks it")
            bad += 1
            continue
        diff = sorted(k for k in set(w) | set(g) if w.get(k) != g.get(k))
        if diff:
            bad += 1
            print(f"DIFFERS {label}: {len(diff)} values, e.g. " +
                  "; ".join(f"{k}: {w.get(k)} -> {g.get(k)}" for k in diff[:4]))
    print(f"{len(snap)} launches, {sum(len(v) for v in snap.values())} values: "
          + ("all identical" if not bad else f"{bad} launches differ"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
