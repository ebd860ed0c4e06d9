"""Does a DRAM fill take an L2 slice's bandwidth? (issue 29)

Why: the 8192^3 `mma.sync` GEMMs are predicted 10-18% fast (docs/mechanisms_24.md section 21) with
the model at its L2 floor: its slices look up 9.2 TB/s of sectors there, where the H200 looks up
7.7-8.0 TB/s (82-84% of the 9.41 TB/s its SMs pull from L2-resident data) while it also fills 1.75
TB/s from DRAM (12.5 GB in 7.1 ms; an L2 hit rate of 68%). gpusim books a slice for the sectors
it looks up, not for the bursts DRAM writes into it; if a fill takes the slice's data array as a
lookup does, lookups + fills together are what a slice can move.

The probe: every SM full of warps (grid = 8 blocks of 256 threads a SM), each warp looping `ITERS`
times; in each iteration `resident` loads of one 128-B line (`ld.global.cg`, coalesced: a lane a
word) spread over an L2-resident 16 MiB buffer by a multiplicative stride, and `streamed` loads of the next line of
the warp's own stretch of a 2 GiB buffer (never in the L2: each launch streams a stretch of it
that no launch of the last 1.5 GiB touched). Cases run from resident loads only to streamed loads
only, through mixes of 8, 4, 2 and 1 resident loads to one streamed, then the same with the streamed
accesses stores of whole lines (written back to DRAM as the L2 evicts them); a first pass warms the
resident buffer. Timed with CUDA events (median of 5); reported per case: L2 sectors looked up per
ns (every load's 4 sectors) and DRAM sectors filled per ns (the streamed loads' sectors). Where the
slices bound the launch, lookups + f x fills is the slices' rate whatever the mix, which gives f.

    python -m validate.l2_fill_probe --out $OUT/l2_fill_h200.json   # on a GPU machine
    python -m validate.l2_fill_probe --predict h200                   # gpusim's figures
"""
from __future__ import annotations

from pathlib import Path

from validate.probe_cli import gpu_provenance, probe_main, write_probe

RESIDENT_BYTES = 16 << 20
STREAM_BYTES = 2 << 30
ITERS = 256
BLOCK = 256
BLOCKS_PER_SM = 8
CASES = ((1, 0, False), (8, 1, False), (4, 1, False), (2, 1, False), (1, 1, False), (0, 1, False),
         (8, 1, True), (4, 1, True), (2, 1, True), (0, 1, True))     # (resident, streamed, stores) an iteration
REPEATS = 5

SOURCE = r"""
#ifndef RESIDENT
#define RESIDENT 1
#define STREAMED 0
#endif
#ifndef STORE
#define STORE 0                      // 1: the streamed accesses are stores of whole lines (written back later)
#endif
// RESIDENT + STREAMED independent line loads an iteration, UNROLL iterations in flight at once
#define UNROLL 4
extern "C" __global__ void probe(const float *res, float *stream, float *out, unsigned nres,
                                 unsigned long long first_line, unsigned long long nstream, int iters) {
    unsigned lane = threadIdx.x & 31, warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    unsigned long long mine = first_line + (unsigned long long)warp * iters * STREAMED;   // the warp's stretch
    float acc = 0.f;
    for (int i0 = 0; i0 < iters; i0 += UNROLL) {
        float v[UNROLL * (RESIDENT + STREAMED) + 1];
        #pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            int i = i0 + u;
            #pragma unroll
            for (int r = 0; r < RESIDENT; r++) {
                unsigned line = (warp * 7919u + (unsigned)(i * RESIDENT + r) * 40503u) & (nres - 1);   // nres: 2^k
                v[u * (RESIDENT + STREAMED) + r] = __ldcg(res + line * 32 + lane);
            }
            #pragma unroll
            for (int s = 0; s < STREAMED; s++) {
                unsigned long long line = mine + (unsigned long long)i * STREAMED + s;    // below nstream (host)
                if (STORE) {
                    __stcg(stream + line * 32 + lane, (float)(i + s));
                    v[u * (RESIDENT + STREAMED) + RESIDENT + s] = 0.f;
                } else {
                    v[u * (RESIDENT + STREAMED) + RESIDENT + s] = __ldcg(stream + line * 32 + lane);
                }
            }
        }
        #pragma unroll
        for (int k = 0; k < UNROLL * (RESIDENT + STREAMED); k++)
            acc += v[k];
    }
    if (acc == -1.f) out[0] = acc;
}
"""


def source(resident: int, streamed: int, store: bool = False) -> str:
    """The probe's source for one case (its loads an iteration fixed at compile time, so they unroll)."""
    return f"#define RESIDENT {resident}\n#define STREAMED {streamed}\n#define STORE {int(store)}\n" + SOURCE


