"""What an L2 slice gives the SMs' reads while DRAM fills it and stores write it, with the reads
at their peak (issue 29; docs/mechanisms_24.md section 27).

The L2-bound GEMMs at 8192^3 deliver 96-97% of the H100's L2-resident read peak (the crossbar
probe's 58.3 B a slice and L2 cycle) to their SMs while DRAM fills 0.8-1.8 TB/s into the same
slices and the SMs write 0.1-0.2 TB/s (data/measurements/h100_tensor.json), which a fill booking
0.4 of a read byte at its slice ([MEAS-L2FILL], from `validate/l2_fill_probe.py`, whose loads
never reached the read peak) cannot allow. This probe keeps the reads at the peak and adds fills
or stores beside them, so that what each costs the reads shows as the reads' loss.

Every SM runs one block of `WARPS` warps (120 KiB of dynamic shared memory: no second block fits).
Each round a thread issues `RES` cp.async.cg copies of 16 B from its block's own 192 KiB region
(L2-resident: 132 x 64 KiB), and `STR` accesses of 16 B to its block's own stretch of a streamed
buffer, new lines every round: cp.async.cg copies (DRAM fills) or, with `STORE`, st.global.v4 of
whole lines (written back later). Rounds are committed as cp.async groups with `STAGES - 1`
rounds in flight behind the newest, so that the streamed lines' DRAM latency is hidden (the
copies land in the same shared-memory slots round after round; nothing reads them). Each warp
records the clock64 cycles of its loop.

Cases (`CASES`, (RES, STR, STORE)): 8:0 (reads alone), 16:1, 8:1, 4:1, 2:1 with fills, 8:1, 4:1,
2:1 with stores. Timing: the last of three launches. Counters: one more launch of each under
Nsight Compute (`METRICS`), `--worker`; the rates in `rows` come from them: sectors a L2 cycle
and slice of the SMs' reads, of DRAM fills, of the SMs' writes.

    python -m validate.l2_share_probe $OUT                          # on a GPU machine, a minute
    L2_SHARE_STAGES=1 python -m validate.l2_share_probe $OUT        # one round in flight
    python -m validate.l2_share_probe --predict h100 FILE [--json F] # gpusim on the same cases

Needs CuPy (NVRTC) and Nsight Compute. The GPU side imports nothing of gpusim.
"""
from __future__ import annotations

import datetime
import json
import os
import statistics
import sys
import time
from pathlib import Path

from validate import ncu
from validate.probe_cli import folder_probe_main

ITERS = 1024
WARPS = 16
STAGES = int(os.environ.get("L2_SHARE_STAGES", "3"))    # rounds in flight (the JSON records it)
SHARED_BYTES = 120 * 1024
REGION_INT4 = 12288                # a block's resident region: 192 KiB (more than the L1 keeps beside 120 KiB of shared memory)
CASES = ((8, 0, False), (16, 1, False), (8, 1, False), (4, 1, False), (2, 1, False),
         (8, 1, True), (4, 1, True), (2, 1, True))
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "sm__cycles_elapsed.avg.per_second",
           "lts__cycles_elapsed.avg.per_second", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_write.sum", "lts__t_sectors_srcunit_ltcfabric.sum",
           "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum", "lts__t_sector_op_read_hit_rate.pct",
           "dram__bytes_read.sum", "dram__bytes_write.sum", "l1tex__m_xbar2l1tex_read_bytes.sum",
           "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum")

