"""What a 2-D block shape costs a copy: the same bytes moved by blocks of 256 x 1 to 8 x 32 threads (issue 24)

Why: held-out `matrix_copy2d` (4096 x 8192 float32, one word a thread, 131,072 blocks of 256 threads) is
predicted 18% (32 x 8 blocks) and 24% (16 x 16) fast on the H200, and the 2-D stencils of the same set 17-23%
fast, with their DRAM bytes, L2 sectors and instructions matched: the GPU moves them at about 2.1 TB/s of
DRAM traffic where its streaming copy reaches 2.9 and gpusim gives both about the streaming rate. Three
readings differ in what they predict: the DRAM (a block's 16 rows, 32 KiB apart, land on other banks or rows
than a 1-KiB run does), the block's life (a block of one load and one store a thread is as long as its
load's latency, so the time is latency over resident warps, and the 2-D index arithmetic and the block's
start and end add to it), or the L2 (a line's two halves written by two blocks).

The probe: one float32 a thread, `out[y * pitch + x] = in[y * pitch + x]` over 4096 rows of 8192 words,
with block shapes 256 x 1 (a block a 1-KiB run, the streaming copy's pattern) to 8 x 32, the row pitch
dense (8192 words) or 32 words longer; the same shapes reading only (a sum kept in a register, stored
never) or writing only; and a grid-stride copy of the same bytes with every SM full of warps (the streaming
peer). The `stamped` cases time each block's warp 0 by its own SM's clock: at its start, when its load's
value is back, and after its store, with `%smid` and `%globaltimer` at start (a block's gap from the last
on its SM, the warp's load latency). Timed with CUDA events, the median of `REPEATS` back-to-back launches
after two warm-ups; the stamps are the first launch after the warm-ups.

    python -m validate.tile_copy_probe --out $OUT/tile_copy_h200.json        # GPU machine, seconds
    python -m validate.tile_copy_probe --predict h200 --json benchmarks/results/tile_copy_check_h200.json
"""
from __future__ import annotations

from validate.probe_cli import CUDA_CLOCKS, event_times_us, gpu_provenance, nvrtc_module, probe_main, write_probe

ROWS, COLS = 4096, 8192
REPEATS = 7
SHAPES = ((256, 1), (128, 2), (64, 4), (32, 8), (16, 16), (8, 32))
PAD = 32                                  # words: the padded pitch
STRIDE_BLOCKS = 132 * 8                   # the grid-stride copy: 8 blocks of 256 an SM on a 132-SM Hopper

SOURCE = CUDA_CLOCKS + r"""

extern "C" __global__ void copy2d(const float *in, float *out, int pitch) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    size_t i = (size_t)y * pitch + x;
    out[i] = in[i];
}

extern "C" __global__ void read2d(const float *in, float *out, int pitch) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    float v = in[(size_t)y * pitch + x];
    if (v == -1.0f) out[0] = v;            // never: the inputs are >= 0
}

extern "C" __global__ void write2d(const float *in, float *out, int pitch) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    size_t i = (size_t)y * pitch + x;
    out[i] = (float)x;
}

extern "C" __global__ void copy_stride(const float *in, float *out, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        out[i] = in[i];
}

// warp 0 lane 0 of each block: clock at start, when its load is back, after its store (if `write`: a copy, else
// a read); SM; globaltimer at start
extern "C" __global__ void copy2d_stamped(const float *in, float *out, int pitch, unsigned long long *st, int write) {
    unsigned long long c0 = clock64(), g0 = gtime();
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    size_t i = (size_t)y * pitch + x;
    float v = in[i];
    if (v == -1.0f) out[1] = 0.0f;         // never: makes the clock below wait for the load
    unsigned long long c1 = clock64();
    if (write) out[i] = v;
    unsigned long long c2 = clock64();
    if (threadIdx.x + threadIdx.y == 0) {
        size_t b = (size_t)blockIdx.y * gridDim.x + blockIdx.x;
        st[5 * b] = c0; st[5 * b + 1] = c1; st[5 * b + 2] = c2; st[5 * b + 3] = smid_(); st[5 * b + 4] = g0;
    }
}
"""


def cases() -> list[dict]:
    """Every launch of the probe: kernel, block shape, row pitch in words."""
    out = [{"kernel": "copy2d", "bx": bx, "by": by, "pitch": COLS} for bx, by in SHAPES]
    out += [{"kernel": "copy2d", "bx": bx, "by": by, "pitch": COLS + PAD} for bx, by in ((256, 1), (32, 8), (16, 16))]
    out += [{"kernel": k, "bx": bx, "by": by, "pitch": COLS} for k in ("read2d", "write2d")
            for bx, by in ((256, 1), (32, 8), (16, 16))]
    out += [{"kernel": "copy_stride", "bx": 256, "by": 1, "pitch": COLS}]
    out += [{"kernel": "copy2d_stamped", "bx": bx, "by": by, "pitch": COLS, "write": w} for w in (1, 0)
            for bx, by in ((256, 1), (16, 16))]
    return out


