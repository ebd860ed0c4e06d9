"""Double against single buffering by blocks a SM: how much of a tile's math the other blocks hide
(issue 29; docs/mechanisms_24.md section 42).

At 4096^3 the double-buffered `mma.sync` GEMM (programs/cuda_kernels/mma_gemm.cu, STAGES = 2) beats
the single-buffered one (STAGES = 1) by 4.2% on the H100 and 6.2% on the H200, with 7 blocks a SM
(registers); gpusim puts them within 0.3%. With fewer blocks a SM, fewer others run while one waits
for its copies, so a single-buffered block's wait shows more: how the gap grows as the blocks a SM
fall is what a model of the overlap has to reproduce, and which resource the overlap runs out of
(the copies' latency, the L2's throughput) shows in it.

Each kernel (`mma_gemm<64, 64, S, 8>`, S = 1 and 2, the program's own source) runs at n = 2048 and
4096 with dynamic shared memory padded so that 1, 2, 3, 4, 5, 6 or 7 blocks fit a SM (the driver's
occupancy query checks each; a row records the blocks it reports); CUDA events around `REPEATS`
launches after two warm-ups, the median per launch. Inputs: standard normal f16 A and B (seed 0).

    python -m validate.tensor_timing.buffering_occupancy --out $OUT/buffering_occupancy_h100.json   # GPU, seconds
    python -m validate.tensor_timing.buffering_occupancy --predict h100 [--json FILE]              # gpusim, same launches

Needs CuPy (NVRTC). The GPU side imports nothing of gpusim.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np

from validate.probe_cli import event_times_us, gpu_provenance, probe_main, write_probe

ROOT = Path(__file__).resolve().parents[2]
CU = ROOT / "programs" / "cuda_kernels" / "mma_gemm.cu"
TILE, PAD, THREADS = 64, 8, 128
SIZES = (2048, 4096)
BLOCKS = (1, 2, 3, 4, 5, 6, 7)
REPEATS = 10
RESERVED_SMEM = 1024            # the shared memory the driver keeps per block (sm_80 and later)
MEASURED = {"h100": ROOT / "data" / "measurements" / "buffering_occupancy_h100.json",
            "h200": ROOT / "data" / "measurements" / "buffering_occupancy_h200.json"}


def kernel_name(stages: int) -> str:
    return f"mma_gemm<{TILE}, {TILE}, {stages}, {PAD}>"


def static_smem(stages: int) -> int:
    """The kernel's static shared memory: As[S][64][32 + PAD] and Bs[S][32][64 + PAD] halves."""
    return stages * (TILE * (32 + PAD) + 32 * (TILE + PAD)) * 2


def dynamic_for(blocks: int, stages: int, smem_per_sm: int) -> int:
    """Dynamic shared bytes that let at most `blocks` blocks share a SM of `smem_per_sm` bytes
    (0 where the static shared memory alone allows no more)."""
    per_block = smem_per_sm // blocks - RESERVED_SMEM - static_smem(stages)
    return max(0, (per_block // 128) * 128)


def cases() -> list[tuple[str, int, int, int]]:
    """(label, n, stages, blocks a SM asked for)."""
    return [(f"n{n}/s{s}/b{b}", n, s, b) for n in SIZES for s in (1, 2) for b in BLOCKS]


def _occupancy(cp, fn, dyn: int):
    """The driver's blocks a SM for `fn` (a RawKernel) with `dyn` dynamic shared bytes, or None where
    this CuPy's driver query fails."""
    try:
        return int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, THREADS, dyn))
    except Exception:                    # noqa: BLE001 - the row then says None
        return None


