"""How much of the L2 holds partly written lines? Random 4-byte stores into arrays of 8 to 128 MiB (issue 24)

Why: held-out `scatter_store/large` (2^24 int32 stores, a random permutation, into 64 MiB) is predicted
61.5% fast on the H200: the GPU reads 459 MB and writes 464 MB of DRAM where gpusim moves 256 and 271
(docs/mechanisms_24.md section 34). Its own 16 MiB size (`medium`) writes its array back once on both. A
fully associative LRU cache of 60 MB given the launch's accesses writes back 240 MB of dirty sectors, one
of 30 MB 451 MB: the GPU acts as if it held half of what gpusim lets it hold of such lines. Two readings
differ in what they predict: a limit on dirty (or partly valid) data in the whole L2, which any store
pattern meets at the same size; or each of the two L2 partitions holding its own copy of lines that SMs of
both partitions write (every line of a random scatter), which a scatter whose lines are each written by one
block (one SM, one partition) escapes.

The probe: every SM full of threads (`BLOCKS` blocks of `BLOCK`, all resident at once), each thread storing
one int32 an iteration until every word of an array of `mib` MiB is written once (8 stores a 32-B sector,
at random times: a bijective hash of the store's index). Two modes with the same global order of lines:
`shared` (a store's word anywhere in the array: each line written from many SMs) and `own` (block b writes
only the lines l with l mod BLOCKS == b, in random order: each line from one SM). Before each timed launch
a 256 MiB read evicts the array (clean lines in the L2, nothing to write back). Timed with CUDA events
(median of `REPEATS`); Nsight's DRAM bytes and L2 write sectors come from running the same command under
`ncu` (its CSV beside the JSON; Nsight flushes the L2 before each launch).

    ncu --csv --print-units base --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,\
lts__t_sectors_op_write.sum,lts__t_sectors_op_read.sum,lts__t_sector_hit_rate.pct \
        python -m validate.scatter_capacity_probe --out $OUT/scatter_capacity_h200.json > $OUT/scatter_capacity_h200_ncu.csv
    python -m validate.scatter_capacity_probe --predict h200      # gpusim's figures for the same launches
"""
from __future__ import annotations

import json
from pathlib import Path

from validate.ncu import parse_csv
from validate.probe_cli import gpu_provenance, nvrtc_module, probe_main, write_probe

SIZES_MIB = (8, 16, 24, 32, 40, 48, 56, 64, 96, 128)
MODES = ("shared", "own")
BLOCK = 256
BLOCKS = 1024                   # all resident on a 132-SM Hopper (8 blocks of 256 threads an SM)
EVICT_BYTES = 256 << 20
REPEATS = 3

SOURCE = r"""
// A bijection of [0, 2^bits): multiplications by odd numbers and xor-shifts, mod 2^bits.
__device__ __forceinline__ unsigned mix(unsigned x, unsigned bits, unsigned key) {
    unsigned mask = bits >= 32 ? 0xffffffffu : (1u << bits) - 1u;
    #pragma unroll
    for (int r = 0; r < 3; r++) {
        x = (x * 0x9E3779B1u + key + r) & mask;
        x ^= x >> (bits / 2 + 1);
    }
    return x;
}

// shared: word mix(k) of the array for k = it * threads + thread (each line from many SMs)
extern "C" __global__ void scatter_shared(int *out, unsigned words, unsigned bits, unsigned iters) {
    unsigned threads = gridDim.x * blockDim.x, g = blockIdx.x * blockDim.x + threadIdx.x;
    for (unsigned it = 0; it < iters; it++) {
        unsigned j = mix(it * threads + g, bits, 12345u);
        if (j < words) out[j] = (int)j;
    }
}

// own: block b writes the lines l = q * gridDim.x + b only, its words in the order mix gives
extern "C" __global__ void scatter_own(int *out, unsigned words, unsigned bits, unsigned iters) {
    unsigned mine = words / gridDim.x;                 // words a block owns (a multiple of 32)
    for (unsigned it = 0; it < iters; it++) {
        unsigned j = mix(it * blockDim.x + threadIdx.x, bits, 12345u);
        if (j < mine) {
            unsigned q = j >> 5, w = j & 31u;
            unsigned word = (q * gridDim.x + blockIdx.x) * 32u + w;
            out[word] = (int)word;
        }
    }
}
"""