def launch_args(case: dict, np, a, b, stamps):
    """(grid, block, args) of a case on arrays a, b (and the stamps' array for `copy2d_stamped`)."""
    bx, by = case["bx"], case["by"]
    if case["kernel"] == "copy_stride":
        return (STRIDE_BLOCKS,), (256,), (a, b, np.int64(ROWS * COLS))
    grid = (COLS // bx, ROWS // by)
    args = (a, b, np.int32(case["pitch"]))
    if case["kernel"] == "copy2d_stamped":
        args += (stamps, np.int32(case["write"]))
    return grid, (bx, by), args


def stamp_summary(st, np) -> dict:
    """A stamped launch's blocks: load latency and store issue (SM cycles, warp 0), a block's gap from the
    previous start on its SM (cycles, by the clock), the span of starts (ns)."""
    st = np.asarray(st, dtype=np.int64).reshape(-1, 5)
    lat, store = st[:, 1] - st[:, 0], st[:, 2] - st[:, 1]
    gaps = []
    for s in np.unique(st[:, 3]):
        c0 = np.sort(st[st[:, 3] == s, 0])
        gaps.append(np.diff(c0))
    gaps = np.concatenate(gaps)
    q = lambda v: {"mean": float(v.mean()), "p10": float(np.percentile(v, 10)), "p50": float(np.median(v)),
                   "p90": float(np.percentile(v, 90))}
    return {"load_cycles": q(lat), "store_issue_cycles": q(store), "start_gap_cycles": q(gaps),
            "blocks_per_sm_mean": float(len(st) / len(np.unique(st[:, 3]))),
            "start_span_ns": float(st[:, 4].max() - st[:, 4].min())}


def run(out_path: str):
    import numpy as np                   # here: numpy on the GPU machine, as CuPy
    cp, props, mod = nvrtc_module(SOURCE)
    n = ROWS * (COLS + PAD)
    a = cp.arange(n, dtype=cp.float32) % 1024
    b = cp.zeros(n, cp.float32)
    stamps = cp.zeros(5 * (ROWS * COLS // 256), cp.uint64)
    rows = []
    for case in cases():
        fn = mod.get_function(case["kernel"])
        grid, block, args = launch_args(case, np, a, b, stamps)
        times = event_times_us(cp, lambda f=fn, g=grid, k=block, x=args: f(g, k, x), REPEATS)
        row = {**case, "grid": list(grid), "us": sorted(times)[len(times) // 2], "us_all": times}
        if case["kernel"] == "copy2d_stamped":
            stamps.fill(0)
            fn(grid, block, args)
            cp.cuda.Device().synchronize()
            row["stamps"] = stamp_summary(stamps.get(), np)
        if case["kernel"] == "copy_stride":
            row["copied"] = bool((b[:ROWS * COLS] == a[:ROWS * COLS]).all())
        elif case["kernel"] == "copy2d" or case.get("write"):
            p = case["pitch"]
            row["copied"] = bool((b[:ROWS * p].reshape(ROWS, p)[:, :COLS] == a[:ROWS * p].reshape(ROWS, p)[:, :COLS]).all())
        b.fill(0)
        rows.append(row)
        _print(row)
    prov = gpu_provenance(cp, "python -m validate.tile_copy_probe --out $OUT/tile_copy_<gpu>.json", __doc__,
                          sms=props["multiProcessorCount"], rows=ROWS, cols=COLS, repeats=REPEATS,
                          clock_khz=props["clockRate"])
    return write_probe(out_path, prov, rows)


def _print(r: dict) -> None:
    moved = 2 * ROWS * COLS * 4 if r["kernel"] in ("copy2d", "copy_stride") or r.get("write") else ROWS * COLS * 4
    extra = ""
    if "stamps" in r:
        s = r["stamps"]
        extra = (f"  load {s['load_cycles']['p50']:.0f} cyc (p90 {s['load_cycles']['p90']:.0f})"
                 f"  gap {s['start_gap_cycles']['p50']:.0f} cyc")
    name = r["kernel"] + ("" if "write" not in r else " copy" if r["write"] else " read")
    print(f"{name:20s} {r['bx']:3d}x{r['by']:<3d} pitch {r['pitch']}: {r['us']:8.1f} us "
          f"{moved / r['us'] / 1e6:5.2f} TB/s{extra}")


def predict(gpu: str) -> list[dict]:
    """gpusim's time for each unstamped case (sampled timing, as `gpusim.launch` does by default)."""
    import numpy as np                                 # here: the GPU machine's side runs without gpusim's dependencies
    import gpusim                                      # here: as numpy above
    from gpusim.specs.overrides import resolve         # here: as numpy above
    spec = resolve(gpu)
    n = ROWS * (COLS + PAD)
    a = (np.arange(n) % 1024).astype(np.float32)
    b = np.zeros(n, np.float32)
    rows = []
    for case in cases():
        if case["kernel"] == "copy2d_stamped":
            continue
        grid, block, args = launch_args(case, np, a, b, None)
        m = gpusim.launch(gpusim.CudaSource(SOURCE, case["kernel"]), grid, block, args, gpu=spec, timing=True,
                          outputs=False).metrics
        row = {**case, "grid": list(grid), "us": m["gpu__time_duration.sum"] / 1e3,
               "dram_read_bytes": m.get("dram__bytes_read.sum"), "dram_write_bytes": m.get("dram__bytes_write.sum"),
               "warps_active_pct": m.get("sm__warps_active.avg.pct_of_peak_sustained_active"),
               "timing_mode": m.get("timing__mode")}
        rows.append(row)
        _print(row)
    return rows


def main(argv=None) -> int:
    return probe_main(__doc__, run, predict, argv)


if __name__ == "__main__":
    raise SystemExit(main())
