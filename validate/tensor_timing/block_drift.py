"""How far apart in time the blocks that share a GEMM's B run: each block's start, middle and end on the GPU
(issue 29; docs/mechanisms_24.md section 43).

Why: a row-major GEMM's blocks of one column of tiles read the same strip of B, one block row apart in the
grid. Whether the L2 fetches that strip once for all of them or once for each depends on how close in time
they touch it. Sampled timing cannot see it (it runs a few SMs, not the blocks that share the strip), so
`sampling/warming.py` must say it from the launch's shape: the blocks of a wave are dealt out together, in
grid order, as slots free; their slots' phases drift apart as block durations vary, so a wave's blocks come
spread over a time that grows wave by wave, and blocks one block row apart in the grid start that spread
times (row / wave) apart. This probe measures it: every block's `%globaltimer` at its start, after half its
tiles and at its end, and its SM, in one launch each of
- `mma_gemm<64, 64, S, 8>` at 4096^3, S = 1 and 2 (programs/cuda_kernels/mma_gemm.cu with the stamps added:
  4,096 blocks, 7 a SM, 4.4 waves on an H100; the compared tensor-set launches; the stamps cost S = 1 registers
  and a block a SM, so it runs again as `cuda_mma_single_r72` compiled with --maxrregcount=72, the program's count), S = 2 at 8192^3 (16,384
  blocks, 17.7 waves), and the program's `wmma_gemm<half, 64, 64, 32, 32, 32, 8>` at both sizes,
- the calibration set's `matmul_tiled` at 4096^3 in CUDA C++ (the program's 16 x 16 f32 tiles, two barriers
  a step: 65,536 blocks, 8 a SM, 62 waves), whose B the H200 reads from DRAM once a block row (16.9 GB).
Per launch `drift_summary` gives, by wave (blocks ranked by start, `wave_blocks` a wave): the spread of the
wave's starts and its durations' variation, both over the median block duration; and for each pair of blocks
one block row apart in one wave (B's sharers), the gap between their middle stamps. Raw stamps are kept
(.npz beside the JSON: the first of the three launches of each, ns from its first start).

    python -m validate.tensor_timing.block_drift --out $OUT/block_drift_h100.json      # GPU machine, seconds
    python -m validate.tensor_timing.block_drift --summary data/measurements/block_drift_h100.json

Needs CuPy (NVRTC). The GPU side imports nothing of gpusim.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from validate.probe_cli import CUDA_CLOCKS, gpu_provenance, write_probe
from validate.tensor_timing.buffering_occupancy import dynamic_for

ROOT = Path(__file__).resolve().parents[2]
CU = ROOT / "programs" / "cuda_kernels" / "mma_gemm.cu"
WMMA_CU = ROOT / "programs" / "cuda_kernels" / "wmma_gemm.cu"
RESIDENCY_US = (5, 10, 20, 40, 80)       # `--fetches`: residency times tried
N = 4096
MAX_BLOCKS = (N // 16) ** 2                # the tiled f32 GEMM's 65,536 blocks; the 8192^3 tensor GEMMs have 16,384
STAMPS = CUDA_CLOCKS + r"""
__device__ unsigned long long g_stamps[%(max_blocks)d * 4];
#define STAMP(k) do { if (threadIdx.x + threadIdx.y == 0) \
    g_stamps[4 * (blockIdx.y * gridDim.x + blockIdx.x) + (k)] = (k) == 3 ? smid_() : gtime(); } while (0)
