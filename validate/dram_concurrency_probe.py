"""How a TMA copy's DRAM latency grows with the copies in flight from other SMs, and whether where
the copies land (their addresses' DRAM channels) or their number decides it (issue 29; docs/
mechanisms_24.md section 28).

The H100's TMA latency probe (data/measurements/tma_latency_h100_run3.json) found an 8 KB bulk copy
from DRAM taking 907 cycles from one block, 1145 from 33 and 1561 from 132 at once (one block a SM,
each block's copies one after another), where gpusim says 848 / 976 / 1004: at 132 blocks the GPU
moves 1.4 TB/s, gpusim 2.1. Its blocks each read their own band of the buffer, the bands 64 KB
aligned, so every block's r-th copy starts at the same address modulo 64 KB. This probe moves
the same copies to other places: if the GPU's latency falls when the copies spread over other
channels, its address hash (not gpusim's) is what the 64-KB-aligned copies met; if it does not,
something that grows with the bytes in flight is.

One thread a block (one block a SM, `blocks` of them) issues `REPS` bulk copies
(`cp.async.bulk`, `bytes` each) one after another into shared memory, each waited on through an
mbarrier, and records each copy's %clock64 cycles; the copies' offsets come from a table the
block reads into shared memory first. Placements (`offsets`), in a 256 MB buffer the L2 does not
hold (a 256 MB memset of another buffer before each launch): `band64k`, block b's r-th copy at
b * band + r * 64 KB (band: 256 MB / 132, 64 KB aligned; the run3 probe's); `band_skew`, the same
moved by (37 b mod 256) * 256 B; `interleaved`, copy (r * blocks + b) of the buffer's `bytes`-sized
chunks (each round one contiguous stretch); `random`, distinct random chunks (seed 0). Per case:
the median and mean of every block's copies after its first, and the launch's time (CUDA events)
with the bytes it moved.

    python -m validate.dram_concurrency_probe --out $OUT/dram_concurrency_h100.json   # GPU machine, seconds
    python -m validate.dram_concurrency_probe --predict h100 [--json FILE]            # gpusim, same launches

Needs CuPy (NVRTC, sm_90). The GPU side imports nothing of gpusim.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from validate.datadir import DATA_DIR
from validate.probe_cli import gpu_provenance, probe_main, write_probe

REPS = 24
MEASURED = "dram_concurrency_{gpu}_run3.json"   # the runs of this source (the earlier runs' kernels differ)
BUFFER_BYTES = 512 << 20
MAX_BLOCKS = 264
PLACEMENTS = ("band64k", "band_skew", "interleaved", "random")
# (placement, blocks, bytes a copy, parts: the copy as that many bulk copies on one mbarrier,
#  path: 'tma' bulk copies or 'ldg' one warp's ld.global.cg of 16 B a lane)
CASES = ([(p, b, 8192, 1, "tma") for p in PLACEMENTS for b in (1, 8, 33, 66, 132)]
         + [("band64k", 132, n, 1, "tma") for n in (1024, 2048, 4096, 16384, 32768)]
         + [("band64k", b, n, 1, "tma") for b, n in ((8, 32768), (16, 16384), (66, 4096))]   # and 132 x 2 KB above: 270 KB in flight
         + [("band64k", b, 8192, parts, "tma") for b in (1, 132) for parts in (2, 8)]
         + [("band64k", b, 8192, 1, "ldg") for b in (1, 33, 132)]
         + [("band64k", 264, 8192, 1, "tma")])

def _tma_latency_helpers() -> str:
    """The mbarrier helpers of validate/tensor_timing/tma_latency.cu (u64, u32, clk, saddr, bar_init,
    bar_expect, bar_wait: its `// helpers:` section), which this probe's kernels share."""
    text = (Path(__file__).resolve().parent / "tensor_timing" / "tma_latency.cu").read_text()
    return text.split("// helpers: begin")[1].split("// helpers: end")[0].split("\n", 1)[1]


# the helpers, and a bulk copy of `bytes` from global `g` to shared `dst` completing `bar` by its bytes
BULK_HELPERS = _tma_latency_helpers() + r"""
__device__ __forceinline__ void bulk_copy(void *dst, const char *g, u32 bytes, u64 *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(saddr(dst)), "l"(g), "r"(bytes), "r"(saddr(bar)) : "memory");
}
"""

