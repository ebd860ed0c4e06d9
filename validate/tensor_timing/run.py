"""Run the tensor-pipe microbenchmarks (kernels.py) on the GPU of this machine and write
the per-warp clock64 results as JSON into $OUT (or the folder given):

    python -m validate.tensor_timing.run [OUT_DIR]        # about a minute on an H100/H200

Needs CuPy (cupy-cuda13x, NVRTC through it). `parse.py` turns the JSON into the TensorSpec
figures (`python -m validate.tensor_timing.parse FILE`).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from validate.tensor_timing import kernels

MMA_WARPS = (1, 2, 4, 8, 12, 16)
WGMMA_GROUPS = (1, 2, 4)
LDSM_WARPS = (1, 2, 4, 8, 16)
CP_ASYNC_WARPS = (1, 4, 8, 16, 32)
CP_ASYNC_SMS = (1, 16, 66)                # cp.async on some of the SMs only: is its rate the SM's or the L2's?
CP_ASYNC_SMS_WARPS = (8, 16, 32)
DYNAMIC_SHARED_BYTES = 64 * 1024          # the wgmma and cp.async kernels' operand buffers


def cases(sms: int):
    """(kernel, kind, grid, block, iters, work per warp-iteration, unit, parameters)."""
    for kind, t in kernels.MMA_TYPES.items():
        yield f"mma_{kind}_1", "mma_latency", 1, 32, 1024, t[-1], "FLOP", {"type": kind, "shape": t[0]}
        for w in MMA_WARPS:
            yield f"mma_{kind}_4", "mma_throughput", sms, 32 * w, 512, 4 * t[-1], "FLOP", \
                {"type": kind, "shape": t[0], "warps_per_sm": w}
    for kind, (_, k, *_rest) in kernels.WGMMA_TYPES.items():
        for n in kernels.WGMMA_N:
            for g in WGMMA_GROUPS:
                yield f"wgmma_{kind}_{n}", "wgmma", sms, 128 * g, 256, 4 * 2 * 64 * n * k // 4, "FLOP", \
                    {"type": kind, "n": n, "k": k, "warpgroups_per_sm": g}
    for n in kernels.WGMMA_N:
        for g in WGMMA_GROUPS:
            for bar, per in [(False, kernels.WGMMA_GROUPS), (True, kernels.WGMMA_BAR_GROUPS)]:
                for size in per:
                    yield f"wgmma_g{size}_{n}{'_bar' if bar else ''}", "wgmma_group", sms, 128 * g, 64, \
                        8 * 2 * 64 * n * 16 // 4, "FLOP", {"type": "f16", "n": n, "k": 16, "group": size,
                                                          "barrier": bar, "warpgroups_per_sm": g}
    for w in LDSM_WARPS:
        yield "ldmatrix_x4", "ldmatrix", sms, 32 * w, 256, 8 * 512, "B", {"warps_per_sm": w}
    for w in CP_ASYNC_WARPS:
        yield "cp_async_16", "cp_async", sms, 32 * w, 256, 4 * 32 * 16, "B", {"warps_per_sm": w}
    for n in CP_ASYNC_SMS:                 # one block per SM on n SMs: 132 SMs at 32 warps took 1475 cycles a round
        for w in CP_ASYNC_SMS_WARPS:       # (64 KB in flight per SM), against 361 for one warp
            if n < sms:
                yield "cp_async_16", "cp_async", n, 32 * w, 256, 4 * 32 * 16, "B", {"warps_per_sm": w, "sms": n}


def main(out_dir: str) -> Path:
    import cupy as cp                    # here, not at the top: only running needs a GPU
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    sms = props["multiProcessorCount"]
    cc = f"sm_{props['major']}{props['minor']}{'a' if props['major'] == 9 else ''}"
    module = cp.RawModule(code=kernels.source(), options=(f"--gpu-architecture={cc}", "-std=c++17"),
                          backend="nvrtc")
    sink = cp.zeros(1, dtype=cp.float64)
    src = cp.zeros(1 << 18, dtype=cp.int32)
    results = []
    for name, kind, grid, block, iters, work, unit, params in cases(sms):
        fn = module.get_function(name)
        dynamic = DYNAMIC_SHARED_BYTES if kind in ("wgmma", "wgmma_group", "cp_async") else 0
        if dynamic:
            fn.max_dynamic_shared_size_bytes = dynamic
        out = cp.zeros(grid * block // 32, dtype=cp.uint64)
        args = (out, cp.int32(iters), src, sink) if kind == "cp_async" else (out, cp.int32(iters), sink)
        try:
            fn((grid,), (block,), args, shared_mem=dynamic)        # warm-up (instruction cache, clocks)
            fn((grid,), (block,), args, shared_mem=dynamic)
            cp.cuda.Device().synchronize()
        except Exception as e:               # recorded: one case that cannot launch costs the others nothing
            results.append({"kernel": name, "kind": kind, "grid": grid, "block": block, **params,
                            "error": f"{type(e).__name__}: {e}"})
            continue
        cyc = out.get().astype(float).reshape(grid, block // 32)
        per_block = cyc.max(axis=1)
        warps = block // 32
        results.append({"kernel": name, "kind": kind, "grid": grid, "block": block, "iters": iters, **params,
                        "cycles_max": float(per_block.max()), "cycles_median": float(sorted(per_block)[grid // 2]),
                        "cycles_per_iteration": float(per_block.max()) / iters,
                        f"{unit}_per_cycle_per_sm": warps * iters * work / float(sorted(per_block)[grid // 2])})
    doc = {"device": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
           "sm_count": sms, "clock_khz": props.get("clockRate"), "arch": cc,
           "when": time.strftime("%Y-%m-%d %H:%M:%S"), "results": results}
    path = Path(out_dir) / "tensor_timing.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", ".")))