""" % {"max_blocks": MAX_BLOCKS}
# the program's kernel, stamped: at its start, after half its tiles, after its last tile
MMA_ANCHORS = (("float acc[FM][FN][4] = {};", "float acc[FM][FN][4] = {};\n    STAMP(0); STAMP(3);"),
               ("__syncthreads();                                        // stage s is free",
                "if (t == tiles / 2) STAMP(1);\n        __syncthreads();                                        // stage s is free"),
               ("const int g = lane / 4, q = lane % 4;", "STAMP(2);\n    const int g = lane / 4, q = lane % 4;"))
WMMA_ANCHORS = (("wmma::fill_fragment(acc[i][j], 0.0f);", "wmma::fill_fragment(acc[i][j], 0.0f);\n    STAMP(0); STAMP(3);"),
                ("        __syncthreads();\n    }\n    for (int i = 0; i < FM; i++)",
                 "        if (k0 == K / 2) STAMP(1);\n        __syncthreads();\n    }\n    STAMP(2);\n"
                 "    for (int i = 0; i < FM; i++)"))
WMMA_NAME = "wmma_gemm<half, 64, 64, 32, 32, 32, 8>"
TILED = r"""
extern "C" __global__ void matmul_tiled(const float *a, const float *b, float *c, int m, int n, int k) {
    __shared__ float sa[16][16], sb[16][16];
    const int tx = threadIdx.x, ty = threadIdx.y, col = blockIdx.x * 16 + tx, row = blockIdx.y * 16 + ty;
    const int tiles = (k + 15) / 16;
    float acc = 0.0f;
    STAMP(0); STAMP(3);
    for (int t = 0; t < tiles; t++) {
        int kk = t * 16 + tx;
        sa[ty][tx] = (row < m && kk < k) ? a[row * k + kk] : 0.0f;
        kk = t * 16 + ty;
        sb[ty][tx] = (kk < k && col < n) ? b[kk * n + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < 16; j++)
            acc += sa[ty][j] * sb[j][tx];
        if (t == tiles / 2) STAMP(1);
        __syncthreads();
    }
    STAMP(2);
    if (row < m && col < n)
        c[row * n + col] = acc;
}
"""


def _stamp(path: Path, anchors) -> str:
    text = path.read_text()
    for old, new in anchors:
        if text.count(old) != 1:
            raise ValueError(f"{path.name}: anchor {old!r} occurs {text.count(old)} times, not once")
        text = text.replace(old, new)
    return text


def stamped_source() -> str:
    """mma_gemm.cu and wmma_gemm.cu with the stamps added (each anchor must occur once), and the tiled
    f32 kernel, in one module."""
    head, sep, rest = _stamp(CU, MMA_ANCHORS).partition("template <int BM")
    return head + STAMPS + sep + rest + _stamp(WMMA_CU, WMMA_ANCHORS) + TILED


def drift_summary(stamps: np.ndarray, grid_x: int, wave_blocks: int) -> dict:
    """From (blocks, 4) stamps [start, middle, end, SM] in block order: per wave (blocks ranked by start,
    `wave_blocks` a wave), the spread of starts and the durations' coefficient of variation, over the
    median duration T; and over pairs of blocks `grid_x` apart in the grid (one block row: a GEMM's B
    sharers) that fall in one wave, the gap of their middle stamps over T (median, 90th percentile, share
    under 2, 5 and 10% of T)."""
    start, mid, end = (stamps[:, i].astype(np.float64) for i in range(3))
    dur = end - start
    t_block = float(np.median(dur))
    wave = np.empty(len(start), dtype=np.int64)
    wave[np.argsort(start, kind="stable")] = np.arange(len(start)) // wave_blocks
    a, b = np.arange(len(start) - grid_x), np.arange(grid_x, len(start))
    same = wave[a] == wave[b]
    gap = np.abs(mid[b] - mid[a]) / t_block
    rows = []
    for j in range(int(wave.max()) + 1):
        inw = wave == j
        pairs = same & (wave[a] == j)
        g = gap[pairs]
        rows.append({"wave": j, "blocks": int(inw.sum()),
                     "start_spread_std": round(float(np.std(start[inw]) / t_block), 5),
                     "start_range": round(float(np.ptp(start[inw]) / t_block), 5),
                     "duration_cv": round(float(np.std(dur[inw]) / np.mean(dur[inw])), 5),
                     "sharer_pairs": int(pairs.sum()),
                     **({"sharer_gap_median": round(float(np.median(g)), 5),
                         "sharer_gap_p90": round(float(np.percentile(g, 90)), 5),
                         **{f"sharer_gap_under_{p}pct": round(float(np.mean(g < p / 100)), 4) for p in (2, 5, 10)}}
                        if g.size else {})})
    return {"blocks": len(start), "grid_x": grid_x, "wave_blocks": wave_blocks,
            "block_median_us": round(t_block / 1e3, 3), "kernel_us": round(float((end.max() - start.min()) / 1e3), 3),
            "duration_cv": round(float(np.std(dur) / np.mean(dur)), 5),
            "sms_used": int(len(np.unique(stamps[:, 3]))), "waves": rows}


def touch_times(stamps: np.ndarray, f: float) -> np.ndarray:
    """Each block's time at a share `f` of its loop, between its stamps (start, middle, end)."""
    start, mid, end = (stamps[:, i].astype(np.float64) for i in range(3))
    return np.where(f <= 0.5, start + 2 * f * (mid - start), mid + (2 * f - 1) * (end - mid))


