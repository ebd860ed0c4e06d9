"""Multi-GPU figures: collective and peer-copy accuracy against the committed 4 x H200
measurements, 8-GPU predictions next to published figures, simulation speed, and the split
matmul's scaling from 1 to 8 GPUs.

    taskset -c 0 python benchmarks/multi_gpu.py --json benchmarks/results/multi_gpu.json

8-GPU figures are predictions: no 8-GPU machine was lent here. The published figures are
third-party nccl-tests results on HGX boards with NCCL's defaults, which use NVLink SHARP
(NVLS, reductions in the switch) on H100/H200; the machines measured here run with NVLS
off (a workplace rule), and gpusim models the ring that NCCL runs without it.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from gpusim.collectives import simulate  # noqa: E402
from programs.multi_gpu.matmul import scaling  # noqa: E402
from validate.compare_multi import compare  # noqa: E402

# Published figures. NVIDIA (H100/H200 datasheets, A100 whitepaper): NVLink 900 / 600 GB/s per
# GPU, both directions together (450 / 300 per direction), the ceiling a ring's busbw approaches.
# nccl-tests all_reduce busbw at large sizes reported by a third party (Alaya NeW, "NCCL-tests
# in practice", 2026-05): 8 x H100 SXM5 460-480 GB/s (NCCL defaults, NVLS on), 8 x A100 SXM4 230-250.
NVIDIA_LINK_GBps = {"h100": 450, "h200": 450, "a100": 300}
PUBLISHED = {"h100": (460, 480, "8 x H100 SXM5, NCCL defaults (NVLS on), third-party nccl-tests"),
             "a100": (230, 250, "8 x A100 SXM4, third-party nccl-tests")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--matmul-size", type=int, default=2048)
    ap.add_argument("--skip-matmul", action="store_true")
    a = ap.parse_args(argv)

    out = {"command": "taskset -c 0 python benchmarks/multi_gpu.py " + " ".join(argv or sys.argv[1:])}
    summary, rows = compare(kernels=True)
    out["compare_multi_summary"] = summary
    out["compare_multi_rows"] = [{k: v for k, v in r.items() if not isinstance(v, dict)} for r in rows]
    print("compare-multi (4 x H200 data):")
    for k, v in summary.items():
        print(f"  {k}: {v}")

    eight = []
    for gpu in ("h200", "h100", "a100"):
        r = simulate("all_reduce", 1 << 30, gpu, 8)
        pub = PUBLISHED.get(gpu)
        eight.append({"gpu": gpu, "op": "all_reduce", "gpus": 8, "bytes": 1 << 30, "predicted_busbw_GBps": r.busbw_GBps,
                      "predicted_time_us": r.time_us, "nvidia_nvlink_per_direction_GBps": NVIDIA_LINK_GBps[gpu],
                      "published_busbw_GBps": pub[:2] if pub else None, "published_setup": pub[2] if pub else None,
                      "measured": False})
        print(f"8 x {gpu} all_reduce 1 GiB (prediction, not measured): busbw {r.busbw_GBps:.0f} GB/s; NVIDIA's "
              f"NVLink {NVIDIA_LINK_GBps[gpu]} GB/s per direction"
              + (f"; published nccl-tests {pub[0]}-{pub[1]} GB/s ({pub[2]})" if pub else ""))
    out["eight_gpu_predictions"] = eight

    t = time.perf_counter()
    simulate("all_reduce", 1 << 30, "h200", 8)
    out["all_reduce_1GiB_8gpu_simulation_s"] = time.perf_counter() - t
    print(f"1 GiB all_reduce over 8 GPUs simulated in {out['all_reduce_1GiB_8gpu_simulation_s']:.2f} s")

    if not a.skip_matmul:
        n = a.matmul_size
        out["matmul_scaling"] = {}
        for variant in ("all_gather", "reduce_scatter"):
            rows_ = scaling([1, 2, 4, 8], n, n, n, variant, "h200", chunks=4)
            out["matmul_scaling"][variant] = rows_
            print(f"{n}^3 matmul, {variant}:")
            for r in rows_:
                print(f"  {r['gpus']} GPUs: {r['elapsed_us']:9.1f} us, speedup {r['speedup']:.2f}, efficiency "
                      f"{100 * r['efficiency']:.0f}%, exposed communication {r['exposed_communication_us']:.1f} us "
                      f"(compute slowed {r['compute_slowdown_us']:.1f} us), "
                      f"{r['check']}")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
