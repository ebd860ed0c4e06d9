"""What a launch costs beyond its instructions, on the H100/H200 (issue 29): the tensor set's
512^3 GEMMs and 1K attention all take 1.2-1.4 us (TMA GEMM 3.3 us) longer than gpusim predicts,
while the Numba kernels it is calibrated on, small ones included, do not. They differ in what
a launch sets up: registers a thread (71-128 there, 8-32 in the calibration set), shared memory
a block (10-98 KB, static or opt-in dynamic, against 0-4 KB), and code size. This times, under
Nsight Compute as `validate measure` does (`gpu__time_duration.sum`, clocks not locked, caches
flushed, kernel replay), one small kernel (16 blocks of 256 threads, each thread one store)
varied one property at a time: grid size, registers, static and dynamic shared memory, code
size.

    python -m validate.tensor_timing.launch_cost $OUT      # about a minute; $OUT/launch_cost.json

Needs CuPy (NVRTC) and Nsight Compute (`ncu`).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from validate import ncu

REPEATS = 5
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "launch__registers_per_thread",
           "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic", "smsp__inst_executed.sum")

SOURCE = r"""
extern "C" __global__ void tiny(float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = (float)i;
}
extern "C" __global__ void static48(float *out) {
    __shared__ float s[12288];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x * 48] = (float)i;
    __syncthreads();
    out[i] = s[((threadIdx.x + 1) % blockDim.x) * 48];
}
extern "C" __global__ void dynamic(float *out) {
    extern __shared__ float d[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    d[threadIdx.x * 64] = (float)i;
    __syncthreads();
    out[i] = d[((threadIdx.x + 1) % blockDim.x) * 64];
}
extern "C" __global__ void __launch_bounds__(256) regs(const float *in, float *out, int n) {
    float v[96];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll
    for (int k = 0; k < 96; k++) v[k] = in[(i + k * 131) % n];
    float acc = 0.f;
    #pragma unroll
    for (int r = 0; r < 4; r++) {
        #pragma unroll
        for (int k = 0; k < 96; k++) { v[k] = v[k] * v[(k + 1) % 96] + 1.0f; acc += v[k]; }
    }
    out[i] = acc;
}
extern "C" __global__ void bigcode(const float *in, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[i], b = a + 1.0f;
    #pragma unroll
    for (int k = 0; k < 2048; k++) { a = fmaf(a, 1.0001f + k * 1e-7f, b); b = fmaf(b, 0.9999f - k * 1e-7f, a); }
    out[i] = a + b;
}
"""
# (case, kernel, blocks, dynamic shared bytes)
CASES = [("tiny_16", "tiny", 16, 0), ("tiny_132", "tiny", 132, 0), ("tiny_1056", "tiny", 1056, 0),
         ("static48_16", "static48", 16, 0), ("dynamic96_16", "dynamic", 16, 98304),
         ("dynamic200_16", "dynamic", 16, 204800), ("dynamic64_16", "dynamic", 16, 65536),
         ("regs_16", "regs", 16, 0), ("bigcode_16", "bigcode", 16, 0)]


def worker() -> None:
    """Each case REPEATS times, in CASES order (what ncu profiles)."""
    import cupy as cp                    # here, not at the top: only running needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    mod = cp.RawModule(code=SOURCE, options=(f"--gpu-architecture=sm_{props['major']}{props['minor']}",), backend="nvrtc")
    mod.get_function("dynamic").max_dynamic_shared_size_bytes = 204800
    n = 1056 * 256
    src = cp.ones(n, dtype=cp.float32)
    out = cp.zeros(n, dtype=cp.float32)
    for _case, name, blocks, dyn in CASES:
        fn = mod.get_function(name)
        args = {"regs": (src, out, cp.int32(n)), "bigcode": (src, out)}.get(name, (out,))
        for _ in range(REPEATS):
            fn((blocks,), (256,), args, shared_mem=dyn)
    cp.cuda.Device().synchronize()


def main(out_dir: str) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "launch_cost_ncu.csv"
    t = time.time()
    cmd, rc, kernels = ncu.profile_worker("validate.tensor_timing.launch_cost", METRICS, log)
    ident = ncu.gpu_identity()
    rows = []
    for c, (case, name, blocks, dyn) in enumerate(CASES):
        got = [k["metrics"] for k in kernels[c * REPEATS:(c + 1) * REPEATS]]
        durs = sorted(m.get("gpu__time_duration.sum") or 0 for m in got)
        rows.append({"case": case, "kernel": name, "blocks": blocks, "threads": 256, "dynamic_shared_bytes": dyn,
                     "duration_ns_median": durs[len(durs) // 2] if durs else None, "duration_ns": durs,
                     "metrics": got[-1] if got else {}})
    doc = {"provenance": {"gpu": ident, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                          "command": "python -m validate.tensor_timing.launch_cost $OUT",
                          "ncu": " ".join(cmd[:12]), "method": __doc__.split("\n\n")[0]},
           "ncu_rc": rc.returncode, "ncu_seconds": round(time.time() - t, 1), "ncu_tail": rc.stdout[-1500:], "cases": rows}
    path = out / "launch_cost.json"
    path.write_text(json.dumps(doc, indent=1))
    for r in rows:
        print(f"{r['case']:16s} {r['duration_ns_median']} ns  regs {r['metrics'].get('launch__registers_per_thread')}")
    return path


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    else:
        print(main(next((a for a in sys.argv[1:] if not a.startswith("-")), os.environ.get("OUT", "."))))
