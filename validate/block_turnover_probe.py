"""What a short block costs beyond its accesses: a transpose's shared round in long-lived and in one-round blocks (issue 24)

Why: held-out 2's `transpose_tiled_2d` (16,384 blocks of 32 x 8 threads, one 32 x 32 tile each) is predicted
18% fast at every size on both GPUs, and the calibration set's `transpose_shared/large` 24%; the GPU moves 0.79
of a shared wavefront a cycle an SM where gpusim's data path, which bounds it, moves 0.97. The same accesses in
long-lived blocks (`shared_mix_probe`: 8 blocks of 8 warps an SM, 128 rounds each) run at 0.93-0.98 on the
GPUs and within 2-7% in gpusim (docs/mechanisms_24.md section 31). What is left is what a block that does one
tile pays: its start, its first accesses, its barrier with no other round to overlap, its exit.

The probe runs the same total work, 16 rounds for every one of 8 x 132 block slots, twice: in 1,056 blocks
of 16 rounds (`*_loop`) and in 16,896 blocks of one round (`*_once`). A round is the transpose's shared half
(`rt32`: 4 conflict-free row stores a thread, a barrier, 4 column loads, 32-way conflicted, a barrier),
with the transpose's global halves added (`ldg`: the row stores fed by coalesced loads of an L2-resident
256 KB; `stg`: each column load's value stored to global memory, coalesced, into an L2-resident 1 MB), and for scale
a round without conflicts (`rt1`) and blocks that only start and end (`empty`). 32 x 8 threads a block, and
32 x 4 (`_w4`: twice the rounds a block, the same tiles) for the rt32 pair. CUDA events, the median of 5
launches after a warm-up.

    python -m validate.block_turnover_probe --out $OUT/block_turnover_h200.json   # GPU machine, seconds
    python -m validate.block_turnover_probe --predict h200 [--json FILE]          # gpusim, the same launches

Needs CuPy (NVRTC). The GPU side imports nothing of gpusim.
"""
from __future__ import annotations

import statistics

import numpy as np

from validate.probe_cli import gpu_provenance, nvrtc_module, probe_main, write_probe

SMS = 132
SLOTS = 8 * SMS                      # 8 blocks of 8 warps an SM
ROUNDS = 16                          # rounds a slot: a looped block's, or as many one-round blocks
L2_FLOATS = 64 * 1024                # the ldg source: 256 KB, L2-resident after the warm-up

SOURCE = r"""
#define TILE 32
template <int ROWS, bool LDG, bool STG, bool CONFLICT>
__device__ void rounds(const float *src, float *dst, float *out, int nrounds) {
    __shared__ float tile_[TILE * TILE];
    volatile float *t = tile_;
    const int tx = threadIdx.x, ty = threadIdx.y;
    float acc = 0.0f;
    const float *from = src + (blockIdx.x % 64) * TILE * TILE;
    float *to = dst + (blockIdx.x % 256) * TILE * TILE;
    for (int r = 0; r < nrounds; r++) {
        for (int k = 0; k < TILE; k += ROWS)
            t[(ty + k) * TILE + tx] = LDG ? from[(ty + k) * TILE + tx] + r : acc + k;
        __syncthreads();
        for (int k = 0; k < TILE; k += ROWS) {
            float v = CONFLICT ? t[tx * TILE + ty + k] : t[((ty + k) ^ 1) * TILE + tx];
            if (STG) to[(ty + k) * TILE + tx] = v;
            else acc += v;
        }
        __syncthreads();
    }
    if (acc == -1.0f) out[blockIdx.x] = acc;
}
extern "C" __global__ void rt32(const float *s, float *d, float *o, int n) { rounds<8, false, false, true>(s, d, o, n); }
extern "C" __global__ void rt32_w4(const float *s, float *d, float *o, int n) { rounds<4, false, false, true>(s, d, o, n); }
extern "C" __global__ void rt1(const float *s, float *d, float *o, int n) { rounds<8, false, false, false>(s, d, o, n); }
extern "C" __global__ void ldg_rt32(const float *s, float *d, float *o, int n) { rounds<8, true, false, true>(s, d, o, n); }
extern "C" __global__ void rt32_stg(const float *s, float *d, float *o, int n) { rounds<8, false, true, true>(s, d, o, n); }
extern "C" __global__ void ldg_rt32_stg(const float *s, float *d, float *o, int n) { rounds<8, true, true, true>(s, d, o, n); }
extern "C" __global__ void empty(const float *s, float *d, float *o, int n) { if (n < 0) o[blockIdx.x] = 1.0f; }
"""