def sharer_fetches(stamps: np.ndarray, grid_x: int, window_ns: float) -> float:
    """How many times a line of B would come from DRAM, per line, if the L2 kept it `window_ns` after
    each touch: the blocks of one grid column (`grid_x` apart) touch it at the same share of their loops
    (1/6, 1/2 and 5/6 of them, from the stamps); a touch finds it when another's came at most that long
    before, and fetches it otherwise."""
    col = np.arange(len(stamps)) % grid_x
    fetched = 0
    for f in (1 / 6, 0.5, 5 / 6):
        t = touch_times(stamps, f)
        order = np.lexsort((t, col))
        c, tt = col[order], t[order]
        first = np.r_[True, c[1:] != c[:-1]]
        fetched += int(np.sum(first | (np.r_[np.inf, np.diff(tt)] > window_ns)))
    return fetched / 3 / grid_x


def sm_speeds(stamps: np.ndarray) -> dict[int, float]:
    """Per SM (stamp 3), its blocks' mean duration over all blocks' mean."""
    d, sm = (stamps[:, 2] - stamps[:, 0]).astype(np.float64), stamps[:, 3]
    return {int(k): float(d[sm == k].mean() / d.mean()) for k in np.unique(sm)}


def sm_rates(stamps: np.ndarray, blocks_per_sm: int, fast) -> tuple[float, float]:
    """Blocks a microsecond an SM runs (blocks a SM over their mean duration) on the SMs of `fast` and on the
    others."""
    d, sm = (stamps[:, 2] - stamps[:, 0]).astype(np.float64) / 1e3, stamps[:, 3]
    on = np.isin(sm, list(fast))
    return float(blocks_per_sm / d[on].mean()), float(blocks_per_sm / d[~on].mean())


