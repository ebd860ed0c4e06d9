"""cp.async's fill of shared memory on the H100/H200 (issue 29): how many L1 data-path wavefronts
a warp's LDGSTS takes for a given layout, and whether those wavefronts hold the same data path
as ldmatrix's. The model's rule (`gpusim.functional.copy_counts.fill_wavefronts`: one wavefront
per global 128-B line, 128-B shared window and 16-B phase) was read off two layouts only
(cuda_mma_*'s padded rows: 15 and 10.5 a LDGSTS; Triton's swizzled tiles: 4); this measures
it on others, and the cost of the fills in time.

    python -m validate.tensor_timing.fill_rule [OUT_DIR]        # about 2 minutes on an H100

Two parts, results in OUT_DIR/fill_rule.json (with `gpusim`'s prediction of each count beside
it when gpusim imports):
- counters: `ncu` over this module's worker (`--worker`), one launch per layout (one block of 8
  warps, 64 copies per warp): sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts,
  sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass, lts__t_sectors_srcunit_tex_op_read,
  smsp__inst_executed_op_ldgsts. Layouts: rows of 32, 64, 128 B (16 B a lane) at shared pitches
  of row + 0, 16, 32, 48, 64 B, global rows at the start or 64 B into a 128-B line, and the
  aligned 128-B case with half the lanes zero-filling (src-size 0).
- time (clock64, no ncu): 32 warps on one SM each issuing copies back to back (64 per warp,
  then one wait) for the aligned and the 80-B-pitch layouts; 16 of them issuing ldmatrix.x4
  alone; and both at once. If the fills hold the data path the LDSMs use, the mixed run's
  LDSMs slow by about the fills' wavefronts.

Needs CuPy (cupy-cuda13x, NVRTC through it) and Nsight Compute (`ncu`, validate.ncu.find_ncu).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from validate import ncu

WARPS, COPIES = 8, 64
LAYOUTS = [(row, row + pad, off, 0) for row in (32, 64, 128) for pad in (0, 16, 32, 48, 64)
           for off in ((0, 64) if row < 128 else (0,))] + [(128, 128, 0, 2), (64, 80, 0, 2)]
METRICS = ("sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
           "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum",
           "lts__t_sectors_srcunit_tex_op_read.sum", "smsp__inst_executed_op_ldgsts.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "sm__cycles_elapsed.max",
           "l1tex__m_xbar2l1tex_read_bytes.sum", "lts__t_sectors_op_read.sum")

SOURCE = r"""
typedef unsigned long long u64;
__device__ __forceinline__ u64 clk() { u64 t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }

// Each warp: rows of ROW bytes (16 per lane, 32 / (ROW / 16) rows), from global rows 4096 B apart
// starting `off` bytes into a line, into shared rows `pitch` bytes apart; lanes with
// (lane / 2) % zero_every == zero_every - 1 copy with src-size 0 (zero_every 0: none).
extern "C" __global__ void fill(const char *src, int row, int pitch, int off, int zero_every, int copies,
                                u64 *out) {
    extern __shared__ __align__(128) char smem[];
    int lane = threadIdx.x & 31, warp = threadIdx.x / 32, per_row = row / 16;
    int r = lane / per_row, c = (lane % per_row) * 16, rows = 32 / per_row;
    unsigned dst = (unsigned)__cvta_generic_to_shared(smem + (warp * rows + r) * pitch + c);
    const char *g = src + ((warp * rows + r) * 4096 + off + c);
    int size = (zero_every > 0 && (lane / 2) % zero_every == zero_every - 1) ? 0 : 16;
    u64 t0 = clk();
    for (int i = 0; i < copies; i++)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(g + (i % 8) * 128 * 4096),
                     "r"(size));
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    u64 t1 = clk();
    if (lane == 0) out[warp] = t1 - t0;
}