SOURCE = BULK_HELPERS + r"""
#define LDG_LOADS 16

__device__ __forceinline__ u64 clk_after(u32 dep) {
    u64 t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) : "r"(dep) : "memory"); return t;
}

// block b: `reps` copies of `bytes` from src + offsets[b * reps + r], one after another, each
// waited on (as PARTS bulk copies of bytes / PARTS on one mbarrier: a compile-time count, no loop
// around the copies); cycles[b * reps + r] its %clock64 cycles
template <int PARTS>
__device__ void copy_loop(const char *src, const u64 *offsets, u32 bytes, int reps, u64 *cycles) {
    __shared__ __align__(128) char buf[32768];
    __shared__ __align__(8) u64 bar;
    __shared__ u64 off[32];
    if (threadIdx.x != 0) return;
    for (int r = 0; r < reps; r++) off[r] = offsets[blockIdx.x * reps + r];
    bar_init(&bar);
    u32 phase = 0, part = bytes / PARTS;
    for (int r = 0; r < reps; r++) {
        const char *g = src + off[r];
        u64 t0 = clk();
        bar_expect(&bar, bytes);
        #pragma unroll
        for (int p = 0; p < PARTS; p++) bulk_copy(buf + p * part, g + p * part, part, &bar);
        bar_wait(&bar, phase);
        u64 t1 = clk();
        phase ^= 1;
        cycles[blockIdx.x * reps + r] = t1 - t0;
    }
}
extern "C" __global__ void copies1(const char *s, const u64 *o, u32 n, int reps, u64 *c) { copy_loop<1>(s, o, n, reps, c); }
extern "C" __global__ void copies2(const char *s, const u64 *o, u32 n, int reps, u64 *c) { copy_loop<2>(s, o, n, reps, c); }
extern "C" __global__ void copies8(const char *s, const u64 *o, u32 n, int reps, u64 *c) { copy_loop<8>(s, o, n, reps, c); }

// 8 KB read by one warp's ld.global.cg of 16 B a lane (LDG_LOADS = 16 in flight a lane; `bytes`
// unused),
// timed by lane 0 from before the first load to after every lane's last value is in
extern "C" __global__ void loads(const char *src, const u64 *offsets, u32 bytes, int reps, u64 *cycles) {
    __shared__ u64 off[32];
    for (int r = threadIdx.x; r < reps; r += 32) off[r] = offsets[blockIdx.x * reps + r];
    __syncwarp();
    u32 acc = 0;
    for (int r = 0; r < reps; r++) {
        const int4 *g = (const int4 *)(src + off[r]);
        u64 t0 = clk();
        int v[LDG_LOADS][4];
        #pragma unroll
        for (int k = 0; k < LDG_LOADS; k++)     // every load issued before any value is used
            asm volatile("ld.global.cg.v4.s32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(v[k][0]), "=r"(v[k][1]), "=r"(v[k][2]), "=r"(v[k][3]) : "l"(g + k * 32 + threadIdx.x));
        u32 s = 0;
        #pragma unroll
        for (int k = 0; k < LDG_LOADS; k++) s += v[k][0] ^ v[k][1] ^ v[k][2] ^ v[k][3];
        for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        u64 t1 = clk_after(s);
        acc += s;
        if (threadIdx.x == 0) cycles[blockIdx.x * reps + r] = t1 - t0;
    }
    if (acc == 0x7fffffffu) cycles[0] = acc;   // keeps the sums (never true: the buffer holds ones)
}
"""


