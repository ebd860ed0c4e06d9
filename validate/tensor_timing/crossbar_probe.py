"""How fast the SMs pull L2-resident data under load, and what the L2 counts for it (issue 29):
the mma.sync GEMMs wait 32-38% of their warp samples for cp.async data on an H100 where the
model's copies have landed (data/measurements/sass_stalls_h100_run3), and the tensor-pipe probe's
cp.async loop (`validate/tensor_timing/kernels.py: cp_async_16`) takes 978 cycles a round on 132
SMs at 16 warps against 362 on one SM.

One block of W warps a SM (120 KiB of dynamic shared memory, so no second block fits) reads
`ITERS` rounds of 4 x 16 B a thread, and records per warp the clock64 cycles of the loop and
its %smid. One kernel a way of reading (`KINDS`, a template instance each: no branch in the loop
for ptxas to unswitch):
- `own`: cp.async.cg into shared memory, wait_group 0, from a 64 KiB region of the block's own
  (data one SM reads);
- `shared`: the same from one region every block reads (data all SMs read);
- `pitch80`: `own` into rows of 64 B at a pitch of 80 B (mma_gemm's padded A tile: a
  destination 16 B off a 32-B boundary every other row);
- `ldcg`: ld.global.cg.v4 from the block's own region, summed.
Runs (`runs`): one SM (a grid of 1) and every SM (a grid of the SM count), W = 8 and 32 (16 and
64 KiB in flight a SM). Timing: the last of three launches, caches warm. Counters: one more launch
of each under Nsight Compute (`METRICS`, caches flushed first: the first round's reads come from
DRAM), `--worker`.

    python -m validate.tensor_timing.crossbar_probe $OUT            # on a GPU machine, a minute
    python -m validate.tensor_timing.crossbar_probe --predict h100 FILE   # gpusim on the same runs

Earlier runs (data/measurements/crossbar_probe_h100_run1.json, _run2.json) used one kernel that
branched on the way of reading; their files hold that source.

Needs CuPy (NVRTC) and Nsight Compute. The GPU side imports nothing of gpusim.
"""
from __future__ import annotations

import datetime
import json
import statistics
import sys
import time
from pathlib import Path

from validate import ncu
from validate.probe_cli import folder_probe_main

ITERS = 64
SHARED_BYTES = 120 * 1024
WARPS = (8, 32)
KINDS = ("own", "shared", "pitch80", "ldcg")
REGION_INT4 = 4 * 1024            # a block's region: 4 x 16 B a thread, at most 1024 threads
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "lts__t_sectors_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_ltcfabric.sum",
           "lts__t_sector_op_read_hit_rate.pct", "l1tex__m_xbar2l1tex_read_bytes.sum",
           "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum", "dram__bytes_read.sum",
           "lts__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg.per_second")

SOURCE = r"""
typedef unsigned long long u64;
__device__ __forceinline__ u64 clk() { u64 t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }

// KIND 0 own region, 1 one region for all blocks, 2 own region into rows of 64 B at a pitch of 80 B,
// 3 ld.global.cg from the own region. out[block * 33]: %smid, then each warp's cycles.
template <int KIND>
__device__ void pull(const int4 *src, int iters, u64 *out, int *sink) {
    extern __shared__ __align__(128) int4 smem[];
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    int lane = threadIdx.x & 31, warp = threadIdx.x / 32, n = blockDim.x;
    const int4 *p = src + (KIND == 1 ? 0 : (size_t)blockIdx.x * 4096) + threadIdx.x;
    unsigned dst = (unsigned)__cvta_generic_to_shared(KIND == 2 ? (char *)smem + (threadIdx.x / 4) * 80 + (threadIdx.x % 4) * 16
                                                                : (char *)(smem + threadIdx.x));
    int acc = 0;
    __syncthreads();
    u64 t0 = clk();
    for (int it = 0; it < iters; it++) {
        if (KIND != 3) {
            #pragma unroll
            for (int s = 0; s < 4; s++)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst + s * n * 20), "l"(p + s * n));
            asm volatile("cp.async.commit_group;" ::: "memory");
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        } else {
            #pragma unroll
            for (int s = 0; s < 4; s++) {
                int4 v;
                asm volatile("ld.global.cg.v4.s32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p + s * n));
                acc += v.x ^ v.w;
            }
        }
    }
    u64 t1 = clk();
    u64 *rec = out + blockIdx.x * 33;
    if (lane == 0) rec[1 + warp] = t1 - t0;
    if (threadIdx.x == 0) rec[0] = smid;
    if (acc == 0x12345 || smem[threadIdx.x].x == 0x12345) sink[0] = 1;
}
extern "C" __global__ void pull_own(const int4 *s, int i, u64 *o, int *k) { pull<0>(s, i, o, k); }
extern "C" __global__ void pull_shared(const int4 *s, int i, u64 *o, int *k) { pull<1>(s, i, o, k); }
extern "C" __global__ void pull_pitch80(const int4 *s, int i, u64 *o, int *k) { pull<2>(s, i, o, k); }
extern "C" __global__ void pull_ldcg(const int4 *s, int i, u64 *o, int *k) { pull<3>(s, i, o, k); }
"""


def runs(sms: int):
    """(label, kernel, grid, warps) of every run."""
    for kind in KINDS:
        for w in WARPS:
            for grid in (1, sms):
                yield f"{kind}/w{w}/sms{grid}", f"pull_{kind}", grid, w