// Warps below `fillers` copy as `fill` does (row 64, pitch `pitch`); the others issue ldmatrix.x4.
extern "C" __global__ void mixed(const char *src, int pitch, int fillers, int iters, u64 *out, double *sink) {
    extern __shared__ __align__(128) char smem[];
    int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    u64 t0 = clk();
    if (warp < fillers) {
        unsigned dst = (unsigned)__cvta_generic_to_shared(smem + (warp * 8 + lane / 4) * pitch + (lane % 4) * 16);
        const char *g = src + ((warp * 8 + lane / 4) * 4096 + (lane % 4) * 16);
        for (int i = 0; i < iters; i++)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(g + (i % 8) * 128 * 4096));
        asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group 0;" ::: "memory");
    } else {
        unsigned a = (unsigned)__cvta_generic_to_shared(smem + 65536 + ((warp * 32 + lane) % 512) * 16);
        unsigned r0 = 0, r1 = 0, r2 = 0, r3 = 0, acc = 0;
        for (int i = 0; i < iters; i++) {
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                         : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a + (i % 4) * 8192));
            acc ^= r0 ^ r1 ^ r2 ^ r3;
        }
        if (acc == 0x12345) sink[0] = 1.0;
    }
    u64 t1 = clk();
    if (lane == 0) out[warp] = t1 - t0;
}
"""
SRC_BYTES = (8 * 128 + 32 * 8) * 4096             # 8 source tiles of 128 rows and the rows of 32 copying warps, L2-resident
SHARED_BYTES = 96 * 1024
MIXED = [("fills_aligned", 64, 32, 32), ("fills_padded", 80, 32, 32), ("ldsm_alone", 80, 0, 16),
         ("mixed_aligned", 64, 16, 32), ("mixed_padded", 80, 16, 32)]      # (name, pitch, fillers, warps)
MIXED_ITERS = 256


def _module():
    import cupy as cp                    # here, not at the top: only running needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    cc = f"sm_{props['major']}{props['minor']}"
    mod = cp.RawModule(code=SOURCE, options=(f"--gpu-architecture={cc}",), backend="nvrtc")
    for name in ("fill", "mixed"):
        mod.get_function(name).max_dynamic_shared_size_bytes = SHARED_BYTES
    return cp, mod, props


def worker() -> None:
    """One launch per layout (what ncu profiles), in LAYOUTS order."""
    cp, mod, _ = _module()
    src = cp.zeros(SRC_BYTES, dtype=cp.uint8)
    out = cp.zeros(32, dtype=cp.uint64)
    fn = mod.get_function("fill")
    for row, pitch, off, zero in LAYOUTS:
        fn((1,), (WARPS * 32,), (src, cp.int32(row), cp.int32(pitch), cp.int32(off), cp.int32(zero),
                                 cp.int32(COPIES), out), shared_mem=SHARED_BYTES)
    cp.cuda.Device().synchronize()


def timings() -> list[dict]:
    cp, mod, _ = _module()
    src = cp.zeros(SRC_BYTES, dtype=cp.uint8)
    sink = cp.zeros(1, dtype=cp.float64)
    fn = mod.get_function("mixed")
    rows = []
    for name, pitch, fillers, warps in MIXED:
        out = cp.zeros(warps, dtype=cp.uint64)
        for _ in range(3):                                   # the last of three (warm caches and clocks)
            fn((1,), (warps * 32,), (src, cp.int32(pitch), cp.int32(fillers), cp.int32(MIXED_ITERS), out, sink),
               shared_mem=SHARED_BYTES)
        cp.cuda.Device().synchronize()
        cyc = out.get().astype(float)
        rows.append({"case": name, "pitch": pitch, "fill_warps": fillers, "ldsm_warps": warps - fillers,
                     "iters": MIXED_ITERS, "fill_cycles_max": float(cyc[:fillers].max()) if fillers else None,
                     "ldsm_cycles_max": float(cyc[fillers:].max()) if warps > fillers else None})
    return rows


def predicted() -> list[dict] | None:
    """gpusim's fill wavefronts per LDGSTS of each layout (its rule), where gpusim imports."""
    try:
        import numpy as np                               # here: only the prediction needs them
        from gpusim.functional.copy_counts import ZERO_FILL_SOURCE, fill_wavefronts  # here: likewise
    except ImportError:
        return None
    got = []
    for row, pitch, off, zero in LAYOUTS:
        per_row = row // 16
        lane = np.arange(32)
        r, c = lane // per_row, (lane % per_row) * 16
        dst = r * pitch + c
        src = r * 4096 + off + c
        if zero:
            src = np.where((lane // 2) % zero == zero - 1, dst | ZERO_FILL_SOURCE, src)
        got.append(int(fill_wavefronts(np.zeros(32, np.int64), src, dst, 1)[0]))
    return got


def main(out_dir: str) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "fill_rule_ncu.csv"
    t = time.time()
    _cmd, rc, kernels = ncu.profile_worker("validate.tensor_timing.fill_rule", METRICS, log)
    pred = predicted()
    layouts = []
    for i, (row, pitch, off, zero) in enumerate(LAYOUTS):
        m = kernels[i]["metrics"] if i < len(kernels) else {}
        n = m.get("smsp__inst_executed_op_ldgsts.sum") or 0
        layouts.append({"row_bytes": row, "pitch_bytes": pitch, "line_offset_bytes": off, "zero_every_pair": zero,
                        "metrics": m, "fill_wavefronts_per_ldgsts": m.get(METRICS[0], 0) / n if n else None,
                        "sectors_per_ldgsts": m.get(METRICS[1], 0) / n if n else None,
                        "gpusim_fill_wavefronts_per_ldgsts": pred[i] if pred else None})
    doc = {"provenance": {"gpu": ncu.gpu_identity(), "clocks": "not locked (as found); timings in SM cycles (%clock64)",
                          "command": "python -m validate.tensor_timing.fill_rule $OUT"},
           "when": time.strftime("%Y-%m-%d %H:%M:%S"), "ncu_rc": rc.returncode, "ncu_seconds": round(time.time() - t, 1),
           "ncu_tail": rc.stdout[-2000:], "warps": WARPS, "copies_per_warp": COPIES, "layouts": layouts}
    try:
        doc["timings"] = timings()
    except Exception as e:                   # recorded: the counters are the main result
        doc["timings_error"] = f"{type(e).__name__}: {e}"
    path = out / "fill_rule.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    else:
        print(main(next((a for a in sys.argv[1:] if not a.startswith("-")), os.environ.get("OUT", "."))))
