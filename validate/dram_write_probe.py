"""Random DRAM writes on the H100/H200 (issue 24): how fast the GPU's memory serves scattered
stores that need a read-modify-write, against scattered whole-sector and whole-burst stores that
need none, and scattered reads of the same sizes (docs/mechanisms_24.md sections 47-49).

Held-out `scatter_store/large` (random 4-byte stores into 64 MiB) and calibration
`random_access/write` are predicted 20-55% fast; the GPU moves their read-modify-write traffic at
about 1.0 TB/s where gpusim's DRAM reaches 1.3-2.5, while random 4-byte loads
(`random_access/read`) are predicted within 1%. This separates the cost of a scattered write
from the cost of its fill: each of N = 2^23 threads touches one 64-byte burst of a 1 GiB array
(burst index i * 0x9E3779B1 mod 2^24: every burst at most once, spread over every channel and
bank), with a 4-byte store (one dirty sector, filled from DRAM before its write-back), a 32-byte
store (a whole sector: no fill), a 64-byte store (a whole burst), a 4-byte load, a 32- or 64-byte
load, or a 4-byte increment (load and store of one word); the same 64-byte stores and loads in
order (burst i) as the streaming reference. Run 3 adds one warp's consecutive stores into the same
sectors (whether the L1 combines them before the L2) and random partial stores into a region the L2
holds; run 4 how many lines with partly written sectors the L2 keeps (2^12 to 2^19 lines, one 4-byte
store each; docs/mechanisms_24.md section 49). Timed by Nsight as `validate measure` does (caches
flushed before each launch), with DRAM and L2 bytes and the L1's and L2's store requests.

    python -m validate.dram_write_probe $OUT                    # GPU machine: $OUT/dram_write.json
    python -m validate.dram_write_probe --predict h200 data/measurements/dram_write_h200_run4.json --json FILE

Needs CuPy (NVRTC) and Nsight Compute (`ncu`) on the GPU machine; the GPU side imports nothing of
gpusim.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from validate import ncu
from validate.probe_cli import folder_probe_main

WORDS = 1 << 28                    # the array: 1 GiB of 32-bit words, 2^24 bursts of 64 B
OPS = 1 << 23                      # threads, one access each
THREADS = 256
REPEATS = 3
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
           "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "lts__t_requests_srcunit_tex_op_write.sum")

SOURCE = r"""
// burst b of the 1 GiB array: words 16 b .. 16 b + 15 (64 B); RANDOM: b = i * 0x9E3779B1 mod 2^24
template <bool RANDOM>
__device__ __forceinline__ unsigned int burst_of(unsigned int i) {
    return RANDOM ? (i * 0x9E3779B1u) & ((1u << 24) - 1u) : i;
}
// BYTES 4 / 32 / 64 from the burst's start; LOAD: read them (a result the compiler cannot drop); RMW: 4-byte increment
template <int BYTES, bool LOAD, bool RMW, bool RANDOM>
__device__ void access(unsigned int *a, unsigned int *flag) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int *p = a + 16u * burst_of<RANDOM>(i);
    if (RMW) {
        p[0] += 1u;
    } else if (LOAD) {
        unsigned int s;
        if (BYTES == 4) {
            s = p[0];
        } else {
            uint4 v = reinterpret_cast<uint4 *>(p)[0];
            uint4 w = reinterpret_cast<uint4 *>(p)[1];
            s = v.x ^ v.y ^ v.z ^ v.w ^ w.x ^ w.y ^ w.z ^ w.w;
            if (BYTES == 64) {
                uint4 y = reinterpret_cast<uint4 *>(p)[2];
                uint4 z = reinterpret_cast<uint4 *>(p)[3];
                s ^= y.x ^ y.y ^ y.z ^ y.w ^ z.x ^ z.y ^ z.z ^ z.w;
            }
        }
        if (s == 0xdeadbeefu) flag[0] = i;           // never: the array holds small numbers
    } else {
        if (BYTES == 4) {
            p[0] = i;
        } else {
            uint4 v = make_uint4(i, i, i, i);
            reinterpret_cast<uint4 *>(p)[0] = v;
            reinterpret_cast<uint4 *>(p)[1] = v;
            if (BYTES == 64) {
                reinterpret_cast<uint4 *>(p)[2] = v;
                reinterpret_cast<uint4 *>(p)[3] = v;
            }
        }
    }
}
// run 2: a warp's lanes in groups of G (2, 4, 8) cover one whole 32-B sector / 64-B burst / 128-B line of a
// random burst (line) in one instruction, 16 B a lane (G = 1: the 16-B store of run 1's kind, half a sector);
// group g of the launch takes burst (line) g * 0x9E3779B1 mod 2^24 (2^23); LOAD reads instead of writing
template <int G, bool LOAD, bool LINES>
__device__ void group_access(unsigned int *a, unsigned int *flag) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int g = t / G, k = t % G;
    unsigned int unit = LINES ? (g * 0x9E3779B1u) & ((1u << 23) - 1u) : (g * 0x9E3779B1u) & ((1u << 24) - 1u);
    uint4 *p = reinterpret_cast<uint4 *>(a + (LINES ? 32u : 16u) * unit) + k;
    if (LOAD) {
        uint4 v = *p;
        if ((v.x ^ v.y ^ v.z ^ v.w) == 0xdeadbeefu) flag[0] = t;
    } else {
        *p = make_uint4(t, t, t, t);
    }
}
extern "C" __global__ void grp_store16(unsigned int *a, unsigned int *f) { group_access<1, false, false>(a, f); }
extern "C" __global__ void grp_store32(unsigned int *a, unsigned int *f) { group_access<2, false, false>(a, f); }
extern "C" __global__ void grp_store64(unsigned int *a, unsigned int *f) { group_access<4, false, false>(a, f); }
extern "C" __global__ void grp_store128(unsigned int *a, unsigned int *f) { group_access<8, false, true>(a, f); }
extern "C" __global__ void grp_load32(unsigned int *a, unsigned int *f) { group_access<2, true, false>(a, f); }
extern "C" __global__ void grp_load64(unsigned int *a, unsigned int *f) { group_access<4, true, false>(a, f); }
extern "C" __global__ void grp_load128(unsigned int *a, unsigned int *f) { group_access<8, true, true>(a, f); }
// the streaming references: lane i of the launch 16 B at byte 16 i (whole lines a warp instruction)
extern "C" __global__ void stream_store(unsigned int *a, unsigned int *f) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    reinterpret_cast<uint4 *>(a)[t] = make_uint4(t, t, t, t);
}
extern "C" __global__ void stream_load(unsigned int *a, unsigned int *f) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    uint4 v = reinterpret_cast<uint4 *>(a)[t];
    if ((v.x ^ v.y ^ v.z ^ v.w) == 0xdeadbeefu) f[0] = t;
}
extern "C" __global__ void rand_store4(unsigned int *a, unsigned int *f) { access<4, false, false, true>(a, f); }
extern "C" __global__ void rand_store32(unsigned int *a, unsigned int *f) { access<32, false, false, true>(a, f); }
extern "C" __global__ void rand_store64(unsigned int *a, unsigned int *f) { access<64, false, false, true>(a, f); }
extern "C" __global__ void rand_load4(unsigned int *a, unsigned int *f) { access<4, true, false, true>(a, f); }
extern "C" __global__ void rand_load32(unsigned int *a, unsigned int *f) { access<32, true, false, true>(a, f); }
extern "C" __global__ void rand_load64(unsigned int *a, unsigned int *f) { access<64, true, false, true>(a, f); }
extern "C" __global__ void rand_rmw4(unsigned int *a, unsigned int *f) { access<4, false, true, true>(a, f); }
extern "C" __global__ void seq_store64(unsigned int *a, unsigned int *f) { access<64, false, false, false>(a, f); }
extern "C" __global__ void seq_load64(unsigned int *a, unsigned int *f) { access<64, true, false, false>(a, f); }
// run 3: one warp's consecutive store instructions into the same sectors: thread t writes N words of W bytes
// (4 or 16) at byte S t of the array, one `st.global` each (inline PTX: ptxas keeps them apart); with GAP the
// same store into the array's second half (1 << 29 bytes on) between the first and the second
__device__ __forceinline__ void st(char *p, unsigned int v, int w) {
    if (w == 4) asm volatile("st.global.b32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
    else asm volatile("st.global.v4.b32 [%0], {%1, %1, %1, %1};" :: "l"(p), "r"(v) : "memory");
}
template <int W, int N, int S, bool GAP>
__device__ void comb(unsigned int *a) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    char *p = reinterpret_cast<char *>(a) + (size_t)S * t;
    st(p, t, W);
    if (GAP) st(p + (1u << 29), t, W);
#pragma unroll
    for (int k = 1; k < N; ++k) st(p + W * k, t, W);
}
extern "C" __global__ void comb4_s8(unsigned int *a, unsigned int *f) { comb<4, 2, 8, false>(a); }
extern "C" __global__ void comb4_s16(unsigned int *a, unsigned int *f) { comb<4, 2, 16, false>(a); }
extern "C" __global__ void comb4_s32(unsigned int *a, unsigned int *f) { comb<4, 2, 32, false>(a); }
extern "C" __global__ void comb4_s64(unsigned int *a, unsigned int *f) { comb<4, 2, 64, false>(a); }
extern "C" __global__ void comb4_s128(unsigned int *a, unsigned int *f) { comb<4, 2, 128, false>(a); }
extern "C" __global__ void comb4n5_s20(unsigned int *a, unsigned int *f) { comb<4, 5, 20, false>(a); }
extern "C" __global__ void comb4n4_s64(unsigned int *a, unsigned int *f) { comb<4, 4, 64, false>(a); }
extern "C" __global__ void comb16_s32(unsigned int *a, unsigned int *f) { comb<16, 2, 32, false>(a); }
extern "C" __global__ void comb16_s64(unsigned int *a, unsigned int *f) { comb<16, 2, 64, false>(a); }
extern "C" __global__ void comb16_s128(unsigned int *a, unsigned int *f) { comb<16, 2, 128, false>(a); }
extern "C" __global__ void gap4_s8(unsigned int *a, unsigned int *f) { comb<4, 2, 8, true>(a); }
extern "C" __global__ void gap4_s16(unsigned int *a, unsigned int *f) { comb<4, 2, 16, true>(a); }
extern "C" __global__ void gap4_s32(unsigned int *a, unsigned int *f) { comb<4, 2, 32, true>(a); }
// run 3: random stores into a 16 MiB region the L2 holds (2^18 bursts, each at most once): a 4-B store a burst
// (KIND 0), a 16-B one (KIND 1), or two lanes' 16 B filling its first sector in one instruction (KIND 2)
template <int KIND>
__device__ void fit_access(unsigned int *a, unsigned int *flag) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int g = KIND == 2 ? t / 2 : t;
    unsigned int *p = a + 16u * ((g * 0x9E3779B1u) & ((1u << 18) - 1u));
    if (KIND == 0) p[0] = t;
    else if (KIND == 1) reinterpret_cast<uint4 *>(p)[0] = make_uint4(t, t, t, t);
    else reinterpret_cast<uint4 *>(p)[t % 2] = make_uint4(t, t, t, t);
}
extern "C" __global__ void fit_store4(unsigned int *a, unsigned int *f) { fit_access<0>(a, f); }
extern "C" __global__ void fit_store16(unsigned int *a, unsigned int *f) { fit_access<1>(a, f); }
extern "C" __global__ void fit_store32(unsigned int *a, unsigned int *f) { fit_access<2>(a, f); }
// run 4: how many partly written lines the L2 keeps: 2^K threads, thread i one 4-B store into each of SECT
// sectors (0 / 0, 2 / 0-3) of line i (in order) or line i * 0x9E3779B1 mod 2^K (at random) of a 2^K-line region
template <int K, bool RANDOM, int SECT>
__device__ void partial_lines(unsigned int *a) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int line = RANDOM ? (i * 0x9E3779B1u) & ((1u << K) - 1u) : i;
    unsigned int *p = a + 32u * line;
