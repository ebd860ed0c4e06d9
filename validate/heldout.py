"""The held-out validation suite: 32 Numba CUDA kernels that are not in `programs/` and that
the timing model is checked against but never tuned (calibrated) on, so that accuracy
figures measured on them are not overfitted. Each is a `ProgramSpec` (see
`programs/base.py`) with a numpy reference, a 'default' size that gpusim's functional
simulator runs in well under a second, and measured sizes ('medium' and 'large', or named
variants) that take 28 us to 1.6 ms on an H200.

    python -m validate measure --suite heldout --out data/measurements/h200_heldout.json
    python -m validate compare --data data/measurements/h200_heldout.json

Records of these kernels carry the key "heldout": name (where programs carry "program").
Rules that keep the suite held out: `validate calibrate` fits microbenchmarks only, and
nothing in gpusim's specs is fitted to these records; a kernel or its sizes are not changed
to make a prediction match (add a new kernel instead); a change of sizes means measuring
again (tests/validate/test_heldout.py checks the recorded params against the sizes).

H200 us: `gpu__time_duration.sum` under ncu (caches flushed, clocks unlocked at ~1978 MHz)
from data/measurements/h200_heldout.json, for the measured sizes in order; two runs agreed
within 2% on every measured size.

| name                  | stresses                                            | measured sizes         | H200 us           |
|-----------------------|-----------------------------------------------------|------------------------|-------------------|
| stencil2d_5pt         | 5 global loads per output: L1/L2 reuse              | 4096^2, 8192^2 f32     | 62 / 247          |
| stencil2d_9pt         | 9 global loads (3 rows) per output                  | 4096^2, 8192^2 f32     | 64 / 255          |
| box_blur_5x5          | 25 clamped uint8 loads per output, integer ALU      | 4096^2, 8192^2 u8      | 332 / 1348        |
| stencil3d_7pt         | 3-D grid of 32x4x2 blocks, plane reuse in L2        | 256^3, 448^3 f32       | 88 / 434          |
| conv2d_shared_tile    | 5x5 conv, 20x20 shared tile + halo, 2-way conflicts | 4096^2, 8192^2 f32     | 271 / 1073        |
| gather_rows           | random rows of a 2 MiB table: L2 reuse              | 2^18, 2^20 rows x 64   | 56 / 215          |
| gather_cols           | random columns: ~25 sectors per request             | 16Ki, 64Ki x 1024      | 85 / 334          |
| strided_read          | x[i * s], s = 2, 4, 8, 32 words: over-fetch         | stride2/4/8/32         | 56 / 80 / 68 / 76 |
| gather_small_table    | random reads of a 16 KiB table: L1 hits             | 2^23, 2^25             | 28 / 107          |
| aos_read              | float32 x4 as array of structs (n, 4)               | 2^23, 2^25 structs     | 41 / 159          |
| soa_read              | the same data as struct of arrays (4, n)            | 2^23, 2^25 structs     | 42 / 158          |
| count_positive        | one global counter: same-address atomics            | 2^21, 2^23 threads     | 51 / 200          |
| histogram_global_wide | 65,536 global bins: low-contention atomics          | 2^22, 2^24 keys        | 55 / 212          |
| histogram_shared_256  | shared atomics, 256 bins, grid-stride               | 2^24, 2^26 keys        | 49 / 182          |
| histogram_shared_4096 | shared atomics, 4,096 bins, 528 x 4,096 merges      | 2^24, 2^25 keys        | 57 / 106          |
| fma_chain             | dependent FMA chain, 2 warps per SM: latency        | 2^14, 2^17 steps       | 176 / 1394        |
| fma_chain_ilp8        | 8 independent FMA chains per thread: ILP            | 2^14, 2^17 steps       | 203 / 1609        |
| intdiv_loop           | // and % by runtime int64 values in a loop          | 2^18 x 64, 2^20 x 256  | 65 / 922          |
| math_heavy            | float32 sqrt, exp, log, sin (libdevice)             | 2^24, 2^26             | 73 / 284          |
| digit_histogram_local | local int32[16] indexed by data: local memory       | 2^20, 2^23 threads     | 107 / 831         |
| spmv_csr_scalar       | CSR SpMV, thread per row: divergence, gathers       | 2^18, 2^21 rows        | 66 / 360          |
| spmv_csr_vector       | CSR SpMV, warp per row, shfl_down reduction         | 2^18, 2^21 rows        | 67 / 498          |
| gemv_rowmajor         | y = A x, thread per row: 32 sectors per request     | 16Ki x 1Ki, 64Ki x 2Ki | 108 / 565         |
| gemv_colaccess        | y = A^T x, thread per column: coalesced             | 1Ki x 16Ki, 2Ki x 64Ki | 218 / 460         |
| matrix_copy2d         | 2-D copy, blocks 32x8, 16x16, 4x64, 1x256           | 4096 x 8192 f32        | 111/118/171/717   |
| axpy_inplace          | x[i] += a*y[i], grid-stride read-modify-write       | 2^24, 2^26 f32         | 55 / 218          |
| scatter_store         | out[perm[i]] = x[i]: one 4-byte store per sector    | 2^22, 2^24 int32       | 80 / 788          |
| memset_bytes          | one byte per store, grid-stride                     | 64, 256 MiB            | 38 / 143          |
| reduce_f64            | float64 grid-stride sum, shared float64 tree        | 2^24, 2^26 f64         | 34 / 123          |
| warp_scan             | per-block scan: shfl_up_sync + warp totals          | 2^23, 2^25 f32         | 35 / 139          |
| bitonic_sort_block    | 1,024-key bitonic sort: 55 barriers, conflicts      | 2^22, 2^24 keys        | 164 / 630         |
| layernorm_rows        | block per row, shuffle + shared f32 reductions      | 8Ki, 32Ki rows x 1024  | 56 / 213          |

What the first measurement showed (each a trap for a model that reads the kernel naively):
`count_positive` runs ~21 same-address atomics/ns, 15x the microbenchmark's
atomic_throughput/global_same, because ptxas aggregates the atomic on a uniform address
(VOTEU.ANY + POPC + one REDG per warp in the SASS); `fma_chain` takes ~21 cycles per step,
not the FMA's 4, because Numba's range() carries a 64-bit remaining count from step to
step through 5 dependent SASS instructions (ISETP, ISETP.EX, SEL, IADD3, IMAD.X), and the 8
chains of `fma_chain_ilp8` hide under it (~25 cycles per step); at stride 32,
`strided_read` reads 64 bytes of DRAM per 32-byte sector it touches.

Host-side builds take at most a few seconds, the largest case uses under 0.7 GB of device
memory, and all kernels run unchanged under `numba.cuda` on a GPU and under gpusim (they
are written as a Numba user writes them: cuda.grid, shared and local arrays, cuda.atomic,
shuffles, float32 literals). Only numpy, numba and `programs.base` are imported:
`validate measure` imports this module on a GPU machine without gpusim.
"""
from __future__ import annotations