SOURCE = r"""
typedef unsigned long long u64;
__device__ __forceinline__ u64 clk() { u64 t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }

// RES copies from the block's own 192 KiB region and STR accesses of a new stretch of the streamed
// buffer a round (copies, or with STORE whole-line stores), STAGES - 1 rounds in flight behind the
// newest (WAIT: STAGES - 1). out[block * 17]: %smid, then each warp's cycles.
template <int RES, int STR, int STORE>
__device__ void mix(const int4 *own, int4 *stream, int iters, u64 *out) {
    extern __shared__ __align__(128) int4 smem[];
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    int lane = threadIdx.x & 31, warp = threadIdx.x / 32, n = blockDim.x;
    const int4 *p = own + (size_t)blockIdx.x * REGION + threadIdx.x;
    int4 *q = stream + (size_t)blockIdx.x * iters * (STR > 0 ? STR : 1) * n + threadIdx.x;
    unsigned dst = (unsigned)__cvta_generic_to_shared(smem + threadIdx.x);
    int slots = REGION / n;
    __syncthreads();
    u64 t0 = clk();
    for (int it = 0; it < iters; it++) {
        #pragma unroll
        for (int s = 0; s < RES; s++)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                         :: "r"(dst + (s & 3) * n * 16), "l"(p + ((it * RES + s) % slots) * n));
        #pragma unroll
        for (int s = 0; s < STR; s++) {
            int4 *a = q + (size_t)(it * STR + s) * n;
            if (STORE)
                asm volatile("st.global.v4.s32 [%0], {%1, %1, %1, %1};" :: "l"(a), "r"(it) : "memory");
            else
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst + 4 * n * 16), "l"(a));
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group " WAIT ";" ::: "memory");
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    u64 t1 = clk();
    u64 *rec = out + blockIdx.x * 17;
    if (lane == 0) rec[1 + warp] = t1 - t0;
    if (threadIdx.x == 0) rec[0] = smid;
}
"""


def kernel_name(res: int, streamed: int, store: bool) -> str:
    return f"mix_{res}_{streamed}_{'s' if store else 'f'}"


def source() -> str:
    """The kernels of every case, `extern "C"` instances of `mix` (no branch on the case in a loop)."""
    inst = [f'extern "C" __global__ void {kernel_name(*c)}(const int4 *o, int4 *s, int i, u64 *out) '
            f'{{ mix<{c[0]}, {c[1]}, {int(c[2])}>(o, s, i, out); }}' for c in CASES]
    return f'#define WAIT "{STAGES - 1}"\n#define REGION {REGION_INT4}\n' + SOURCE + "\n".join(inst) + "\n"


def _buffers(cp, sms: int, iters: int = ITERS):
    own = cp.ones(sms * REGION_INT4 * 4, dtype=cp.int32)
    stream = cp.zeros(sms * iters * 32 * WARPS * 4, dtype=cp.int32)     # STR <= 1: one stretch of 16 B a thread a round
    return own, stream


def _module():
    import cupy as cp                    # here, not at the top: only measuring needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    mod = cp.RawModule(code=source(), options=(f"--gpu-architecture=sm_{props['major']}{props['minor']}",),
                       backend="nvrtc")
    for c in CASES:
        mod.get_function(kernel_name(*c)).max_dynamic_shared_size_bytes = SHARED_BYTES
    return cp, mod, props["multiProcessorCount"]


def _launch(cp, mod, sms, case, own, stream):
    out = cp.zeros(sms * 17, dtype=cp.uint64)
    mod.get_function(kernel_name(*case))((sms,), (32 * WARPS,), (own, stream, cp.int32(ITERS), out),
                                         shared_mem=SHARED_BYTES)
    return out


def worker() -> None:
    """One launch of every case, in `CASES` order (what ncu profiles)."""
    cp, mod, sms = _module()
    own, stream = _buffers(cp, sms)
    for case in CASES:
        _launch(cp, mod, sms, case, own, stream)
    cp.cuda.Device().synchronize()


def rates(m: dict, slices: int) -> dict:
    """Sectors a L2 cycle and slice, from one case's Nsight counters."""
    cycles = m["gpu__time_duration.sum"] * 1e-9 * m["lts__cycles_elapsed.avg.per_second"] * slices
    return {"read_sectors_per_slice_cycle": round(m["lts__t_sectors_srcunit_tex_op_read.sum"] / cycles, 3),
            "fill_sectors_per_slice_cycle": round(m["dram__bytes_read.sum"] / 32 / cycles, 3),
            "written_sectors_per_slice_cycle": round(m["lts__t_sectors_srcunit_tex_op_write.sum"] / cycles, 3),
            "fabric_sectors_per_slice_cycle": round(m["lts__t_sectors_srcunit_ltcfabric.sum"] / cycles, 3),
            "dram_written_sectors_per_slice_cycle": round(m["dram__bytes_write.sum"] / 32 / cycles, 3)}


