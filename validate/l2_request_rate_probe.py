"""Does an L2 slice take sectors or line requests per cycle? (issue 24)

Why: held-out 2's `spmv_thread_row/uniform16` (a thread per CSR row; every warp load touches 16
lines, 2 sectors each, and its gathers of x 32 lines, 1 sector each) is predicted a quarter fast by
full simulation with its L1 and L2 sector counts within 4% (docs/mechanisms_24.md section 19): the
model is bound by the L2's bytes there (8.6 TB/s of sectors for SMs) where the GPU reached 6.2 TB/s.
gpusim's slices take bytes (`bandwidth_bytes_per_cycle_per_slice`); if a slice takes one line's
request a cycle whatever its sectors, requests of 1 or 2 sectors get less than the bytes' peak.

The probe: every SM full of warps (grid = 8 blocks of 256 threads a SM), each warp loading `ITERS`
times from an L2-resident 16 MiB buffer with `ld.global.cg` (cached in the L2 only, not the L1),
each load 32 sectors over `lines` = 32, 16 or 8 lines (1, 2 or 4 sectors a line, lanes on distinct
sectors; the lines at hashed places across the buffer), and a coalesced 4-sector load (`lines` 1)
for reference; a first pass over the buffer warms the L2. Timed with CUDA events (median of 5);
reported as L2 sectors per ns and per L2 cycle at the clock nvidia-smi reports.

    python -m validate.l2_request_rate_probe --out $OUT/l2_request_rate_h200.json   # on a GPU machine
    python -m validate.l2_request_rate_probe --predict h200                           # gpusim's figures
"""
from __future__ import annotations

from pathlib import Path

from validate.probe_cli import gpu_provenance, probe_main, write_probe

BUF_BYTES = 16 << 20
ITERS = 256
BLOCK = 256
BLOCKS_PER_SM = 8
CASES = (32, 16, 8, 1)          # lines a warp load touches (32 sectors over them; 1: one line's 4 sectors)
REPEATS = 5

SOURCE = r"""
extern "C" __global__ void probe(const float *buf, float *out, int lines, unsigned nlines, int iters) {
    unsigned lane = threadIdx.x & 31, warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    unsigned per = 32 / lines;                      // lanes a line (lines 1: the 32 lanes in one line)
    unsigned l = lane / per, s = lane % per;        // the lane's line of the load, and its place in it
    float acc = 0.f;
    for (int i = 0; i < iters; i++) {
        unsigned h = (warp * 2654435761u) ^ (i * 40503u) ^ (l * 2246822519u);
        h ^= h >> 15; h *= 2654435761u; h ^= h >> 13;
        unsigned line = h % nlines;
        // lines >= 8: a lane per sector (32 / lines sectors a line); lines 1: 32 words of one line
        unsigned word = lines == 1 ? lane : s * 8;
        acc += __ldcg(buf + line * 32 + word);
    }
    if (acc == -1.f) out[0] = acc;
}
"""


def run(out_path: str) -> Path:
    import cupy as cp                    # here, not at the top: only the GPU machine needs CuPy
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    sms = props["multiProcessorCount"]
    mod = cp.RawModule(code=SOURCE, options=(f"--gpu-architecture=sm_{props['major']}{props['minor']}",),
                       backend="nvrtc")
    fn = mod.get_function("probe")
    buf = cp.ones(BUF_BYTES // 4, cp.float32)
    out = cp.zeros(1, cp.float32)
    nlines = BUF_BYTES // 128
    grid = sms * BLOCKS_PER_SM
    warps = grid * BLOCK // 32
    float(buf.sum())                     # a pass over the buffer leaves it in the L2 (16 MiB, twice with the copies)
    rows = []
    for lines in CASES:
        times = []
        for _ in range(REPEATS):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            fn((grid,), (BLOCK,), (buf, out, cp.int32(lines), cp.uint32(nlines), cp.int32(ITERS)))
            b.record()
            b.synchronize()
            times.append(cp.cuda.get_elapsed_time(a, b) * 1e6)       # ns
        ns = sorted(times)[len(times) // 2]
        sectors = warps * ITERS * (4 if lines == 1 else 32)
        requests = warps * ITERS * lines
        rows.append({"lines": lines, "sectors_per_line": 4 if lines == 1 else 32 // lines, "ns": ns, "ns_all": times,
                     "sectors": sectors, "line_requests": requests, "sectors_per_ns": sectors / ns,
                     "line_requests_per_ns": requests / ns})
    prov = gpu_provenance(cp, "python -m validate.l2_request_rate_probe --out $OUT/l2_request_rate_<gpu>.json",
                          __doc__, sms=sms, grid=grid, block=BLOCK, iters=ITERS, buffer_bytes=BUF_BYTES, repeats=REPEATS)
    path = write_probe(out_path, prov, rows)
    for r in rows:
        print(f"lines {r['lines']:2d} ({r['sectors_per_line']} sectors a line): {r['ns'] / 1e3:8.1f} us  "
              f"{r['sectors_per_ns']:7.1f} sectors/ns  {r['line_requests_per_ns']:7.1f} line requests/ns")
    return path


def predict(gpu: str) -> list[dict]:
    """gpusim's sectors per ns for each case (timing, sampled as `gpusim.launch` does by default)."""
    import numpy as np                                 # here: the GPU machine's side runs without gpusim's dependencies
    import gpusim                                      # here: as numpy above
    from gpusim.specs.overrides import resolve         # here: as numpy above
    spec = resolve(gpu)
    grid = spec.sm_count * BLOCKS_PER_SM
    warps = grid * BLOCK // 32
    buf = np.ones(BUF_BYTES // 4, np.float32)
    rows = []
    for lines in CASES:
        m = gpusim.launch(gpusim.CudaSource(SOURCE, "probe"), grid, BLOCK,
                          (buf, np.zeros(1, np.float32), np.int32(lines), np.uint32(BUF_BYTES // 128), np.int32(ITERS)),
                          gpu=spec, timing=True, outputs=False).metrics
        ns = m["gpu__time_duration.sum"]
        sectors = warps * ITERS * (4 if lines == 1 else 32)
        rows.append({"lines": lines, "ns": ns, "sectors_per_ns": sectors / ns,
                     "line_requests_per_ns": warps * ITERS * lines / ns, "bound": m.get("timing__bound")})
        print(f"lines {lines:2d}: {ns / 1e3:8.1f} us  {sectors / ns:7.1f} sectors/ns  ({m.get('timing__bound')})")
    return rows


def main(argv=None) -> int:
    return probe_main(__doc__, run, predict, argv)


if __name__ == "__main__":
    raise SystemExit(main())