# (kernel, threads a block in y, shared wavefronts a warp a round: stores, loads)
KERNELS = (("rt32", 8, 4, 128), ("rt32_w4", 4, 8, 256), ("rt1", 8, 4, 4), ("ldg_rt32", 8, 4, 128),
           ("rt32_stg", 8, 4, 128), ("ldg_rt32_stg", 8, 4, 128), ("empty", 8, 0, 0))


def cases() -> list[tuple[str, str, int, int, int]]:
    """(case, kernel, blocks, rounds a block, threads in y) of every launch: each kernel looped and once."""
    out = []
    for name, ty, _, _ in KERNELS:
        per_slot = ROUNDS * (8 // ty)                   # 32 x 4 blocks: twice the rounds for the same tiles
        out.append((f"{name}_loop", name, SLOTS, per_slot, ty))
        out.append((f"{name}_once", name, SLOTS * per_slot, 1, ty))
    return out


def wavefronts(kernel: str, blocks: int, rounds: int) -> int:
    """Shared wavefronts a launch makes (its shape: every warp's stores and loads a round)."""
    ty, st, ld = next((ty, st, ld) for name, ty, st, ld in KERNELS if name == kernel)
    return blocks * ty * rounds * (st + ld)


def _args(xp, blocks: int, rounds: int):
    return (xp.ones(L2_FLOATS, xp.float32), xp.zeros(4 * L2_FLOATS, xp.float32), xp.zeros(blocks, xp.float32),
            np.int32(rounds))


def _row(case: str, kernel: str, blocks: int, rounds: int, us: float) -> dict:
    wf = wavefronts(kernel, blocks, rounds)
    return {"case": case, "kernel": kernel, "blocks": blocks, "rounds": rounds, "us": round(us, 2),
            "shared_wavefronts": wf, "wavefronts_per_sm_cycle": round(wf / (us * 1.98e3 * SMS), 3),
            "ns_per_block_per_slot": round(us * 1e3 * SLOTS / blocks, 1)}


def _print(r: dict) -> None:
    print(f"{r['case']:20s} {r['blocks']:6d} blocks x {r['rounds']:3d}  {r['us']:9.2f} us  "
          f"{r['wavefronts_per_sm_cycle']:.3f} wavefronts a cycle an SM  {r['ns_per_block_per_slot']:8.1f} ns a block a slot",
          flush=True)


def run(out_path: str) -> None:
    cp, props, mod = nvrtc_module(SOURCE)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    rows = []
    for case, kernel, blocks, rounds, ty in cases():
        fn = mod.get_function(kernel)
        args = _args(cp, blocks, rounds)
        times = []
        for _ in range(6):
            start.record()
            fn((blocks,), (32, ty), args)
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
        row = _row(case, kernel, blocks, rounds, statistics.median(times[1:]))
        row["times_us"] = [round(x, 2) for x in times]
        rows.append(row)
        _print(row)
    prov = gpu_provenance(cp, "python -m validate.block_turnover_probe --out $OUT/block_turnover_<gpu>.json", __doc__,
                          sm_count=props["multiProcessorCount"], rounds=ROUNDS, kernel_source=SOURCE)
    write_probe(out_path, prov, rows)


def predict(preset: str) -> list:
    """gpusim's time for each case (timing as `gpusim.launch` samples by default)."""
    import gpusim                         # here: the GPU side imports nothing of gpusim
    rows = []
    for case, kernel, blocks, rounds, ty in cases():
        r = gpusim.launch(gpusim.CudaSource(SOURCE, kernel), blocks, (32, ty), _args(np, blocks, rounds), gpu=preset,
                          timing=True, outputs=False)
        rows.append(_row(case, kernel, blocks, rounds, r.metrics["gpu__time_duration.sum"] / 1e3))
        _print(rows[-1])
    return rows


def main(argv=None) -> int:
    return probe_main(__doc__, run, predict, argv)


if __name__ == "__main__":
    raise SystemExit(main())
