"""The `mma.sync` GEMM taken apart (issue 29): which of its parts the model times wrong.

`programs/cuda_kernels/mma_gemm.cu` at 4096^3 and 8192^3 is 5-13% faster in gpusim than on the
H100/H200, while Triton's and the TMA GEMMs at 8192^3 are up to 12% slower (the H100). This probe
runs the same kernel with parts of its loop left out (`gemm_parts<BM, BN, STAGES, PAD, PARTS>`,
appended to mma_gemm.cu's own text, so its macros and layout are the program's):
- PARTS bit 1, COPY: the cp.async copies of the A and B tiles (else nothing is copied; the
  commit / wait_group and both barriers stay);
- bit 2, LDSM: the ldmatrix reads of the fragments (else the fragments are registers set from
  the lane, so the mma's operands are ready);
- bit 4, MMA: the mma.sync instructions (else the fragments are folded into one register that
  the epilogue stores, so nothing is dead).
Shared memory is zeroed once at the start by every variant. Variants: 7 (the program's kernel),
1, 3, 5, 6, 4, 2; sizes 4096^3 and 8192^3 double-buffered, 8192^3 single-buffered (7 and 1),
2048^3 (7 and 1: the operands fit the L2), and the copies alone with unpadded rows (PAD 0: no
destination 16 B off a 32-B boundary, so no sector read twice) at 2048^3, 4096^3 and 8192^3.

Beside them, continuous L2 streams (no drain between rounds, unlike
`crossbar_probe`'s): 3 blocks of 8 warps a SM, each block walking 32 KiB of L2-resident data of
its own (or one region all blocks read) `STREAM_ITERS` rounds of 16 KiB, with `ld.global.cg.v4` (4 loads in
flight a thread) or with `cp.async.cg` into a 4-stage ring of shared memory (2 groups in flight).

Timing: CUDA events around `REPEATS` launches after two warm-ups (median per launch).
Counters: one more launch of each under Nsight Compute (`METRICS`), `--worker`.

    python -m validate.tensor_timing.gemm_parts $OUT          # on a GPU machine, about 2 minutes
    python -m validate.tensor_timing.gemm_parts --predict h100 FILE [--json OUT]   # gpusim, same launches

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
from validate.probe_cli import event_times_us, folder_probe_main

ROOT = Path(__file__).resolve().parents[2]
GEMM_CU = ROOT / "programs" / "cuda_kernels" / "mma_gemm.cu"
TILE, PAD, REPEATS, STREAM_ITERS = 64, 8, 10, 1024
STREAM_BLOCKS_PER_SM, STREAM_THREADS, REGION_INT4 = 3, 256, 2048     # 32 KiB a block; 64 KiB of ring each
PARTS = (7, 1, 3, 5, 6, 4, 2)
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "sm__cycles_elapsed.avg.per_second",
           "lts__cycles_elapsed.avg.per_second", "lts__t_sectors_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_ltcfabric.sum",
           "lts__t_requests_srcunit_tex_op_read.sum", "lts__t_requests_srcunit_ltcfabric.sum",
           "l1tex__m_xbar2l1tex_read_sectors.sum", "smsp__inst_executed_op_ldgsts.sum",
           "l1tex__m_xbar2l1tex_read_bytes.sum", "dram__bytes_read.sum", "smsp__inst_executed.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
           "smsp__pcsamp_sample_count", "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
           "smsp__pcsamp_warps_issue_stalled_barrier", "smsp__pcsamp_warps_issue_stalled_short_scoreboard",
           "smsp__pcsamp_warps_issue_stalled_mio_throttle", "smsp__pcsamp_warps_issue_stalled_wait",
           "smsp__pcsamp_warps_issue_stalled_selected", "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle",
           "smsp__pcsamp_warps_issue_stalled_not_selected", "smsp__pcsamp_warps_issue_stalled_lg_throttle")

PARTS_SOURCE = r"""
template <int BM, int BN, int STAGES, int PAD, int PARTS>
__global__ void gemm_parts(const half* A, const half* B, float* C, int M, int N, int K) {
    constexpr bool COPY = PARTS & 1, LDSM = PARTS & 2, MMA = PARTS & 4;
    constexpr int BK = 32, THREADS = 128, WM = BM / 2, WN = BN / 2, FM = WM / 16, FN = WN / 8;
    __shared__ __align__(128) half As[STAGES][BM][BK + PAD];
    __shared__ __align__(128) half Bs[STAGES][BK][BN + PAD];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN, tiles = K / BK;
    float acc[FM][FN][4] = {};
    unsigned folded = 0;
    for (int i = threadIdx.x; i < (int)(sizeof(As) / 2); i += THREADS) (&As[0][0][0])[i] = __float2half(0.f);
    for (int i = threadIdx.x; i < (int)(sizeof(Bs) / 2); i += THREADS) (&Bs[0][0][0])[i] = __float2half(0.f);
    __syncthreads();
    auto load_tile = [&](int t, int s) {
        if (!COPY) return;
        for (int c = threadIdx.x; c < BM * BK / 8; c += THREADS) {
            int r = c / (BK / 8), k = (c % (BK / 8)) * 8;
            CP_ASYNC16(&As[s][r][k], &A[(row0 + r) * K + t * BK + k]);
        }
        for (int c = threadIdx.x; c < BK * BN / 8; c += THREADS) {
            int k = c / (BN / 8), n = (c % (BN / 8)) * 8;
            CP_ASYNC16(&Bs[s][k][n], &B[(t * BK + k) * N + col0 + n]);
        }
    };
    for (int s = 0; s < STAGES - 1 && s < tiles; s++) {
        load_tile(s, s);
        CP_ASYNC_COMMIT();
    }
    for (int t = 0; t < tiles; t++) {
        int next = t + STAGES - 1;
        if (next < tiles)
            load_tile(next, next % STAGES);
        CP_ASYNC_COMMIT();
        CP_ASYNC_WAIT(STAGES - 1);
        __syncthreads();
        const int s = t % STAGES;
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[FM][4], b[FN][2];
            if (LDSM) {
                for (int i = 0; i < FM; i++)
                    LDMATRIX_X4(a[i], &As[s][wm * WM + 16 * i + lane % 16][kk + (lane / 16) * 8]);
                for (int j = 0; j < FN; j += 2) {
                    unsigned r[4];
                    LDMATRIX_X4_TRANS(r, &Bs[s][kk + lane % 16][wn * WN + 8 * j + (lane / 16) * 8]);
                    b[j][0] = r[0]; b[j][1] = r[1]; b[j + 1][0] = r[2]; b[j + 1][1] = r[3];
                }
            } else {
                for (int i = 0; i < FM; i++)
                    for (int q = 0; q < 4; q++) a[i][q] = 0x3c003c00u ^ (lane << q);
                for (int j = 0; j < FN; j++) { b[j][0] = 0x3c003c00u ^ lane; b[j][1] = 0x3c003c00u ^ (lane << j); }
            }
            if (MMA) {
                for (int i = 0; i < FM; i++)
                    for (int j = 0; j < FN; j++)
                        MMA16816(acc[i][j], a[i], b[j][0], b[j][1]);
            } else {
                for (int i = 0; i < FM; i++) folded ^= a[i][0] ^ a[i][1] ^ a[i][2] ^ a[i][3];
                for (int j = 0; j < FN; j++) folded ^= b[j][0] ^ b[j][1];
            }
        }
        __syncthreads();
    }
    const int g = lane / 4, q = lane % 4;
    for (int i = 0; i < FM; i++)
        for (int j = 0; j < FN; j++) {
            int r = row0 + wm * WM + 16 * i + g, c = col0 + wn * WN + 8 * j + 2 * q;
            float extra = MMA ? 0.f : __uint_as_float(folded & 0x007fffffu);
            *reinterpret_cast<float2*>(&C[r * N + c]) = make_float2(acc[i][j][0] + extra, acc[i][j][1]);
            *reinterpret_cast<float2*>(&C[(r + 8) * N + c]) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}