def run(out: str) -> None:
    import cupy as cp                    # here, not at the top: only measuring needs a GPU
    from validate.tensor_programs.record import include_dirs   # likewise: mma.h's crt/mma.h (wmma)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    sms = int(props["multiProcessorCount"])
    names = ["mma_gemm<64, 64, 1, 8>", "mma_gemm<64, 64, 2, 8>", WMMA_NAME, "matmul_tiled"]
    options = (f"--gpu-architecture=sm_{props['major']}{props['minor']}", "-std=c++17",
               *(f"-I{d}" for d in include_dirs()))
    mod = cp.RawModule(code=stamped_source(), backend="nvrtc", name_expressions=names[:3], options=options)
    # the single-buffered kernel held to the program's 72 registers: the stamps cost it a block a SM otherwise
    mod72 = cp.RawModule(code=stamped_source(), backend="nvrtc", name_expressions=names[:1],
                         options=options + ("--maxrregcount=72",))
    rng = cp.random.default_rng(0)
    smem_per_sm = int(props["sharedMemPerMultiprocessor"])
    launches = [("cuda_mma_single/n4096", names[0], 4096, 64, (128, 1), "f16"),
                ("cuda_mma_single_r72/n4096", names[0], 4096, 64, (128, 1), "f16"),
                ("cuda_mma_double/n4096", names[1], 4096, 64, (128, 1), "f16"),
                ("cuda_wmma_f16/n4096", names[2], 4096, 64, (128, 1), "f16"),
                ("cuda_mma_double/n8192", names[1], 8192, 64, (128, 1), "f16"),
                ("cuda_wmma_f16/n8192", names[2], 8192, 64, (128, 1), "f16"),
                ("matmul_tiled/large", names[3], 4096, 16, (16, 16), "f32")]
    # and both mma kernels padded (dynamic shared memory, as buffering_occupancy) to 4 and 2 blocks a SM
    launches += [(f"cuda_mma_{kind}_b{blocks}/n4096", names[stages - 1], 4096, 64, (128, 1), "f16")
                 for kind, stages in (("single_r72", 1), ("double", 2)) for blocks in (4, 2)]
    inputs = {}
    rows, raw = [], {}
    for label, name, n, tile, block, dtype in launches:
        if (n, dtype) not in inputs:
            inputs.clear()                                   # one size's inputs at a time
            a = rng.standard_normal((n, n), dtype=cp.float32).astype(cp.float16)
            b = rng.standard_normal((n, n), dtype=cp.float32).astype(cp.float16)
            inputs[n, dtype] = (a, b) if dtype == "f16" else (a.astype(cp.float32), b.astype(cp.float32))
        a, b = inputs[n, dtype]
        c = cp.zeros((n, n), dtype=cp.float32)
        grid = (n // tile, n // tile)
        module = mod72 if "_r72" in label else mod
        fn = module.get_function(name)
        stamps_ptr = module.get_global("g_stamps")
        args = (a, b, c, cp.int32(n), cp.int32(n), cp.int32(n))
        padded = label.split("/")[0].rpartition("_b")[2]
        dyn = dynamic_for(int(padded), 2 if "double" in label else 1, smem_per_sm) if padded.isdigit() else 0
        fn.max_dynamic_shared_size_bytes = dyn
        per = int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, block[0] * block[1], dyn))
        nblocks = grid[0] * grid[1]
        for rep in range(3):
            fn(grid, block, args, shared_mem=dyn)        # a warm-up; then the stamped launch
            cp.cuda.Device().synchronize()
            host = np.zeros(MAX_BLOCKS * 4, dtype=np.uint64)
            stamps_ptr.copy_from_host(host.ctypes.data, host.nbytes)
            fn(grid, block, args, shared_mem=dyn)
            cp.cuda.Device().synchronize()
            stamps_ptr.copy_to_host(host.ctypes.data, host.nbytes)
            s = host.reshape(-1, 4)[:nblocks].astype(np.int64)
            s[:, :3] -= s[:, 0].min()
            summary = drift_summary(s, grid[0], per * sms)
            rows.append({"launch": label, "repeat": rep, "blocks_per_sm": per, "dynamic_shared_bytes": dyn, **summary})
            if rep == 0:                                 # the raw stamps of the first launch
                raw[label.replace("/", "__")] = s.astype(np.uint32)
            print(label, rep, json.dumps({k: v for k, v in summary.items() if k != "waves"}), flush=True)
            for w in summary["waves"][:6]:
                print("   ", json.dumps(w), flush=True)
    np.savez_compressed(Path(out).with_suffix(".npz"), **raw)
    prov = gpu_provenance(cp, "python -m validate.tensor_timing.block_drift --out " + out, __doc__, sm_count=sms,
                          kernel_source="programs/cuda_kernels/{mma,wmma}_gemm.cu + validate/tensor_timing/block_drift.py",
                          raw_stamps=Path(out).with_suffix(".npz").name)
    print(write_probe(out, prov, rows))