def run(out: str) -> None:
    import cupy as cp                    # here, not at the top: only measuring needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    smem_per_sm = int(props["sharedMemPerMultiprocessor"])
    mod = cp.RawModule(code=CU.read_text(), options=(f"--gpu-architecture=sm_{props['major']}{props['minor']}",
                                                     "-std=c++17"), backend="nvrtc",
                       name_expressions=[kernel_name(1), kernel_name(2)])
    rng = cp.random.default_rng(0)
    n_max = max(SIZES)
    a_all = rng.standard_normal((n_max, n_max), dtype=cp.float32).astype(cp.float16)
    b_all = rng.standard_normal((n_max, n_max), dtype=cp.float32).astype(cp.float16)
    rows = []
    for label, n, stages, blocks in cases():
        fn = mod.get_function(kernel_name(stages))
        dyn = dynamic_for(blocks, stages, smem_per_sm)
        fn.max_dynamic_shared_size_bytes = dyn
        got = _occupancy(cp, fn, dyn)
        a, b = cp.ascontiguousarray(a_all[:n, :n]), cp.ascontiguousarray(b_all[:n, :n])
        c = cp.zeros((n, n), dtype=cp.float32)
        args = (a, b, c, cp.int32(n), cp.int32(n), cp.int32(n))

        def go(fn=fn, grid=(n // TILE, n // TILE), args=args, dyn=dyn):
            fn(grid, (THREADS,), args, shared_mem=dyn)
        us = event_times_us(cp, go, REPEATS)
        ref = (a[:64].astype(cp.float32) @ b[:, :64].astype(cp.float32))
        err = float(cp.max(cp.abs(c[:64, :64] - ref)))
        rows.append({"case": label, "n": n, "stages": stages, "blocks_asked": blocks, "blocks_per_sm": got,
                     "dynamic_shared_bytes": dyn, "us_median": statistics.median(us), "us_all": us,
                     "max_abs_error_corner": err})
        print(f"{label:16s} blocks {got} dyn {dyn:6d} {rows[-1]['us_median']:9.1f} us", flush=True)
    prov = gpu_provenance(cp, "python -m validate.tensor_timing.buffering_occupancy --out " + out, __doc__,
                          sm_count=int(props["multiProcessorCount"]), shared_per_sm=smem_per_sm,
                          kernel_source="programs/cuda_kernels/mma_gemm.cu", repeats=REPEATS)
    print(write_probe(out, prov, rows))


def predict(preset: str) -> list[dict]:
    """gpusim's times of `cases()` on `preset` (compare's sampled mode), each beside the committed
    measurement of that GPU where one exists, with its padding; the inputs come from numpy's generator,
    not CuPy's (the times do not depend on the values)."""
    import gpusim                          # here: the GPU side imports nothing of gpusim
    from gpusim.api import resolve_gpu     # likewise
    from gpusim.timing.engine import TimingOptions  # likewise
    short = preset.split("-")[0]
    measured = json.loads(MEASURED[short].read_text()) if short in MEASURED and MEASURED[short].is_file() else None
    by_case = {r["case"]: r for r in measured["rows"]} if measured else {}
    smem = resolve_gpu(preset).sm.shared_memory_per_sm_bytes
    rows = []
    rng = np.random.default_rng(0)
    n_max = max(SIZES)
    a_all = rng.standard_normal((n_max, n_max)).astype(np.float16)
    b_all = rng.standard_normal((n_max, n_max)).astype(np.float16)
    for label, n, stages, blocks in cases():
        m = by_case.get(label)
        dyn = m["dynamic_shared_bytes"] if m else dynamic_for(blocks, stages, smem)
        a, b = np.ascontiguousarray(a_all[:n, :n]), np.ascontiguousarray(b_all[:n, :n])
        c = np.zeros((n, n), np.float32)
        r = gpusim.launch(gpusim.CudaSource(CU, kernel_name(stages)), (n // TILE, n // TILE), (THREADS,),
                          (a, b, c, np.int32(n), np.int32(n), np.int32(n)), gpu=preset, shared_bytes=dyn,
                          timing=True, outputs=False, timing_options=TimingOptions(mode="auto", functional="sampled"))
        us = r.metrics["gpu__time_duration.sum"] / 1e3
        row = {"case": label, "predicted_us": round(us, 2), "dynamic_shared_bytes": dyn,
               "blocks_per_sm": r.metrics.get("launch__occupancy_limit_blocks")}
        if m:
            row.update(measured_us=round(m["us_median"], 2), error_pct=round(100.0 * (us / m["us_median"] - 1.0), 2),
                       measured_blocks_per_sm=m["blocks_per_sm"])
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv=None) -> int:
    return probe_main(__doc__, run, predict, argv)


if __name__ == "__main__":
    sys.exit(main())