from programs.base import ProgramSpec
from validate._heldout import access, atomics, blockwise, compute, linalg, stencils, streams

SQ = {"medium": {"h": 4096, "w": 4096}, "large": {"h": 8192, "w": 8192}}


def _spec(name, description, build, default, tags, **measured):
    return ProgramSpec(name, description, build, sizes={"default": default, **measured}, tags=tags)


HELDOUT: dict[str, ProgramSpec] = {s.name: s for s in (
    # ---- L1/L2 reuse --------------------------------------------------------------
    _spec("stencil2d_5pt", "2-D 5-point stencil from global memory (border copied)",
          stencils.build_stencil_5pt, {"h": 72, "w": 100}, ("stencil", "l1-reuse"), **SQ),
    _spec("stencil2d_9pt", "2-D 9-point (1-2-1) stencil from global memory (border copied)",
          stencils.build_stencil_9pt, {"h": 72, "w": 100}, ("stencil", "l1-reuse"), **SQ),
    _spec("box_blur_5x5", "5x5 box blur of a uint8 image, clamped edges, float32 out",
          stencils.build_box_blur, {"h": 72, "w": 100}, ("stencil", "l1-reuse", "uint8"), **SQ),
    _spec("stencil3d_7pt", "3-D 7-point stencil on a 3-D grid of 32x4x2 blocks",
          stencils.build_stencil3d, {"d": 10, "h": 12, "w": 40}, ("stencil", "3d-grid", "l2-reuse"),
          medium={"d": 256, "h": 256, "w": 256}, large={"d": 448, "h": 448, "w": 448}),
    _spec("conv2d_shared_tile", "5x5 convolution through a 20x20 shared tile with halo",
          stencils.build_conv2d, {"h": 40, "w": 52}, ("stencil", "shared-memory", "halo"), **SQ),
    _spec("gather_rows", "out[r, :] = table[idx[r], :] from an L2-resident table",
          access.build_gather_rows, {"n": 300, "table_rows": 64}, ("gather", "l2-reuse"),
          medium={"n": 1 << 18, "table_rows": 8192}, large={"n": 1 << 20, "table_rows": 8192}),
    _spec("gather_cols", "out[:, c] = x[:, idx[c]]: random columns within each row",
          access.build_gather_cols, {"rows": 40, "cols": 256, "picks": 100}, ("gather", "l2-reuse"),
          medium={"rows": 16384, "cols": 1024, "picks": 1024}, large={"rows": 65536, "cols": 1024, "picks": 1024}),
    _spec("strided_read", "out[i] = x[i * stride], int32, stride 2, 4, 8 or 32 words",
          access.build_strided, {"n": 3000, "stride": 4}, ("coalescing", "sectors"),
          stride2={"n": 1 << 24, "stride": 2}, stride4={"n": 1 << 24, "stride": 4},
          stride8={"n": 1 << 23, "stride": 8}, stride32={"n": 1 << 22, "stride": 32}),
    _spec("gather_small_table", "out[i] = table[idx[i]], 16 KiB float32 table, random idx",
          access.build_gather_small_table, {"n": 5000, "table_size": 4096}, ("gather", "l1-reuse"),
          medium={"n": 1 << 23, "table_size": 4096}, large={"n": 1 << 25, "table_size": 4096}),
    _spec("aos_read", "float32 x4 structs read as an array of structs (n, 4)",
          access.build_aos, {"n": 5000}, ("coalescing", "aos"), medium={"n": 1 << 23}, large={"n": 1 << 25}),
    _spec("soa_read", "the same float32 x4 data read as a struct of arrays (4, n)",
          access.build_soa, {"n": 5000}, ("coalescing", "soa"), medium={"n": 1 << 23}, large={"n": 1 << 25}),
    # ---- atomics -------------------------------------------------------------------
    _spec("count_positive", "count x > 0 with one global atomic counter",
          atomics.build_counter, {"n": 5000}, ("atomics", "contention"), medium={"n": 1 << 21}, large={"n": 1 << 23}),
    _spec("histogram_global_wide", "65,536-bin histogram of uniform keys with global atomics",
          atomics.build_histogram_wide, {"n": 5000}, ("atomics",), medium={"n": 1 << 22}, large={"n": 1 << 24}),
    _spec("histogram_shared_256", "256-bin shared-memory histogram of uniform uint8 keys",
          atomics.build_histogram_shared, {"n": 20000, "nbins": 256, "grid": 8}, ("atomics", "shared-memory"),
          medium={"n": 1 << 24, "nbins": 256}, large={"n": 1 << 26, "nbins": 256}),
    _spec("histogram_shared_4096", "4096-bin shared-memory histogram of uniform uint16 keys",
          atomics.build_histogram_shared, {"n": 20000, "nbins": 4096, "grid": 8}, ("atomics", "shared-memory"),
          medium={"n": 1 << 24, "nbins": 4096}, large={"n": 1 << 25, "nbins": 4096}),
    # ---- compute and latency ------------------------------------------------------
    _spec("fma_chain", "one dependent float32 FMA chain per thread, 2 warps per SM",
          compute.build_fma_chain, {"iters": 64, "grid": 4}, ("latency", "fp32"),
          medium={"iters": 1 << 14}, large={"iters": 1 << 17}),
    _spec("fma_chain_ilp8", "8 independent float32 FMA chains per thread, 2 warps per SM",
          compute.build_fma_chain_ilp8, {"iters": 64, "grid": 4}, ("ilp", "fp32"),
          medium={"iters": 1 << 14}, large={"iters": 1 << 17}),
    _spec("intdiv_loop", "v = (7v + k) % mod + v // div in a loop, runtime int64 divisors",
          compute.build_intdiv, {"n": 1000, "iters": 16}, ("integer", "division"),
          medium={"n": 1 << 18, "iters": 64}, large={"n": 1 << 20, "iters": 256}),
    _spec("math_heavy", "float32 sqrt(x) + exp(-x) * log(x + 1) + sin(x)",
          compute.build_math, {"n": 5000}, ("transcendental", "fp32"), medium={"n": 1 << 24}, large={"n": 1 << 26}),
    _spec("digit_histogram_local", "per-thread hex-digit counts in a local array, most frequent digit",
          compute.build_digits, {"n": 5000}, ("local-memory",), medium={"n": 1 << 20}, large={"n": 1 << 23}),
    # ---- sparse and dense matrix-vector --------------------------------------------
    _spec("spmv_csr_scalar", "CSR SpMV, one thread per row, random row lengths",
          linalg.build_spmv_scalar, {"rows": 600, "cols": 1000}, ("sparse", "divergence", "gather"),
          medium={"rows": 1 << 18, "cols": 1 << 18}, large={"rows": 1 << 21, "cols": 1 << 21}),
    _spec("spmv_csr_vector", "CSR SpMV, one warp per row, shuffle reduction",
          linalg.build_spmv_vector, {"rows": 600, "cols": 1000}, ("sparse", "warp-shuffle", "gather"),
          medium={"rows": 1 << 18, "cols": 1 << 18}, large={"rows": 1 << 21, "cols": 1 << 21}),
    _spec("gemv_rowmajor", "y = A x, row-major A, one thread per row",
          linalg.build_gemv_rowmajor, {"rows": 300, "cols": 64}, ("gemv", "coalescing", "l1-reuse"),
          medium={"rows": 16384, "cols": 1024}, large={"rows": 65536, "cols": 2048}),
    _spec("gemv_colaccess", "y = A^T x, row-major A, one thread per column (coalesced)",
          linalg.build_gemv_colaccess, {"rows": 64, "cols": 300}, ("gemv", "coalescing", "latency"),
          medium={"rows": 1024, "cols": 16384}, large={"rows": 2048, "cols": 65536}),
    # ---- streams -------------------------------------------------------------------
    _spec("matrix_copy2d", "2-D float32 copy with 32x8, 16x16, 4x64 or 1x256 blocks",
          streams.build_copy2d, {"rows": 50, "cols": 70, "bx": 8, "by": 32}, ("coalescing", "block-shape"),
          **{f"b{bx}x{by}": {"rows": 4096, "cols": 8192, "bx": bx, "by": by}
             for bx, by in ((32, 8), (16, 16), (4, 64), (1, 256))}),
    _spec("axpy_inplace", "x[i] += a * y[i], float32, grid-stride loop",
          streams.build_axpy, {"n": 20000, "grid": 8}, ("memory-bound", "read-modify-write", "grid-stride"),
          medium={"n": 1 << 24}, large={"n": 1 << 26}),
    _spec("scatter_store", "out[perm[i]] = x[i], random permutation, int32",
          streams.build_scatter, {"n": 5000}, ("scatter", "partial-sector"), medium={"n": 1 << 22}, large={"n": 1 << 24}),
    _spec("memset_bytes", "buf[i] = value, uint8, grid-stride loop",
          streams.build_memset, {"n": 50000, "grid": 8}, ("memory-bound", "store", "grid-stride"),
          medium={"n": 1 << 26}, large={"n": 1 << 28}),
    # ---- block-level algorithms ----------------------------------------------------
    _spec("reduce_f64", "float64 grid-stride sum, shared float64 tree, one partial per block",
          blockwise.build_reduce_f64, {"n": 20000, "grid": 8}, ("reduction", "float64", "shared-memory"),
          medium={"n": 1 << 24}, large={"n": 1 << 26}),
    _spec("warp_scan", "per-block inclusive scan from warp shuffles and warp totals",
          blockwise.build_warp_scan, {"n": 5000}, ("scan", "warp-shuffle"), medium={"n": 1 << 23}, large={"n": 1 << 25}),
    _spec("bitonic_sort_block", "bitonic sort of 1,024 int32 keys per block in shared memory",
          blockwise.build_bitonic, {"n": 8192}, ("sort", "shared-memory", "synchronization"),
          medium={"n": 1 << 22}, large={"n": 1 << 24}),
    _spec("layernorm_rows", "layernorm over rows: block per row, float32 reductions",
          blockwise.build_layernorm, {"rows": 16, "cols": 1000}, ("reduction", "warp-shuffle", "rows"),
          medium={"rows": 8192, "cols": 1024}, large={"rows": 32768, "cols": 1024}),
)}