def print_crossbar(path: str) -> None:
    """A crossbar_probe run's SMs that pull fast (under 0.9 of the mean cycles), per way of reading and warps."""
    for pull in json.loads(Path(path).read_text())["runs"]:
        if pull["grid"] > 1:                       # every SM pulling: each warp's cycles, by its SM
            cycles = np.asarray(pull["cycles"], dtype=np.float64)
            smids = np.asarray(pull["smids"])
            per = {int(k): float(cycles[smids == k].mean()) for k in np.unique(smids)}
            mean = np.mean(list(per.values()))
            quick = sorted(k for k, v in per.items() if v < 0.9 * mean)
            print(f"{pull['run']:22s} SMs under 0.9 of the mean cycles: {len(quick):3d} {quick}")


def print_fetches(path: str) -> None:
    """A committed run's B fetches per line (`sharer_fetches`) at each of `RESIDENCY_US`."""
    doc = json.loads(Path(path).read_text())
    raw = np.load(Path(path).with_suffix(".npz"))
    print("B fetched from DRAM, per line, if the L2 keeps a line this long after a touch:")
    print(f"{'launch':24s} {'blocks/col':>10s} " + " ".join(f"{w:>7.0f}us" for w in RESIDENCY_US))
    for row in doc["rows"]:
        if row["repeat"] == 0:
            stamps = raw[row["launch"].replace("/", "__")].astype(np.int64)
            print(f"{row['launch']:24s} {row['blocks'] // row['grid_x']:10d} " + " ".join(
                f"{sharer_fetches(stamps, row['grid_x'], w * 1e3):9.1f}" for w in RESIDENCY_US))


def print_summary(path: str) -> None:
    """A committed run per launch and wave; per launch, its fast SMs, and for the mma kernels the rates of the
    double-buffered 4096^3 launch's fast SMs and of the others (`sm_rates`)."""
    raw = np.load(Path(path).with_suffix(".npz"))
    key = "cuda_mma_double__n4096"
    fast = [k for k, v in sm_speeds(raw[key].astype(np.int64)).items() if v < 0.85] if key in raw else []
    for row in json.loads(Path(path).read_text())["rows"]:
        print(row["launch"], row["repeat"], "CV", row["duration_cv"], "block", row["block_median_us"], "us")
        if row["repeat"] == 0:
            stamps = raw[row["launch"].replace("/", "__")].astype(np.int64)
            speeds = sm_speeds(stamps)
            quick = sorted(k for k, v in speeds.items() if v < 0.85)
            rest = [v for k, v in speeds.items() if v >= 0.85]
            print(f"    SMs whose blocks take under 0.85 of the mean: {len(quick)} {quick}"
                  + (f" (their mean {np.mean([speeds[k] for k in quick]):.3f}, the others' {np.mean(rest):.3f})"
                     if quick else ""))
            if fast and row["launch"].startswith("cuda_mma"):
                f, o = sm_rates(stamps, row["blocks_per_sm"], fast)
                print(f"    blocks a us an SM: {f:.4f} on the double-buffered 4096^3 launch's fast SMs, {o:.4f} on the others")
        for w in row["waves"]:
            print("   ", json.dumps(w))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="the JSON to write (on a GPU machine)")
    ap.add_argument("--summary", metavar="FILE", help="print a committed run's per-wave figures")
    ap.add_argument("--fetches", metavar="FILE", help="a committed run: B's fetches by the L2's residency time")
    ap.add_argument("--crossbar", metavar="FILE", help="a crossbar_probe run: its SMs that pull fast, per way and warps")
    a = ap.parse_args(argv)
    if a.out:
        run(a.out)
    elif a.crossbar:
        print_crossbar(a.crossbar)
    elif a.fetches:
        print_fetches(a.fetches)
    elif a.summary:
        print_summary(a.summary)
    else:
        ap.error("--out, --summary, --fetches or --crossbar")
    return 0


if __name__ == "__main__":
    sys.exit(main())