def offsets(placement: str, blocks: int, nbytes: int, reps: int = REPS) -> np.ndarray:
    """Byte offsets (uint64, blocks x reps) of each block's copies (module docstring)."""
    b = np.arange(blocks, dtype=np.uint64)[:, None]
    r = np.arange(reps, dtype=np.uint64)[None, :]
    band = np.uint64((BUFFER_BYTES // MAX_BLOCKS) & ~0xFFFF)
    if placement == "band64k":
        return b * band + r * np.uint64(65536)
    if placement == "band_skew":
        return b * band + r * np.uint64(65536) + (b * np.uint64(37) % np.uint64(256)) * np.uint64(256)
    if placement == "interleaved":
        return (r * np.uint64(blocks) + b) * np.uint64(nbytes)
    if placement == "random":
        chunks = np.random.default_rng(0).choice(BUFFER_BYTES // nbytes, size=blocks * reps, replace=False)
        return (chunks.astype(np.uint64) * np.uint64(nbytes)).reshape(blocks, reps)
    raise ValueError(f"unknown placement {placement!r}")


def _summary(cyc: np.ndarray) -> dict:
    """Per-copy cycles (blocks x reps) -> the median and mean of every block's copies after its first."""
    rest = cyc[:, 1:].ravel().astype(float)
    return {"median_cycles": float(np.median(rest)), "mean_cycles": round(float(rest.mean()), 1),
            "p10_cycles": float(np.percentile(rest, 10)), "p90_cycles": float(np.percentile(rest, 90))}


def _kernel_name(parts: int, path: str) -> str:
    return f"copies{parts}" if path == "tma" else "loads"


def _label(case: tuple) -> str:
    placement, blocks, nbytes, parts, path = case
    return f"{path} {placement} {blocks} blocks {nbytes} B" + (f" in {parts} copies" if parts > 1 else "")


def run(out_path: str) -> None:
    import cupy as cp                    # here, not at the top: only measuring needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    mod = cp.RawModule(code=SOURCE, options=(f"--gpu-architecture=sm_{props['major']}{props['minor']}a",),
                       backend="nvrtc")
    src = cp.ones(BUFFER_BYTES, dtype=cp.uint8)
    flush = cp.empty(256 << 20, dtype=cp.uint8)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    rows = []
    for case in CASES:
        placement, blocks, nbytes, parts, path = case
        fn = mod.get_function(_kernel_name(parts, path))
        off = cp.asarray(offsets(placement, blocks, nbytes))
        cyc = cp.zeros(blocks * REPS, dtype=cp.uint64)
        runs = []
        for _ in range(3):                       # three launches, each from an emptied L2
            flush.fill(2)
            start.record()
            fn((blocks,), (32,), (src, off, cp.uint32(nbytes), cp.int32(REPS), cyc))
            stop.record()
            stop.synchronize()
            ms = cp.cuda.get_elapsed_time(start, stop)
            runs.append({"launch_us": round(ms * 1e3, 2), **_summary(cyc.get().reshape(blocks, REPS))})
        last = runs[-1]
        row = {"placement": placement, "blocks": blocks, "bytes": nbytes, "parts": parts, "path": path, **last,
               "GBps": round(blocks * REPS * nbytes / (last["launch_us"] * 1e3), 1), "runs": runs}
        if (placement, blocks, nbytes, parts, path) == ("band64k", 132, 8192, 1, "tma"):
            row["cycles"] = cyc.get().reshape(blocks, REPS).tolist()      # every copy of the last launch
        rows.append(row)
        print(f"{_label(case):45s} median {last['median_cycles']:7.0f} mean {last['mean_cycles']:7.0f} cycles, "
              f"{row['GBps']:7.1f} GB/s", flush=True)
    prov = gpu_provenance(cp, "python -m validate.dram_concurrency_probe --out $OUT/dram_concurrency_<gpu>.json",
                          __doc__, sm_count=props["multiProcessorCount"], reps=REPS, buffer_bytes=BUFFER_BYTES,
                          kernel_source=SOURCE)
    write_probe(out_path, prov, rows)


def predict(preset: str) -> list:
    """gpusim's cycles a copy for every case (full simulation): the launch's cycles with REPS copies
    less with 8, over the difference (the first copies and the launch cancel): in steady state a
    block's copies follow one another, so this is their mean time, beside the measured `mean_cycles`
    of `MEASURED` for the preset's GPU where it is committed."""
    import gpusim                         # here: the GPU side imports nothing of gpusim
    from gpusim.timing import TimingOptions   # here: the GPU side imports nothing of gpusim
    kernels = {name: gpusim.CudaSource(SOURCE, name) for name in {_kernel_name(c[3], c[4]) for c in CASES}}
    src = np.ones(BUFFER_BYTES, dtype=np.uint8)
    data = DATA_DIR / MEASURED.format(gpu=preset.split("-")[0])
    measured = {(r["placement"], r["blocks"], r["bytes"], r["parts"], r["path"]): r
                for r in json.loads(data.read_text())["rows"]} if data.exists() else {}
    rows = []
    for case in CASES:
        placement, blocks, nbytes, parts, path = case
        cyc = []
        for reps in (8, REPS):
            off = np.ascontiguousarray(offsets(placement, blocks, nbytes, REPS)[:, :reps])
            r = gpusim.launch(kernels[_kernel_name(parts, path)], blocks, 32, (src, off, np.uint32(nbytes), np.int32(reps),
                                                          np.zeros(blocks * reps, np.uint64)),
                              gpu=preset, timing=True, timing_options=TimingOptions(mode="full"), outputs=False)
            cyc.append(r.metrics["sm__cycles_elapsed.max"])
        per = (cyc[1] - cyc[0]) / (REPS - 8)
        row = {"placement": placement, "blocks": blocks, "bytes": nbytes, "parts": parts, "path": path,
               "cycles_per_copy": round(per, 1)}
        m = measured.get(case)
        if m:
            row.update(measured_mean_cycles=m["mean_cycles"], measured_median_cycles=m["median_cycles"],
                       error_pct=round(100.0 * (per / m["mean_cycles"] - 1.0), 1))
        rows.append(row)
        print(f"{_label(case):45s} {per:7.0f} cycles a copy" + (f", measured {m['mean_cycles']:7.0f}" if m else ""),
              flush=True)
    return rows


def main(argv=None) -> int:
    return probe_main(__doc__, run, predict, argv)


if __name__ == "__main__":
    raise SystemExit(main())