def _module():
    import cupy as cp                    # here, not at the top: only measuring needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    mod = cp.RawModule(code=SOURCE, options=(f"--gpu-architecture=sm_{props['major']}{props['minor']}",),
                       backend="nvrtc")
    for kind in KINDS:
        mod.get_function(f"pull_{kind}").max_dynamic_shared_size_bytes = SHARED_BYTES
    return cp, mod, props["multiProcessorCount"]


def _launch(cp, mod, sms, kernel, grid, w, src, sink):
    out = cp.zeros(grid * 33, dtype=cp.uint64)
    mod.get_function(kernel)((grid,), (32 * w,), (src, cp.int32(ITERS), out, sink), shared_mem=SHARED_BYTES)
    return out


def worker() -> None:
    """One launch of every run, in `runs` order (what ncu profiles)."""
    cp, mod, sms = _module()
    src, sink = cp.ones((sms + 1) * REGION_INT4 * 4, dtype=cp.int32), cp.zeros(1, dtype=cp.int32)
    for _, kernel, grid, w in runs(sms):
        _launch(cp, mod, sms, kernel, grid, w, src, sink)
    cp.cuda.Device().synchronize()


def measure(out_dir: Path) -> Path:
    cp, mod, sms = _module()
    src, sink = cp.ones((sms + 1) * REGION_INT4 * 4, dtype=cp.int32), cp.zeros(1, dtype=cp.int32)
    rows = []
    for label, kernel, grid, w in runs(sms):
        for _ in range(3):                       # the last of three: the regions in the L2, clocks up
            out = _launch(cp, mod, sms, kernel, grid, w, src, sink)
        cp.cuda.Device().synchronize()
        rec = out.get().reshape(grid, 33)
        cyc = [float(r[1:1 + w].max()) for r in rec]
        rows.append({"run": label, "kernel": kernel, "warps": w, "grid": grid, "smids": [int(r[0]) for r in rec],
                     "cycles": cyc, "cycles_per_round_median": statistics.median(cyc) / ITERS,
                     "cycles_per_round_max": max(cyc) / ITERS, "bytes_per_round_per_sm": 32 * w * 64})
        print(f"{label:22s} median {rows[-1]['cycles_per_round_median']:8.1f}  max "
              f"{rows[-1]['cycles_per_round_max']:8.1f} cycles a round", flush=True)
    log = out_dir / "crossbar_probe_ncu.csv"
    t = time.time()
    _cmd, done, kernels = ncu.profile_worker("validate.tensor_timing.crossbar_probe", METRICS, log)
    kernels = [k for k in kernels if "pull_" in k["kernel_name"]]     # not CuPy's own (the buffer's fill)
    for row, k in zip(rows, kernels):
        row["metrics"] = k["metrics"] if row["kernel"] in k["kernel_name"] else {}
    doc = {"provenance": {"gpu": ncu.gpu_identity(), "sm_count": sms,
                          "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                          "clocks": "not locked (as found); cycles are SM cycles (%clock64)",
                          "command": "python -m validate.tensor_timing.crossbar_probe $OUT",
                          "ncu": {"rc": done.returncode, "seconds": round(time.time() - t, 1),
                                  "tail": done.stdout[-1500:]},
                          "method": __doc__.split("\n\n")[1]},
           "probe_run": 3, "iters": ITERS, "shared_bytes": SHARED_BYTES, "kernel_source": SOURCE, "runs": rows}
    path = out_dir / "crossbar_probe.json"
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path


def predict(gpu: str, measured: Path) -> list[dict]:
    """gpusim's cycles a round of every run of a run-3 file (its kernels; the model places the
    blocks itself), from the difference of two loop lengths, beside the measured median."""
    import numpy as np                   # here: only predicting needs gpusim
    import gpusim                        # here: the GPU side imports nothing of gpusim
    doc = json.loads(measured.read_text())
    sms = doc["provenance"]["sm_count"]
    got = []
    for label, kernel, grid, w in runs(sms):
        cyc = []
        for iters in (4, 12):
            args = (np.ones((grid + 1) * REGION_INT4 * 4, np.int32), np.int32(iters), np.zeros(grid * 33, np.uint64),
                    np.zeros(1, np.int32))
            r = gpusim.launch(gpusim.CudaSource(doc.get("kernel_source", SOURCE), kernel), grid, 32 * w, args, gpu=gpu,
                              timing=True, shared_bytes=SHARED_BYTES)
            cyc.append(r.metrics["sm__cycles_elapsed.max"])
        m = next((x for x in doc["runs"] if x["run"] == label), {})
        row = {"run": label, "predicted_cycles_per_round": round((cyc[1] - cyc[0]) / 8, 1),
               "measured_cycles_per_round_median": m.get("cycles_per_round_median")}
        got.append(row)
        print(json.dumps(row), flush=True)
    return got


def _summary(rows: list[dict]) -> dict:
    errs = [abs(r["predicted_cycles_per_round"] / r["measured_cycles_per_round_median"] - 1) * 100
            for r in rows if not r["run"].startswith("ldcg")]
    return {"note": "ldcg rows: ptxas merged the loop's ld.global.cg loads (the GPU's rounds take 23-97 cycles), "
                    "not a measurement of the L2; left out of the mean",
            "mean_abs_error_pct": round(sum(errs) / len(errs), 1)}


def main(argv=None) -> int:
    return folder_probe_main(__doc__, "validate.tensor_timing.crossbar_probe", measure, predict, worker, argv,
                             extra=_summary)


if __name__ == "__main__":
    sys.exit(main())