#pragma unroll
    for (int s = 0; s < SECT; ++s) p[8 * s * (4 / SECT)] = i;
}
extern "C" __global__ void pr_k12(unsigned int *a, unsigned int *f) { partial_lines<12, true, 1>(a); }
extern "C" __global__ void pr_k13(unsigned int *a, unsigned int *f) { partial_lines<13, true, 1>(a); }
extern "C" __global__ void pr_k14(unsigned int *a, unsigned int *f) { partial_lines<14, true, 1>(a); }
extern "C" __global__ void pr_k15(unsigned int *a, unsigned int *f) { partial_lines<15, true, 1>(a); }
extern "C" __global__ void pr_k16(unsigned int *a, unsigned int *f) { partial_lines<16, true, 1>(a); }
extern "C" __global__ void pr_k17(unsigned int *a, unsigned int *f) { partial_lines<17, true, 1>(a); }
extern "C" __global__ void pr_k18(unsigned int *a, unsigned int *f) { partial_lines<18, true, 1>(a); }
extern "C" __global__ void pr_k19(unsigned int *a, unsigned int *f) { partial_lines<19, true, 1>(a); }
extern "C" __global__ void ps_k14(unsigned int *a, unsigned int *f) { partial_lines<14, false, 1>(a); }
extern "C" __global__ void ps_k16(unsigned int *a, unsigned int *f) { partial_lines<16, false, 1>(a); }
extern "C" __global__ void ps_k18(unsigned int *a, unsigned int *f) { partial_lines<18, false, 1>(a); }
extern "C" __global__ void pr2_k17(unsigned int *a, unsigned int *f) { partial_lines<17, true, 2>(a); }
extern "C" __global__ void pr4_k16(unsigned int *a, unsigned int *f) { partial_lines<16, true, 4>(a); }
extern "C" __global__ void pr4_k17(unsigned int *a, unsigned int *f) { partial_lines<17, true, 4>(a); }
"""
# (case, kernel, threads in the launch): run 1 one access a thread; run 2 a group of lanes one access (2^23
# random bursts or lines: 2^23 x the group's lanes), and the streams (512 MiB)
RUN1 = ("rand_store4", "rand_store32", "rand_store64", "rand_load4", "rand_load32", "rand_load64", "rand_rmw4",
        "seq_store64", "seq_load64")
CASES = [(n, n, OPS) for n in RUN1] + [
    ("grp_store16", "grp_store16", OPS), ("grp_store32", "grp_store32", 2 * OPS), ("grp_store64", "grp_store64", 4 * OPS),
    ("grp_store128", "grp_store128", 8 * OPS), ("grp_load32", "grp_load32", 2 * OPS),
    ("grp_load64", "grp_load64", 4 * OPS), ("grp_load128", "grp_load128", 8 * OPS),
    ("stream_store", "stream_store", 4 * OPS), ("stream_load", "stream_load", 4 * OPS)]
# run 3: store combining (2^18 threads, lanes S bytes apart: S / 4 lines an instruction) and stores that fit in
# the L2 (2^18 random bursts of a 16 MiB region)
RUN3 = ("comb4_s8", "comb4_s16", "comb4_s32", "comb4_s64", "comb4_s128", "comb4n5_s20", "comb4n4_s64", "comb16_s32",
        "comb16_s64", "comb16_s128", "gap4_s8", "gap4_s16", "gap4_s32", "fit_store4", "fit_store16")
CASES += [(n, n, 1 << 18) for n in RUN3] + [("fit_store32", "fit_store32", 1 << 19)]
# run 4: 2^K threads, one 4-B store into each of 1, 2 or 4 sectors of its own line
RUN4 = {f"pr_k{k}": k for k in range(12, 20)} | {"ps_k14": 14, "ps_k16": 16, "ps_k18": 18, "pr2_k17": 17,
                                                  "pr4_k16": 16, "pr4_k17": 17}
CASES += [(n, n, 1 << k) for n, k in RUN4.items()]


def worker() -> None:
    import cupy as cp                    # here, not at the top: only running needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    mod = cp.RawModule(code=SOURCE, options=(f"--gpu-architecture=sm_{props['major']}{props['minor']}",), backend="nvrtc")
    a = cp.asarray(np.zeros(WORDS, np.uint32))     # copied, not filled: no kernel of CuPy's own is profiled
    flag = cp.asarray(np.zeros(1, np.uint32))
    for _case, name, threads in CASES:
        for _ in range(REPEATS):
            mod.get_function(name)((threads // THREADS,), (THREADS,), (a, flag))
    cp.cuda.Device().synchronize()


def measure(out_dir: str) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "dram_write_ncu.csv"
    cmd, rc, kernels = ncu.profile_worker("validate.dram_write_probe", METRICS, log)
    per_case, problems = ncu.repeated_cases(kernels, len(CASES), REPEATS)
    rows = []
    for (name, _kernel, threads), got in zip(CASES, per_case):
        ms = [k["metrics"] for k in got]
        durs = sorted(m.get("gpu__time_duration.sum") or 0 for m in ms)
        med = durs[len(durs) // 2] if durs else None
        last = ms[-1] if ms else {}
        ops = threads if name in RUN4 else OPS if name not in RUN3 else 1 << 18     # run 2: 2^23 groups too (the streams: 64 B a "group" of 4 lanes)
        row = {"case": name, "threads": threads, "ops": ops, "duration_ns_median": med, "duration_ns": durs,
               "metrics": last}
        if med:
            row["ops_per_ns"] = ops / med
            row["dram_bytes_per_ns"] = ((last.get("dram__bytes_read.sum") or 0) + (last.get("dram__bytes_write.sum") or 0)) / med
        rows.append(row)
    doc = {"provenance": {"gpu": ncu.gpu_identity(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                          "command": "python -m validate.dram_write_probe $OUT", "ncu": " ".join(cmd[:12]),
                          "words": WORDS, "ops": OPS, "threads": THREADS, "method": __doc__.split("\n\n")[0]},
           "ncu_rc": rc.returncode, "ncu_tail": rc.stdout[-1500:], "problems": problems, "kernels": rows}
    path = out / "dram_write.json"
    path.write_text(json.dumps(doc, indent=1))
    for r in rows:
        m = r["metrics"]
        print(f"{r['case']:13s} {r['duration_ns_median']} ns, {r.get('ops_per_ns', 0):.2f} ops/ns, DRAM read "
              f"{(m.get('dram__bytes_read.sum') or 0) / 1e6:.1f} MB write {(m.get('dram__bytes_write.sum') or 0) / 1e6:.1f} MB")
    return path


def predict(gpu: str, measured: str | None = None) -> list[dict]:
    """gpusim's time and DRAM bytes of each case (and the measured ones beside them, from a file
    `measure` wrote)."""
    import gpusim                        # here: the GPU machine's side runs without gpusim's dependencies
    meas = {}
    if measured:
        meas = {r["case"]: r for r in json.loads(Path(measured).read_text())["kernels"]}
    a = np.zeros(WORDS, np.uint32)
    flag = np.zeros(1, np.uint32)
    rows = []
    for name, kernel, threads in CASES:
        m = gpusim.launch(gpusim.CudaSource(SOURCE, kernel), threads // THREADS, THREADS, (a, flag), gpu=gpu,
                          timing=True, outputs=False).metrics
        got = meas.get(name, {})
        rows.append({"case": name, "predicted_ns": m["gpu__time_duration.sum"], "measured_ns": got.get("duration_ns_median"),
                     "predicted_dram_read_bytes": m.get("dram__bytes_read.sum"),
                     "predicted_dram_write_bytes": m.get("dram__bytes_write.sum"),
                     "measured_dram_read_bytes": got.get("metrics", {}).get("dram__bytes_read.sum"),
                     "measured_dram_write_bytes": got.get("metrics", {}).get("dram__bytes_write.sum"),
                     "predicted_l2_partial_write_sectors": m.get("gpusim__l2_partial_write_sectors.sum")})
    return rows


if __name__ == "__main__":
    sys.exit(folder_probe_main(__doc__, "validate.dram_write_probe", measure, predict, worker))
