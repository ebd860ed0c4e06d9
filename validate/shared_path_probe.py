"""How many ldmatrix and cp.async fill wavefronts does an SM's shared-memory data path take a cycle? (issue 29)

Why: in gpusim the 8192^3 `mma.sync` GEMMs are bound by the SM's shared-memory data path (ldmatrix
reads and cp.async fills, one 128-B wavefront a cycle each: with a fill at half a cycle the H200's
single-buffered one is predicted 17% faster, with the L2 twice as fast 1.5%), and run at 86-90% of
it; on the H200 the same launch's Nsight counters put that path at 83% of one wavefront a cycle
(docs/mechanisms_24.md section 23). Whether a wavefront is one cycle, and whether ldmatrix.trans
and the fills cost the same, decides where such GEMMs sit.

The probe: one block of 16 warps per SM. Each warp is a reader or a copier. A reader loops
`ldmatrix.sync.aligned.m8n8.x4` (or `.trans`) over 512 contiguous bytes of shared memory (4
conflict-free wavefronts each), 8 independent ones a round, XOR-ing the results; a copier loops
`cp.async` of 16 B a lane (512 B a warp: 4 fill wavefronts) into its own 2 KB of shared memory, 8 a
round, committing each round and keeping one round in flight, from its own 8 KB of global memory (`.ca`:
allocated in the L1, resident after its first pass; `.cg`: not allocated there, yet on both GPUs only
25-27% of its bytes come from the L2, docs/mechanisms_24.md section 24). Cases:
readers only, copiers only, and half and half. Reported per case (the launch with the median
CUDA-event time of 5): the block's cycles (%clock64 from its first to its last warp, the slowest
SM), ldmatrix wavefronts and fill wavefronts a cycle an SM, and their sum.

    python -m validate.shared_path_probe --out $OUT/shared_path_h200.json     # on a GPU machine
    python -m validate.shared_path_probe --predict h200                        # gpusim's figures
"""
from __future__ import annotations

from pathlib import Path

from validate.probe_cli import gpu_provenance, probe_main, write_probe

WARPS = 16
ROUNDS = 200
REPEATS = 5
SRC_BYTES_PER_WARP = 8 << 10   # each copier's own source: L1-resident for .ca
# (name, readers, copiers, trans, copy source 'ca' | 'cg' | None)
CASES = (("ldsm", 16, 0, False, None), ("ldsm_trans", 16, 0, True, None),
         ("copy_ca", 0, 16, False, "ca"), ("copy_cg", 0, 16, False, "cg"),
         ("ldsm+copy_ca", 8, 8, False, "ca"), ("ldsm+copy_cg", 8, 8, False, "cg"),
         ("ldsm_trans+copy_cg", 8, 8, True, "cg"))

SOURCE = r"""
#ifndef READERS
#define READERS 16
#define TRANS 0
#define CA 0
#endif
__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// SRC_WORDS: each copier's own source in 16-B words (source())
extern "C" __global__ void probe(const float4* src, unsigned src_words, int rounds, unsigned step,
                                 unsigned long long* cycles, unsigned* out) {
    __shared__ __align__(128) unsigned char tiles[WARPS_IN_BLOCK][2048];
    __shared__ unsigned long long t_first, t_last;
    unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int i = threadIdx.x; i < WARPS_IN_BLOCK * 512; i += blockDim.x)
        ((unsigned*)tiles)[i] = i * 2654435761u;
    if (threadIdx.x == 0) { t_first = ~0ull; t_last = 0; }
    __syncthreads();
    unsigned long long t0 = clock64();
    unsigned acc = 0;
    if (warp < READERS) {
        unsigned a = smem(&tiles[warp][0]) + lane * 16;          // 32 rows of 16 B: 4 wavefronts
        for (int r = 0; r < rounds; r++) {
            unsigned v[8][4];
            #pragma unroll
            for (int u = 0; u < 8; u++) {
                unsigned p = a + ((((r * 8 + u) * step) * 2654435761u) >> 30) * 512;   // one of 4 places: ptxas
                                                                                     // cannot tell which (step)
                if (TRANS)
                    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                                 : "=r"(v[u][0]), "=r"(v[u][1]), "=r"(v[u][2]), "=r"(v[u][3]) : "r"(p));
                else
                    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                                 : "=r"(v[u][0]), "=r"(v[u][1]), "=r"(v[u][2]), "=r"(v[u][3]) : "r"(p));
            }
            #pragma unroll
            for (int u = 0; u < 8; u++)
                acc ^= v[u][0] ^ v[u][1] ^ v[u][2] ^ v[u][3];
        }
    } else {
        unsigned d = smem(&tiles[warp][0]) + lane * 16;
        unsigned w0 = (blockIdx.x * WARPS_IN_BLOCK + warp) * SRC_WORDS;   // the copier's own 8 KB of the source
        for (int r = 0; r < rounds; r++) {
            #pragma unroll
            for (int u = 0; u < 8; u++) {
                unsigned w = w0 + (((r * 8 + u) * 32 + lane) & (SRC_WORDS - 1));
                if (CA)
                    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" :: "r"(d + (u & 3) * 512), "l"(src + w));
                else
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d + (u & 3) * 512), "l"(src + w));
            }
            asm volatile("cp.async.commit_group;" ::: "memory");
            asm volatile("cp.async.wait_group 1;" ::: "memory");
        }
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        acc = ((unsigned*)tiles[warp])[lane];
    }
    unsigned long long t1 = clock64();
    atomicMin(&t_first, t0);
    atomicMax(&t_last, t1);
    __syncthreads();
    if (threadIdx.x == 0) cycles[blockIdx.x] = t_last - t_first;
    if (acc == 0x12345u) out[0] = acc;
}
"""


