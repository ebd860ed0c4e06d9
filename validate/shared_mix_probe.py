"""The shared-memory data path under a tiled transpose's mix of accesses (issue 24; docs/mechanisms_24.md
section 31).

Held-out 2's `transpose_tiled_2d` (32 x 32 float tiles, 32 x 8 threads, its reads of the tile 32-way
conflicted) is predicted 18% fast at every size on both GPUs, and the calibration set's
`transpose_shared/large` 24%: the GPU moves 0.79-0.81 (0.70-0.72) shared wavefronts a cycle an SM where
gpusim's data path, bound there, moves 0.97, though one block's 4-32 warps of 32-way loads alone reach
1.0 on an H100 (`shared_banks_probe`, section 11b). This probe takes the transpose apart, one kind of
access added at a time, every case with 8 blocks of 8 warps on every SM (1,056 blocks, one wave):

- `lds32` / `lds1`: R rounds of 4 shared loads a thread, the tile's column (32-way) or row (conflict-free);
- `rt32` / `rt1`: a round writes the tile's rows (4 conflict-free stores), a barrier, reads them back as
  above, a barrier: the transpose's shared half, without global memory;
- `lds32_stg`: the 32-way loads, each value stored to global memory (coalesced, the block's own 4 KB,
  L2-resident): the transpose's second half;
- `ldg_rt32`: the round's stores fed by coalesced global loads of an L2-resident 256 KB, then the
  32-way reads: the transpose's first half and shared half;
- `transpose32` / `transpose1`: the held-out kernel itself on 4096 x 4096 floats (16,384 blocks), its
  tile unpadded or padded to 33 columns.

Shared accesses go through a volatile pointer (each one issued). Times from CUDA events, the median of
5 launches after a warm-up; the shared wavefronts a case makes are known from its shape (`_wavefronts`),
and their rate a cycle an SM is given at 1.98 GHz; each looped block's `%clock64` over `%globaltimer` records
the SM clock it ran at beside it.

    python -m validate.shared_mix_probe --out $OUT/shared_mix_h100.json   # GPU machine, seconds
    python -m validate.shared_mix_probe --predict h100 [--json FILE]      # gpusim, same launches

Needs CuPy (NVRTC). The GPU side imports nothing of gpusim.
"""
from __future__ import annotations

import statistics

import numpy as np

from validate.probe_cli import gpu_provenance, nvrtc_module, probe_main, write_probe

SMS = 132
BLOCKS = 8 * SMS                     # 8 blocks of 8 warps an SM: one wave
ROUNDS = 128
N = 4096                             # the transposes' matrix side
L2_FLOATS = 64 * 1024                # ldg_rt32's source: 256 KB, L2-resident after the warm-up
SCRATCH_FLOATS = BLOCKS * 1024       # lds32_stg's stores: each block its own tile-sized region

SOURCE = r"""
#define TILE 32
#define ROWS 8
__device__ __forceinline__ void stamp(unsigned long long *clk, unsigned long long c0, unsigned long long g0) {
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        unsigned long long c1, g1;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(c1));
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
        clk[2 * blockIdx.x] = c1 - c0;
        clk[2 * blockIdx.x + 1] = g1 - g0;
    }
}
#define START unsigned long long c0, g0; \
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c0)); asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0)); \
    __shared__ float tile_[TILE * TILE]; volatile float *t = tile_; \
    const int tx = threadIdx.x, ty = threadIdx.y; float acc = 0.0f; \
    for (int k = 0; k < TILE; k += ROWS) t[(ty + k) * TILE + tx] = tx + k; \
    __syncthreads();
#define END out[blockIdx.x * 256 + ty * 32 + tx] = acc; stamp(clk, c0, g0);

extern "C" __global__ void lds32(float *out, int rounds, unsigned long long *clk) {
    START
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < TILE; k += ROWS) acc += t[tx * TILE + ty + k];
    END
}
extern "C" __global__ void lds1(float *out, int rounds, unsigned long long *clk) {
    START
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < TILE; k += ROWS) acc += t[(ty + k) * TILE + tx];
    END
}
extern "C" __global__ void rt32(float *out, int rounds, unsigned long long *clk) {
    START
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < TILE; k += ROWS) t[(ty + k) * TILE + tx] = acc + k;
        __syncthreads();
        for (int k = 0; k < TILE; k += ROWS) acc += t[tx * TILE + ty + k];
        __syncthreads();
    }
    END
}
extern "C" __global__ void rt1(float *out, int rounds, unsigned long long *clk) {
    START
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < TILE; k += ROWS) t[(ty + k) * TILE + tx] = acc + k;
        __syncthreads();
        for (int k = 0; k < TILE; k += ROWS) acc += t[((ty + k) ^ 1) * TILE + tx];
        __syncthreads();
    }
    END
}
extern "C" __global__ void lds32_stg(float *out, float *scratch, int rounds, unsigned long long *clk) {
    START
    float *mine = scratch + blockIdx.x * TILE * TILE;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < TILE; k += ROWS) mine[(ty + k) * TILE + tx] = t[tx * TILE + ty + k] + r;
    END
}
extern "C" __global__ void ldg_rt32(const float *src, float *out, int rounds, unsigned long long *clk) {
    START
    const float *from = src + (blockIdx.x % 64) * TILE * TILE;
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < TILE; k += ROWS) t[(ty + k) * TILE + tx] = from[(ty + k) * TILE + tx] + r;
        __syncthreads();
        for (int k = 0; k < TILE; k += ROWS) acc += t[tx * TILE + ty + k];
        __syncthreads();
    }
    END
}
template <int PAD>
__device__ void transpose_tile(const float *src, float *dst, int n) {
    __shared__ float tile[TILE][TILE + PAD];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int k = 0; k < TILE; k += ROWS) tile[threadIdx.y + k][threadIdx.x] = src[(y + k) * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int k = 0; k < TILE; k += ROWS) dst[(y + k) * n + x] = tile[threadIdx.x][threadIdx.y + k];
}
extern "C" __global__ void transpose32(const float *src, float *dst, int n) { transpose_tile<0>(src, dst, n); }
extern "C" __global__ void transpose1(const float *src, float *dst, int n) { transpose_tile<1>(src, dst, n); }
"""