// Continuous L2 streams: each block walks REGION int4 of its own (SHARED: of one region all read)
// `iters` times, 4 x 16 B a thread a round, no drain between rounds.
template <int CP, int SHARED>
__device__ void stream(const int4 *src, int iters, int region, int *sink) {
    extern __shared__ __align__(128) int4 ring[];
    const int4 *p = src + (SHARED ? 0 : (size_t)blockIdx.x * region);
    int n = blockDim.x, acc = 0, chunks = region / n;
    for (int it = 0; it < iters; it++) {
        int base = (it * 4) % chunks;
        if (CP) {
            unsigned dst = (unsigned)__cvta_generic_to_shared(ring + (it % 4) * 4 * n + threadIdx.x);
            #pragma unroll
            for (int s = 0; s < 4; s++)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                             :: "r"(dst + s * n * 16), "l"(p + ((base + s) % chunks) * n + threadIdx.x));
            asm volatile("cp.async.commit_group;" ::: "memory");
            asm volatile("cp.async.wait_group 2;" ::: "memory");
        } else {
            #pragma unroll
            for (int s = 0; s < 4; s++) {
                int4 v;
                asm volatile("ld.global.cg.v4.s32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p + ((base + s) % chunks) * n + threadIdx.x));
                acc += v.x ^ v.w;
            }
        }
    }
    if (CP) asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    if (acc == 0x12345 || (CP && ring[threadIdx.x].x == 0x12345)) sink[0] = 1;
}
extern "C" __global__ void stream_ld_own(const int4 *s, int i, int r, int *k) { stream<0, 0>(s, i, r, k); }
extern "C" __global__ void stream_ld_shared(const int4 *s, int i, int r, int *k) { stream<0, 1>(s, i, r, k); }
extern "C" __global__ void stream_cp_own(const int4 *s, int i, int r, int *k) { stream<1, 0>(s, i, r, k); }
extern "C" __global__ void stream_cp_shared(const int4 *s, int i, int r, int *k) { stream<1, 1>(s, i, r, k); }
"""
STREAMS = ("stream_ld_own", "stream_ld_shared", "stream_cp_own", "stream_cp_shared")
RING_BYTES = 4 * 4 * STREAM_THREADS * 16


def source() -> str:
    """mma_gemm.cu's text (its macros and includes) with the probe's kernels after it."""
    return GEMM_CU.read_text() + PARTS_SOURCE


def gemm_name(stages: int, parts: int, pad: int = PAD) -> str:
    return f"gemm_parts<{TILE}, {TILE}, {stages}, {pad}, {parts}>"


def cases() -> list[tuple]:
    """(label, kind, name, size or None, stages or None): every launch, in order."""
    got = [(f"gemm/n{n}/s2/p{p}", "gemm", gemm_name(2, p), n, 2) for n in (4096, 8192) for p in PARTS]
    got += [(f"gemm/n8192/s1/p{p}", "gemm", gemm_name(1, p), 8192, 1) for p in (7, 1)]
    got += [(f"gemm/n2048/s2/p{p}", "gemm", gemm_name(2, p), 2048, 2) for p in (7, 1)]
    got += [(f"gemm/n{n}/s2/p1/pad0", "gemm", gemm_name(2, 1, 0), n, 2) for n in (2048, 4096, 8192)]
    return got + [(s, "stream", s, None, None) for s in STREAMS]


def _module():
    import cupy as cp                    # here, not at the top: only measuring needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    names = list(dict.fromkeys(c[2] for c in cases() if c[1] == "gemm"))
    mod = cp.RawModule(code=source(), options=(f"--gpu-architecture=sm_{props['major']}{props['minor']}",
                                               "-std=c++17"), backend="nvrtc", name_expressions=names)
    for s in STREAMS:
        mod.get_function(s).max_dynamic_shared_size_bytes = RING_BYTES
    return cp, mod, props["multiProcessorCount"]


def _arrays(cp, sms: int) -> dict:
    rng = cp.random.default_rng(0)
    a = rng.standard_normal((8192, 8192), dtype=cp.float32).astype(cp.float16)
    b = rng.standard_normal((8192, 8192), dtype=cp.float32).astype(cp.float16)
    c = cp.zeros((8192, 8192), dtype=cp.float32)
    src = cp.ones(sms * STREAM_BLOCKS_PER_SM * REGION_INT4 * 4, dtype=cp.int32)
    return {"a": a, "b": b, "c": c, "src": src, "sink": cp.zeros(1, dtype=cp.int32)}


def _launcher(cp, mod, sms: int, arr: dict, case: tuple):
    _label, kind, name, n, _stages = case
    fn = mod.get_function(name)
    if kind == "gemm":
        a, b, c = (cp.ascontiguousarray(arr[x][:n, :n]) for x in "abc")
        return lambda: fn((n // TILE, n // TILE), (128,), (a, b, c, cp.int32(n), cp.int32(n), cp.int32(n)))
    grid = sms * STREAM_BLOCKS_PER_SM
    return lambda: fn((grid,), (STREAM_THREADS,), (arr["src"], cp.int32(STREAM_ITERS), cp.int32(REGION_INT4),
                                                   arr["sink"]), shared_mem=RING_BYTES)


def worker() -> None:
    """One launch of every case, in `cases` order (what ncu profiles)."""
    cp, mod, sms = _module()
    arr = _arrays(cp, sms)
    for case in cases():
        _launcher(cp, mod, sms, arr, case)()
    cp.cuda.Device().synchronize()


def measure(out_dir: Path) -> Path:
    cp, mod, sms = _module()
    arr = _arrays(cp, sms)
    rows = []
    for case in cases():
        us = event_times_us(cp, _launcher(cp, mod, sms, arr, case), REPEATS)
        rows.append({"case": case[0], "kernel": case[2], "n": case[3], "stages": case[4],
                     "us_median": statistics.median(us), "us_all": us})
        print(f"{case[0]:24s} {rows[-1]['us_median']:10.1f} us", flush=True)
    log = out_dir / "gemm_parts_ncu.csv"
    t = time.time()
    _cmd, done, kernels, kept = ncu.profile_worker_known("validate.tensor_timing.gemm_parts", METRICS, log)
    kernels = [k for k in kernels if "gemm_parts" in k["kernel_name"] or "stream_" in k["kernel_name"]]
    for row, k in zip(rows, kernels):
        row["metrics"] = k["metrics"]
    doc = {"provenance": {"gpu": ncu.gpu_identity(), "sm_count": sms,
                          "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                          "clocks": "not locked (as found)",
                          "command": "python -m validate.tensor_timing.gemm_parts $OUT",
                          "ncu": {"rc": done.returncode, "seconds": round(time.time() - t, 1), "metrics": kept,
                                  "kernels": len(kernels), "tail": done.stdout[-1500:]}},
           "tile": TILE, "pad": PAD, "repeats": REPEATS, "stream_iters": STREAM_ITERS,
           "stream_blocks_per_sm": STREAM_BLOCKS_PER_SM, "stream_threads": STREAM_THREADS,
           "region_int4": REGION_INT4, "kernel_source": PARTS_SOURCE, "rows": rows}
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "gemm_parts.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


def predict(gpu: str, measured: Path, only: str | None = None) -> list[dict]:
    """gpusim's duration of every case of a measured file, beside the measured median."""
    import re                            # here: only predicting needs these
    import numpy as np                   # here: likewise
    import gpusim                        # here: the GPU side imports nothing of gpusim
    doc = json.loads(measured.read_text())
    src = GEMM_CU.read_text() + doc.get("kernel_source", PARTS_SOURCE)
    sms = doc["provenance"]["sm_count"]
    got = []
    for row in doc["rows"]:
        if only and not re.search(only, row["case"]):
            continue
        t = time.time()
        if row["kernel"].startswith("gemm_parts"):
            n = row["n"]
            args = (np.zeros((n, n), np.float16), np.zeros((n, n), np.float16), np.zeros((n, n), np.float32),
                    np.int32(n), np.int32(n), np.int32(n))
            r = gpusim.launch(gpusim.CudaSource(src, row["kernel"], options=("-std=c++17",)), (n // TILE, n // TILE),
                              (128,), args, gpu=gpu, timing=True, outputs=False)
        else:
            grid = sms * doc["stream_blocks_per_sm"]
            args = (np.ones(grid * doc["region_int4"] * 4, np.int32), np.int32(doc["stream_iters"]),
                    np.int32(doc["region_int4"]), np.zeros(1, np.int32))
            r = gpusim.launch(gpusim.CudaSource(src, row["kernel"]), grid, doc["stream_threads"], args, gpu=gpu,
                              timing=True, shared_bytes=RING_BYTES, outputs=False)
        m = r.metrics
        meas = (row.get("metrics") or {}).get("gpu__time_duration.sum")
        pred_us = m["gpu__time_duration.sum"] / 1e3
        out = {"case": row["case"], "predicted_us": round(pred_us, 2), "measured_us_events": round(row["us_median"], 2),
               "measured_us_ncu": None if meas is None else round(meas / 1e3, 2),
               "error_pct": None if meas is None else round(100 * (pred_us * 1e3 / meas - 1), 1),
               "predicted_lts_read_sectors": m.get("lts__t_sectors_op_read.sum"),
               "predicted_dram_read_bytes": m.get("dram__bytes_read.sum"),
               "bound": m.get("timing__bound"), "utilization": m.get("timing__utilization"),
               "wall_s": round(time.time() - t, 1)}
        got.append(out)
        print(json.dumps(out), flush=True)
    return got


def main(argv=None) -> int:
    return folder_probe_main(__doc__, "validate.tensor_timing.gemm_parts", measure, predict, worker, argv, only=True)


if __name__ == "__main__":
    sys.exit(main())
