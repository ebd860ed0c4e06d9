"""Which of an SM's four sub-partitions (SMSPs, each with its own scheduler and pipes) a block's
warps run on, for blocks smaller than four warps (issue 24; docs/mechanisms_24.md section 29).

gpusim puts warp w of every block on sub-partition w mod 4 (gpusim/timing/residency.py): blocks
of one or two warps leave two or three of an SM's four schedulers idle however many of them the
SM holds. If the GPU deals warps to sub-partitions SM-wide instead, such blocks use them all.

One kernel, FMA-bound: each thread runs 8 independent chains of `iters` fused multiply-adds
(no memory traffic in the loop). Launched so that every SM holds 4 warps at once in every
shape: 132 blocks of 128 threads, 264 of 64, 528 of 32 (one wave: each block needs less than an
SM's share of registers and no shared memory). On a GPU that spreads the warps, the three take
the same time; if a block's warps go to sub-partitions by their index in the block, the 64- and
32-thread shapes take two and four times as long. Each warp also records `%smid` and `%warpid`
(the SM's warp slot, whose low two bits name the sub-partition on Volta and later, by the
microbenchmark literature; read as a cross-check, the times are the evidence) and its own
`%clock64` and `%globaltimer` from start to end (its SM cycles, and the SM clock they ran at).
Times from CUDA events, the median of 5 launches after a warm-up.

    python -m validate.smsp_placement_probe --out $OUT/smsp_placement_h100.json   # GPU machine, seconds
    python -m validate.smsp_placement_probe --predict h100 [--json FILE]           # gpusim, same launches

Needs CuPy (NVRTC). The GPU side imports nothing of gpusim.
"""
from __future__ import annotations

import statistics

import numpy as np

from validate.probe_cli import gpu_provenance, probe_main, write_probe

ITERS = 4096
SMS = 132
SHAPES = ((128, SMS), (64, 2 * SMS), (32, 4 * SMS))          # (threads a block, blocks): 4 warps an SM

SOURCE = r"""
extern "C" __global__ void fma_chains(float *out, unsigned *where, int iters, unsigned long long *clocks) {
    unsigned long long c0, g0, c1, g1;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c0));
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
    const float m = 0.9999f, c = 0.5f;
    for (int i = 0; i < iters; i++) {
        a0 = fmaf(a0, m, c); a1 = fmaf(a1, m, c); a2 = fmaf(a2, m, c); a3 = fmaf(a3, m, c);
        a4 = fmaf(a4, m, c); a5 = fmaf(a5, m, c); a6 = fmaf(a6, m, c); a7 = fmaf(a7, m, c);
    }
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    out[g] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    if ((threadIdx.x & 31) == 0) {
        unsigned smid, warpid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        asm volatile("mov.u32 %0, %%warpid;" : "=r"(warpid));
        where[g / 32] = smid << 8 | warpid;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(c1));
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
        clocks[2 * (g / 32)] = c1 - c0;                  // the warp's SM cycles and nanoseconds
        clocks[2 * (g / 32) + 1] = g1 - g0;
    }
}
"""


def run(out_path: str) -> None:
    import cupy as cp                    # here, not at the top: only measuring needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    fn = cp.RawModule(code=SOURCE, options=(f"--gpu-architecture=sm_{props['major']}{props['minor']}",),
                      backend="nvrtc").get_function("fma_chains")
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    rows = []
    for threads, blocks in SHAPES:
        out = cp.zeros(threads * blocks, cp.float32)
        where = cp.zeros(threads * blocks // 32, cp.uint32)
        clocks = cp.zeros(2 * threads * blocks // 32, cp.uint64)
        times = []
        for _ in range(6):
            start.record()
            fn((blocks,), (threads,), (out, where, cp.int32(ITERS), clocks))
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
        w = where.get()
        ck = clocks.get().reshape(-1, 2).astype(float)
        sm, slot = w >> 8, w & 0xFF
        per_sm_sp = {}
        for s, q in zip(sm.tolist(), (slot % 4).tolist()):
            per_sm_sp.setdefault(s, [0, 0, 0, 0])[q] += 1
        rows.append({"threads": threads, "blocks": blocks, "us": round(statistics.median(times[1:]), 2),
                     "times_us": [round(x, 2) for x in times],
                     "warps_per_sm_sp_max": max(max(v) for v in per_sm_sp.values()),
                     "warp_cycles_median": float(np.median(ck[:, 0])),
                     "sm_clock_mhz_median": round(float(np.median(ck[:, 0] / ck[:, 1])) * 1e3, 1),
                     "sms": len(per_sm_sp), "warpid_mod4_counts": [int((slot % 4 == q).sum()) for q in range(4)],
                     "smid_warpid": w.tolist()})
        print(f"{threads:4d} threads x {blocks:4d} blocks: {rows[-1]['us']:8.2f} us, a warp "
              f"{rows[-1]['warp_cycles_median']:.0f} cycles at {rows[-1]['sm_clock_mhz_median']} MHz; warps of one SM on one "
              f"sub-partition at most {rows[-1]['warps_per_sm_sp_max']} (%warpid mod 4: {rows[-1]['warpid_mod4_counts']})",
              flush=True)
    prov = gpu_provenance(cp, "python -m validate.smsp_placement_probe --out $OUT/smsp_placement_<gpu>.json", __doc__,
                          sm_count=props["multiProcessorCount"], iters=ITERS, kernel_source=SOURCE)
    write_probe(out_path, prov, rows)


def predict(preset: str) -> list:
    """gpusim's time for each shape (full simulation)."""
    import gpusim                         # here: the GPU side imports nothing of gpusim
    from gpusim.timing import TimingOptions   # here: the GPU side imports nothing of gpusim
    kernel = gpusim.CudaSource(SOURCE, "fma_chains")
    rows = []
    for threads, blocks in SHAPES:
        r = gpusim.launch(kernel, blocks, threads, (np.zeros(threads * blocks, np.float32),
                                                     np.zeros(threads * blocks // 32, np.uint32), np.int32(ITERS),
                                                     np.zeros(2 * threads * blocks // 32, np.uint64)),
                          gpu=preset, timing=TimingOptions(mode="full"), outputs=False)
        us = r.metrics["gpu__time_duration.sum"] / 1e3
        cycles = r.metrics["sm__cycles_elapsed.max"]
        rows.append({"threads": threads, "blocks": blocks, "us": round(us, 2), "sm_cycles": round(cycles)})
        print(f"{threads:4d} threads x {blocks:4d} blocks: {us:8.2f} us, {cycles:.0f} SM cycles", flush=True)
    return rows


def main(argv=None) -> int:
    return probe_main(__doc__, run, predict, argv)


if __name__ == "__main__":
    raise SystemExit(main())
