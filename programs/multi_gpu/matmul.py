"""C = A @ B split over N simulated GPUs, each GPU's kernel timed by the SM model and the
communication by the collective model, with compute/communication overlap.

Variants:
- "all_gather" (row split): GPU g holds rows block g of A and all of B, computes its rows
  of C with `programs.matmul_tiled`, and an all_gather gives every GPU the whole C.
- "reduce_scatter" (k split): GPU g holds columns block g of A and rows block g of B,
  computes a partial C (m x n), and a reduce_scatter leaves rows block g of the sum on GPU g.
Overlap: each GPU's work is cut into `chunks` row pieces; chunk i's collective (on the
"comm" stream) runs while chunk i+1's kernel computes (on the "compute" stream), so with
enough chunks the link time hides behind the compute time except the last piece. Hiding
it costs compute: the collective's channels hold SMs, and the kernel beside it runs on the
rest (`gpusim.gpu_share`): "compute_slowdown_us" is what GPU 0's kernels lost that way,
"exposed_communication_us" the elapsed time beyond its kernels' time alone.
Identical kernels on identical GPUs take identical time: one launch per chunk shape is
timed, the rest reuse it (`time_like`); every launch still runs functionally.

    python -m programs.multi_gpu.matmul --gpus 1,2,4,8 --size 1024 --gpu h200
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

import gpusim
from gpusim import System
from gpusim.errors import ConfigError
from gpusim.timing.engine import TimingOptions
from programs._matmul import TILE
from programs.matmul_tiled import matmul_tiled

VARIANTS = ("all_gather", "reduce_scatter")


def single_gpu_time_us(m: int, n: int, k: int, gpu="h200", seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 1.5, (m, k)).astype(np.float32)
    b = rng.uniform(0.5, 1.5, (k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    r = gpusim.launch(matmul_tiled, ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE), (TILE, TILE), (a, b, c),
                      gpu=gpu, timing=True, timing_options=TimingOptions(mode="auto", functional="sampled"))
    return float(r.metrics["gpu__time_duration.sum"]) / 1e3


def run(gpus: int, m: int, n: int, k: int, variant: str = "all_gather", gpu="h200", chunks: int = 4,
        seed: int = 0, check: bool = True) -> dict:
    """One split matmul on `gpus` GPUs; returns times, the timeline and the check."""
    if variant not in VARIANTS:
        raise ConfigError(f"unknown variant {variant!r}; choose {', '.join(VARIANTS)}")
    split = m if variant == "all_gather" else k
    if split % (gpus * (chunks if variant == "all_gather" else 1)) or m % chunks:
        raise ConfigError(f"{variant}: m={m}, k={k} must split evenly over {gpus} GPUs x {chunks} chunks")
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 1.5, (m, k)).astype(np.float32)
    b = rng.uniform(0.5, 1.5, (k, n)).astype(np.float32)
    sysm = System(gpu, gpus=max(gpus, 1))
    grid = lambda rows: ((n + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    timed = None
    c_full = np.zeros((m, n), np.float32)
    if variant == "all_gather":
        rows = m // gpus
        crow = rows // chunks
        for i in range(chunks):
            parts, ops = [], []
            for g in range(gpus):
                lo = g * rows + i * crow
                a_g = sysm.to_device(a[lo:lo + crow], g)
                b_g = sysm.to_device(b, g)
                c_g = sysm.device_array((crow, n), np.float32, g)
                op = sysm.launch(matmul_tiled, grid(crow), (TILE, TILE), (a_g, b_g, c_g), gpu=g, time_like=timed,
                                 name=f"matmul chunk {i}", execute=check or timed is None)
                timed = timed or op
                parts.append(c_g)
                ops.append(op)
            if gpus > 1:
                outs = [sysm.device_array((gpus * crow, n), np.float32, g) for g in range(gpus)]
                sysm.all_gather(parts, outs, after=ops)
                gathered = outs[0].data
            else:
                gathered = parts[0].data
            for g in range(gpus):
                c_full[g * rows + i * crow: g * rows + (i + 1) * crow] = gathered[g * crow:(g + 1) * crow]
    else:
        kb = k // gpus
        crow = m // chunks
        for i in range(chunks):
            parts, ops = [], []
            for g in range(gpus):
                a_g = sysm.to_device(a[i * crow:(i + 1) * crow, g * kb:(g + 1) * kb], g)
                b_g = sysm.to_device(b[g * kb:(g + 1) * kb], g)
                p_g = sysm.device_array((crow, n), np.float32, g)
                op = sysm.launch(matmul_tiled, grid(crow), (TILE, TILE), (a_g, b_g, p_g), gpu=g, time_like=timed,
                                 name=f"partial chunk {i}", execute=check or timed is None)
                timed = timed or op
                parts.append(p_g)
                ops.append(op)
            if gpus > 1:
                if crow % gpus:
                    raise ConfigError(f"reduce_scatter: {crow} rows per chunk do not split over {gpus} GPUs")
                outs = [sysm.device_array((crow // gpus, n), np.float32, g) for g in range(gpus)]
                sysm.reduce_scatter(parts, outs, after=ops)
                c_full[i * crow:(i + 1) * crow] = np.concatenate([o.data for o in outs])
            else:
                c_full[i * crow:(i + 1) * crow] = parts[0].data
    kernels0 = [op for op in sysm.timeline if op.kind == "kernel" and 0 in op.gpus]
    kernel_us = sum(op.standalone_us for op in kernels0)              # GPU 0's kernels, each alone
    comm_us = sum(op.time_us for op in sysm.timeline if op.kind == "collective")
    out = {"variant": variant, "gpus": gpus, "m": m, "n": n, "k": k, "chunks": chunks, "gpu": sysm.spec.name,
           "elapsed_us": sysm.elapsed_us, "compute_us_per_gpu": kernel_us, "communication_us": comm_us,
           # what the kernels lost to the collectives beside them (the SMs their channels hold)
           "compute_slowdown_us": sum(op.time_us for op in kernels0) - kernel_us,
           # elapsed beyond compute alone: communication not hidden, and the overlap's cost to compute
           "exposed_communication_us": max(0.0, sysm.elapsed_us - kernel_us),
           "timeline": [(op.name, op.kind, list(op.gpus), op.stream, op.start_us, op.end_us) for op in sysm.timeline]}
    if check:
        want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
        out["check"] = "passed" if np.allclose(c_full, want, rtol=(k + 2) * 2.0**-24 * 2, atol=0) else "FAILED"
    return out


def scaling(gpu_counts, m, n, k, variant="all_gather", gpu="h200", chunks=4, check=False) -> list[dict]:
    """Strong scaling: the same matmul on each GPU count; efficiency = T1 / (N x TN).
    `check=False` (the default) runs only the timed launch of each chunk shape functionally
    (the others reuse its time without computing), so large sizes stay quick; the split's
    correctness is tested at small sizes (tests/interconnect/test_system.py)."""
    t1 = single_gpu_time_us(m, n, k, gpu)
    rows = []
    for g in gpu_counts:
        r = run(g, m, n, k, variant, gpu, chunks, check=check) if g > 1 else {"elapsed_us": t1, "check": "n/a",
                                                                  "communication_us": 0.0,
                                                                  "exposed_communication_us": 0.0,
                                                                  "compute_slowdown_us": 0.0,
                                                                  "compute_us_per_gpu": t1}
        rows.append({"gpus": g, "variant": variant, "elapsed_us": r["elapsed_us"],
                     "compute_us_per_gpu": r["compute_us_per_gpu"], "communication_us": r["communication_us"],
                     "compute_slowdown_us": r["compute_slowdown_us"],
                     "exposed_communication_us": r["exposed_communication_us"], "speedup": t1 / r["elapsed_us"],
                     "efficiency": t1 / (g * r["elapsed_us"]), "check": r.get("check", "not run")})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpus", default="1,2,4,8")
    p.add_argument("--size", type=int, default=1024, help="m = n = k (default 1024)")
    p.add_argument("--variant", choices=VARIANTS, default="all_gather")
    p.add_argument("--chunks", type=int, default=4)
    p.add_argument("--gpu", default="h200")
    p.add_argument("--json", action="store_true")
    p.add_argument("--check", action="store_true", help="run every launch functionally and check C against numpy")
    a = p.parse_args(argv)
    rows = scaling([int(x) for x in a.gpus.split(",")], a.size, a.size, a.size, a.variant, a.gpu, a.chunks, a.check)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"# {a.size}^3 float32 matmul, {a.variant} split, {a.chunks} chunks, {a.gpu} (gpusim predictions; "
          f"GPU counts above the machines measured here are predictions only)")
    print(f"{'GPUs':>4} {'elapsed us':>11} {'compute us':>11} {'comm us':>9} {'slowdown us':>11} "
          f"{'exposed us':>11} {'speedup':>8} {'efficiency':>10}  check")
    for r in rows:
        print(f"{r['gpus']:4d} {r['elapsed_us']:11.1f} {r['compute_us_per_gpu']:11.1f} {r['communication_us']:9.1f} "
              f"{r['compute_slowdown_us']:11.1f} {r['exposed_communication_us']:11.1f} {r['speedup']:8.2f} "
              f"{100 * r['efficiency']:9.1f}%  {r['check']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