# case: (kernel, shared wavefronts a warp a round or a tile: stores, loads)
LOOPED = (("lds32", 0, 128), ("lds1", 0, 4), ("rt32", 4, 128), ("rt1", 4, 4), ("lds32_stg", 0, 128),
          ("ldg_rt32", 4, 128))
TRANSPOSES = (("transpose32", 4, 128), ("transpose1", 4, 4))


def _args(xp, name: str, clk):
    out = xp.zeros(BLOCKS * 256, xp.float32)
    r = np.int32(ROUNDS)
    if name == "lds32_stg":
        return (out, xp.zeros(SCRATCH_FLOATS, xp.float32), r, clk)
    if name == "ldg_rt32":
        return (xp.ones(L2_FLOATS, xp.float32), out, r, clk)
    return (out, r, clk)


def _wavefronts(name: str, st: int, ld: int) -> int:
    if name.startswith("transpose"):
        return (N // 32) ** 2 * 8 * (st + ld)
    return BLOCKS * 8 * ROUNDS * (st + ld) + BLOCKS * 8 * 4       # the tile's first writes


def run(out_path: str) -> None:
    cp, props, mod = nvrtc_module(SOURCE)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    rows = []
    for name, st, ld in LOOPED + TRANSPOSES:
        fn = mod.get_function(name)
        transpose = name.startswith("transpose")
        nblocks = (N // 32) ** 2 if transpose else BLOCKS
        clk = cp.zeros(2 * BLOCKS, cp.uint64)
        if transpose:
            args, grid = (cp.ones(N * N, cp.float32), cp.zeros(N * N, cp.float32), cp.int32(N)), (N // 32, N // 32)
        else:
            args, grid = _args(cp, name, clk), (BLOCKS,)
        times = []
        for _ in range(6):
            start.record()
            fn(grid, (32, 8), args)
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
        us = statistics.median(times[1:])
        row = {"case": name, "blocks": nblocks, "us": round(us, 2), "times_us": [round(x, 2) for x in times],
               "shared_wavefronts": _wavefronts(name, st, ld)}
        if not transpose:
            ck = clk.get().reshape(-1, 2).astype(float)
            mhz = float(np.median(ck[:, 0] / ck[:, 1])) * 1e3
            row.update(sm_clock_mhz_median=round(mhz, 1), block_cycles_median=float(np.median(ck[:, 0])))
        row["wavefronts_per_sm_cycle"] = round(row["shared_wavefronts"] / (us * 1.98e3 * props["multiProcessorCount"]), 3)
        rows.append(row)
        print(f"{name:12s} {us:9.2f} us  {row['wavefronts_per_sm_cycle']:.3f} shared wavefronts a cycle an SM (at 1.98 GHz)"
              + (f", a block {row['block_cycles_median']:.0f} cycles at {row['sm_clock_mhz_median']} MHz" if not transpose else ""),
              flush=True)
    prov = gpu_provenance(cp, "python -m validate.shared_mix_probe --out $OUT/shared_mix_<gpu>.json", __doc__,
                          sm_count=props["multiProcessorCount"], rounds=ROUNDS, kernel_source=SOURCE)
    write_probe(out_path, prov, rows)


def predict(preset: str) -> list:
    """gpusim's time for each case (sampled, as `validate compare` runs a launch)."""
    import gpusim                         # here: the GPU side imports nothing of gpusim
    from gpusim.timing import TimingOptions   # here: the GPU side imports nothing of gpusim
    rows = []
    for name, st, ld in LOOPED + TRANSPOSES:
        kernel = gpusim.CudaSource(SOURCE, name)
        if name.startswith("transpose"):
            grid, args = (N // 32, N // 32), (np.ones(N * N, np.float32), np.zeros(N * N, np.float32), np.int32(N))
        else:
            grid, args = (BLOCKS,), _args(np, name, np.zeros(2 * BLOCKS, np.uint64))
        r = gpusim.launch(kernel, grid, (32, 8), args, gpu=preset, timing=TimingOptions(mode="auto"), outputs=False)
        us = r.metrics["gpu__time_duration.sum"] / 1e3
        wf = _wavefronts(name, st, ld)
        rows.append({"case": name, "us": round(us, 2), "shared_wavefronts": wf,
                     "wavefronts_per_sm_cycle": round(wf / (us * 1.98e3 * SMS), 3),
                     "shared_wavefronts_counted": r.metrics.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 0.0)
                     + r.metrics.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", 0.0)})
        print(f"{name:12s} {us:9.2f} us  {rows[-1]['wavefronts_per_sm_cycle']:.3f} shared wavefronts a cycle an SM "
              f"(counted {rows[-1]['shared_wavefronts_counted']:.0f} of {wf})", flush=True)
    return rows


def main(argv=None) -> int:
    return probe_main(__doc__, run, predict, argv)


if __name__ == "__main__":
    raise SystemExit(main())