SLICES = {"H100": 80, "H200": 96}  # the presets' slice counts (gpusim/specs/presets/hopper.py), by nvidia-smi's name


def measure(out_dir: Path) -> Path:
    cp, mod, sms = _module()
    own, stream = _buffers(cp, sms)
    rows = []
    for case in CASES:
        for _ in range(3):                       # the last of three: the regions in the L2, clocks up
            out = _launch(cp, mod, sms, case, own, stream)
        cp.cuda.Device().synchronize()
        rec = out.get().reshape(sms, 17)
        cyc = [float(r[1:1 + WARPS].max()) for r in rec]
        res, streamed, store = case
        rows.append({"case": kernel_name(*case), "resident": res, "streamed": streamed, "store": store,
                     "cycles_per_round_median": statistics.median(cyc) / ITERS,
                     "cycles_per_round_max": max(cyc) / ITERS,
                     "resident_bytes_per_round_per_sm": res * 32 * WARPS * 16,
                     "smids": [int(r[0]) for r in rec], "cycles": cyc})
        print(f"{rows[-1]['case']:12s} median {rows[-1]['cycles_per_round_median']:8.1f} cycles a round", flush=True)
    gpu = ncu.gpu_identity()
    log = out_dir / "l2_share_probe_ncu.csv"
    out_dir.mkdir(parents=True, exist_ok=True)
    t = time.time()
    _cmd, done, kernels = ncu.profile_worker("validate.l2_share_probe", METRICS, log)
    kernels = [k for k in kernels if "mix_" in k["kernel_name"]]      # not CuPy's own (the buffers' fills)
    for row, k in zip(rows, kernels):
        if row["case"] in k["kernel_name"]:
            row["metrics"] = k["metrics"]
            slices = next((v for name, v in SLICES.items() if name in gpu), None)
            if slices:
                row.update(rates(k["metrics"], slices))
    doc = {"provenance": {"gpu": gpu, "sm_count": sms,
                          "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                          "clocks": "not locked (as found); cycles are SM cycles (%clock64)",
                          "command": "python -m validate.l2_share_probe $OUT",
                          "ncu": {"rc": done.returncode, "seconds": round(time.time() - t, 1),
                                  "tail": done.stdout[-1500:]},
                          "method": __doc__.split("\n\n")[2]},
           "iters": ITERS, "warps": WARPS, "stages": STAGES, "shared_bytes": SHARED_BYTES,
           "kernel_source": source(), "rows": rows}
    path = out_dir / "l2_share_probe.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


def predict(gpu: str, measured: Path) -> list[dict]:
    """gpusim's cycles a round of every case of a measured file (its kernels), from the difference
    of two loop lengths, beside the measured median."""
    import numpy as np                   # here: only predicting needs gpusim
    import gpusim                        # here: the GPU side imports nothing of gpusim
    from gpusim.specs.overrides import resolve   # here: as gpusim above
    doc = json.loads(measured.read_text())
    spec = resolve(gpu)
    sms = spec.sm_count
    got = []
    for case in CASES:
        cyc = []
        for iters in (16, 48):
            args = (np.ones(sms * REGION_INT4 * 4, np.int32), np.zeros(sms * iters * 32 * WARPS * 4, np.int32),
                    np.int32(iters), np.zeros(sms * 17, np.uint64))
            r = gpusim.launch(gpusim.CudaSource(doc.get("kernel_source", source()), kernel_name(*case)), sms, 32 * WARPS,
                              args, gpu=spec, timing=True, shared_bytes=SHARED_BYTES, outputs=False)
            cyc.append(r.metrics["sm__cycles_elapsed.max"])
        m = next((x for x in doc["rows"] if x["case"] == kernel_name(*case)), {})
        row = {"case": kernel_name(*case), "predicted_cycles_per_round": round((cyc[1] - cyc[0]) / 32, 1),
               "measured_cycles_per_round_median": m.get("cycles_per_round_median")}
        got.append(row)
        print(json.dumps(row), flush=True)
    return got


def main(argv=None) -> int:
    return folder_probe_main(__doc__, "validate.l2_share_probe", measure, predict, worker, argv)


if __name__ == "__main__":
    sys.exit(main())