def source(readers: int, trans: bool, ca: bool) -> str:
    return (f"#define READERS {readers}\n#define TRANS {int(trans)}\n#define CA {int(ca)}\n"
            f"#define WARPS_IN_BLOCK {WARPS}\n#define SRC_WORDS {SRC_BYTES_PER_WARP // 16}\n" + SOURCE)


def _row(name, readers, copiers, trans, src, cycles: float, ns: float, times=None) -> dict:
    ldsm = readers * ROUNDS * 8 * 4
    fills = copiers * ROUNDS * 8 * 4
    row = {"case": name, "readers": readers, "copiers": copiers, "trans": trans, "copy": src, "cycles": cycles,
           "ns": ns, "ldsm_wavefronts_per_cycle": ldsm / cycles, "fill_wavefronts_per_cycle": fills / cycles,
           "wavefronts_per_cycle": (ldsm + fills) / cycles}
    if times is not None:
        row["ns_all"] = times
    return row


def _print(r: dict) -> None:
    print(f"{r['case']:20s} {r['cycles']:9.0f} cycles  ldmatrix {r['ldsm_wavefronts_per_cycle']:5.3f}  fills "
          f"{r['fill_wavefronts_per_cycle']:5.3f}  sum {r['wavefronts_per_cycle']:5.3f} wavefronts/cycle/SM")


def _src_bytes(sms: int) -> int:
    return sms * WARPS * SRC_BYTES_PER_WARP


def run(out_path: str) -> Path:
    import cupy as cp                    # here, not at the top: only the GPU machine needs CuPy
    import numpy as np                   # here: beside CuPy, on the GPU machine
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    sms = props["multiProcessorCount"]
    arch = f"--gpu-architecture=sm_{props['major']}{props['minor']}"
    src_buf = cp.random.default_rng(1).random(_src_bytes(sms) // 4, dtype=cp.float32)   # not compressible
    cycles = cp.zeros(sms, cp.uint64)
    out = cp.zeros(1, cp.uint32)
    rows = []
    for name, readers, copiers, trans, src in CASES:
        fn = cp.RawModule(code=source(readers, trans, src == "ca"), options=(arch,), backend="nvrtc").get_function("probe")
        times, cyc = [], []
        for _ in range(REPEATS + 1):     # the first launch brings the copy sources into the L1 / L2
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            fn((sms,), (32 * WARPS,), (src_buf, cp.uint32(0), cp.int32(ROUNDS), cp.uint32(1), cycles, out))
            b.record()
            b.synchronize()
            times.append(cp.cuda.get_elapsed_time(a, b) * 1e6)
            cyc.append(float(cycles.get().astype(np.float64).max()))
        times, cyc = times[1:], cyc[1:]
        med = sorted(range(REPEATS), key=lambda i: times[i])[REPEATS // 2]
        row = _row(name, readers, copiers, trans, src, cyc[med], times[med], times)
        row["cycles_all"] = cyc
        rows.append(row)
        _print(row)
    prov = gpu_provenance(cp, "python -m validate.shared_path_probe --out $OUT/shared_path_<gpu>.json", __doc__,
                          sms=sms, warps=WARPS, rounds=ROUNDS, repeats=REPEATS, src_bytes_per_warp=SRC_BYTES_PER_WARP)
    return write_probe(out_path, prov, rows)


def predict(gpu: str) -> list[dict]:
    """gpusim's figures for each case: every SM simulated, every loop iteration timed; the block's
    cycles are the launch's SM cycles (one block a SM, launched together)."""
    import numpy as np                                  # here: the GPU machine's side runs without gpusim
    import gpusim                                       # here: as numpy
    from gpusim.specs.overrides import resolve          # here: as numpy
    from gpusim.timing.engine import TimingOptions      # here: as numpy
    spec = resolve(gpu)
    sms = spec.sm_count
    src_buf = np.random.default_rng(1).random(_src_bytes(sms) // 4, dtype=np.float32)
    rows = []
    for name, readers, copiers, trans, src in CASES:
        m = gpusim.launch(gpusim.CudaSource(source(readers, trans, src == "ca"), "probe"), sms, 32 * WARPS,
                          (src_buf, np.uint32(0), np.int32(ROUNDS), np.uint32(1), np.zeros(sms, np.uint64),
                           np.zeros(1, np.uint32)),
                          gpu=spec, timing=True, outputs=False,
                          timing_options=TimingOptions(mode="full", instruction_budget=None)).metrics
        row = _row(name, readers, copiers, trans, src, m["sm__cycles_elapsed.max"], m["gpu__time_duration.sum"])
        row["bound"] = m.get("timing__bound")
        rows.append(row)
        _print(row)
    return rows


def main(argv=None) -> int:
    return probe_main(__doc__, run, predict, argv)


if __name__ == "__main__":
    raise SystemExit(main())