def launch_shape(mode: str, mib: int) -> tuple[int, int, int]:
    """(words, bits, iters) of one case: `bits` the hash's domain (a power of two at least the words
    one hash covers: the array in `shared`, a block's share in `own`), `iters` the iterations that
    cover it."""
    words = (mib << 20) // 4
    span = words if mode == "shared" else words // BLOCKS
    bits = max(1, (span - 1).bit_length())
    per_it = BLOCKS * BLOCK if mode == "shared" else BLOCK
    return words, bits, -(-(1 << bits) // per_it)


def run(out_path: str) -> Path:
    cp, props, mod = nvrtc_module(SOURCE)
    evict = cp.ones(EVICT_BYTES // 4, cp.float32)
    out = cp.zeros((max(SIZES_MIB) << 20) // 4, cp.int32)
    rows = []
    for mode in MODES:
        fn = mod.get_function(f"scatter_{mode}")
        for mib in SIZES_MIB:
            words, bits, iters = launch_shape(mode, mib)
            times = []
            for _ in range(REPEATS):
                float(evict.sum())           # the array out of the L2, clean lines in its place
                a, b = cp.cuda.Event(), cp.cuda.Event()
                a.record()
                fn((BLOCKS,), (BLOCK,), (out, cp.uint32(words), cp.uint32(bits), cp.uint32(iters)))
                b.record()
                b.synchronize()
                times.append(cp.cuda.get_elapsed_time(a, b) * 1e6)       # ns
            ok = bool((out[:words] == cp.arange(words, dtype=cp.int32)).all())
            out[:words] = 0
            row = {"mode": mode, "mib": mib, "words": words, "bits": bits, "iters": iters,
                   "ns": sorted(times)[len(times) // 2], "ns_all": times, "every_word_written": ok}
            rows.append(row)
            _print(row)
    prov = gpu_provenance(cp, "python -m validate.scatter_capacity_probe --out $OUT/scatter_capacity_<gpu>.json "
                          "(and under ncu, the module docstring's command)", __doc__,
                          sms=props["multiProcessorCount"], grid=BLOCKS, block=BLOCK, repeats=REPEATS,
                          evict_bytes=EVICT_BYTES)
    return write_probe(out_path, prov, rows)


def measured(json_path, csv_path) -> list[dict]:
    """Each case of the probe's JSON with Nsight's metrics of its launches (the median by duration of its
    `REPEATS`), the DRAM bytes written over the array's size (`written_per_array`)."""
    doc = json.loads(Path(json_path).read_text())
    ncu = [k["metrics"] for k in parse_csv(Path(csv_path).read_text())]
    rows = []
    for i, r in enumerate(doc["rows"]):
        mine = sorted(ncu[i * REPEATS:(i + 1) * REPEATS], key=lambda m: m["gpu__time_duration.sum"])
        m = mine[len(mine) // 2]
        rows.append({**r, "ncu": m, "written_per_array": m["dram__bytes_write.sum"] / (r["mib"] << 20)})
    return rows


def _print(r: dict) -> None:
    extra = "".join(f"  {k} {r[k] / 1e6:.1f} MB" for k in ("dram_read_bytes", "dram_write_bytes") if r.get(k) is not None)
    print(f"{r['mode']:6s} {r['mib']:4d} MiB: {r['ns'] / 1e3:9.1f} us{extra}")


def predict(gpu: str) -> list[dict]:
    """gpusim's figures for each case (timing, as `gpusim.launch` samples by default)."""
    import numpy as np                                 # here: the GPU machine's side runs without gpusim's dependencies
    import gpusim                                      # here: as numpy above
    from gpusim.specs.overrides import resolve         # here: as numpy above
    spec = resolve(gpu)
    out = np.zeros((max(SIZES_MIB) << 20) // 4, np.int32)
    rows = []
    for mode in MODES:
        for mib in SIZES_MIB:
            words, bits, iters = launch_shape(mode, mib)
            m = gpusim.launch(gpusim.CudaSource(SOURCE, f"scatter_{mode}"), BLOCKS, BLOCK,
                              (out, np.uint32(words), np.uint32(bits), np.uint32(iters)),
                              gpu=spec, timing=True, outputs=False).metrics
            row = {"mode": mode, "mib": mib, "words": words, "ns": m["gpu__time_duration.sum"],
                   "dram_read_bytes": m.get("dram__bytes_read.sum"), "dram_write_bytes": m.get("dram__bytes_write.sum"),
                   "lts_write_sectors": m.get("lts__t_sectors_op_write.sum"), "timing_mode": m.get("timing__mode")}
            rows.append(row)
            _print(row)
    return rows


def main(argv=None) -> int:
    return probe_main(__doc__, run, predict, argv)


if __name__ == "__main__":
    raise SystemExit(main())