def _lines_per_launch(warps: int, streamed: int) -> int:
    return warps * ITERS * streamed


def run(out_path: str) -> Path:
    import cupy as cp                    # here, not at the top: only the GPU machine needs CuPy
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    sms = props["multiProcessorCount"]
    res = cp.ones(RESIDENT_BYTES // 4, cp.float32)
    stream = cp.ones(STREAM_BYTES // 4, cp.float32)
    out = cp.zeros(1, cp.float32)
    nres, nstream = RESIDENT_BYTES // 128, STREAM_BYTES // 128
    grid = sms * BLOCKS_PER_SM
    warps = grid * BLOCK // 32
    first = 0
    rows = []
    for resident, streamed, store in CASES:
        mod = cp.RawModule(code=source(resident, streamed, store),
                           options=(f"--gpu-architecture=sm_{props['major']}{props['minor']}",), backend="nvrtc")
        fn = mod.get_function("probe")
        times = []
        for _ in range(REPEATS):
            float(res.sum())             # the resident buffer back in the L2 (16 MiB, twice with the copies)
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            fn((grid,), (BLOCK,), (res, stream, out, cp.uint32(nres), cp.uint64(first), cp.uint64(nstream),
                                   cp.int32(ITERS)))
            b.record()
            b.synchronize()
            times.append(cp.cuda.get_elapsed_time(a, b) * 1e6)       # ns
            first += _lines_per_launch(warps, streamed)
            if first + _lines_per_launch(warps, streamed) > nstream:
                first = 0
        rows.append(_row(resident, streamed, warps, sorted(times)[len(times) // 2], times, store))
    prov = gpu_provenance(cp, "python -m validate.l2_fill_probe --out $OUT/l2_fill_<gpu>.json", __doc__, sms=sms,
                          grid=grid, block=BLOCK, iters=ITERS, resident_bytes=RESIDENT_BYTES, stream_bytes=STREAM_BYTES,
                          repeats=REPEATS)
    path = write_probe(out_path, prov, rows)
    for r in rows:
        _print(r)
    return path


def _row(resident: int, streamed: int, warps: int, ns: float, times=None, store: bool = False) -> dict:
    lookups = warps * ITERS * (resident + streamed) * 4
    fills = warps * ITERS * streamed * 4                 # stores: the sectors written (and written back)
    row = {"resident": resident, "streamed": streamed, "stores": store, "ns": ns, "lookup_sectors": lookups,
           "fill_sectors": fills, "lookups_per_ns": lookups / ns, "fills_per_ns": fills / ns}
    if times is not None:
        row["ns_all"] = times
    return row


def _print(r: dict) -> None:
    print(f"resident {r['resident']} streamed {r['streamed']}{' stores' if r.get('stores') else ''}: "
          f"{r['ns'] / 1e3:8.1f} us  {r['lookups_per_ns']:7.1f} lookup sectors/ns  "
          f"{r['fills_per_ns']:7.1f} {'written' if r.get('stores') else 'fill'} sectors/ns"
          + (f"  ({r['bound']})" if r.get("bound") else ""))


def predict(gpu: str) -> list[dict]:
    """gpusim's figures for each case (timing, sampled as `gpusim.launch` does by default)."""
    import numpy as np                                 # here: the GPU machine's side runs without gpusim's dependencies
    import gpusim                                      # here: as numpy above
    from gpusim.specs.overrides import resolve         # here: as numpy above
    spec = resolve(gpu)
    grid = spec.sm_count * BLOCKS_PER_SM
    warps = grid * BLOCK // 32
    res = np.ones(RESIDENT_BYTES // 4, np.float32)
    stream = np.ones(STREAM_BYTES // 4, np.float32)
    rows = []
    for resident, streamed, store in CASES:
        m = gpusim.launch(gpusim.CudaSource(source(resident, streamed, store), "probe"), grid, BLOCK,
                          (res, stream, np.zeros(1, np.float32), np.uint32(RESIDENT_BYTES // 128), np.uint64(0),
                           np.uint64(STREAM_BYTES // 128), np.int32(ITERS)),
                          gpu=spec, timing=True, outputs=False).metrics
        row = _row(resident, streamed, warps, m["gpu__time_duration.sum"], store=store)
        row["bound"] = m.get("timing__bound")
        row["dram_read_sectors"] = m.get("dram__sectors_read.sum")
        rows.append(row)
        _print(row)
    return rows


def main(argv=None) -> int:
    return probe_main(__doc__, run, predict, argv)


if __name__ == "__main__":
    raise SystemExit(main())
