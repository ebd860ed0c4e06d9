"""The PROGRAM of tma_wgmma_gemm.cu: C = A B on Hopper's tensor cores, fed by the TMA.

    gpusim run programs/hopper_kernels/tma_wgmma_gemm.py --gpu h100      # 128 x 128 x 128
    gpusim run programs/hopper_kernels/tma_wgmma_gemm.py --size tiny --functional

A (M x K) and B (K x N) are f16, row-major; C (M x N) is f32. One warpgroup per 64 x BN tile
of C: thread 0 loads BK-wide slices of A and B with `cp.async.bulk.tensor` into a ring of
`stages` shared-memory stages, each completed through an mbarrier by the bytes that land; the
warpgroup multiplies each stage with `wgmma.mma_async` (m64nBNk16, f32 accumulate) through
swizzled shared-memory descriptors, and stores its tile with a TMA store. The tensor maps are
`gpusim.TensorMap`s (on a GPU: cuTensorMapEncodeTiled, `validate/tensor_programs/
tma_wgmma_gemm_gpu.py`, which records this kernel's outputs for the same inputs).

Sizes: `bn` 64 or 128, `bk` 16, 32 or 64 (A's swizzle is 2 * bk bytes), `stages` >= 2; m a
multiple of 64, n of bn, k of bk (the kernel has no edge code). The result is checked against
numpy's exact product rounded to f32 (tensor-core sums truncate: rtol 1e-4); bit for bit, the
recorded GPU outputs are the reference (tests/programs/test_tma_wgmma_gemm.py).
"""
from pathlib import Path

import numpy as np

import gpusim
from programs.base import Case, ProgramSpec

CU = Path(__file__).with_suffix(".cu")
BM = 64
RTOL, ATOL = 1e-4, 1e-4
SWIZZLE = {16: "32B", 32: "64B", 64: "128B"}


def kernel_name(bn: int, bk: int, stages: int) -> str:
    return f"tma_wgmma_gemm<{bn}, {bk}, {stages}>"


def shared_bytes(bn: int, bk: int, stages: int) -> int:
    """Dynamic shared memory: the stages (or the epilogue's f32 tile), plus 1024 bytes to align them."""
    stage = BM * bk * 2 + bk * bn * 2
    return max(stages * stage, BM * bn * 4) + 1024


def inputs(rng, m: int, n: int, k: int):
    """A, B (f16, uniform in [-1, 1)) and C (f32, NaN: every element must be written)."""
    A = rng.uniform(-1.0, 1.0, (m, k)).astype(np.float16)
    B = rng.uniform(-1.0, 1.0, (k, n)).astype(np.float16)
    return A, B, np.full((m, n), np.nan, np.float32)


def tensor_maps(A, B, C, bn: int, bk: int):
    """The kernel's three tensor maps (the .cu file's header)."""
    return (gpusim.TensorMap(A, box=(bk, BM), swizzle=SWIZZLE[bk]),
            gpusim.TensorMap(B, box=(64, bk), swizzle="128B"),
            gpusim.TensorMap(C, box=(bn, BM)))


def reference(A, B) -> np.ndarray:
    return (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)


def build(rng, m, n, k, bn=128, bk=32, stages=2):
    for name, v, t in (("m", m, BM), ("n", n, bn), ("k", k, bk)):
        if v <= 0 or v % t:
            raise ValueError(f"tma_wgmma_gemm: {name}={v} must be a positive multiple of {t} (the kernel's tile)")
    if bn not in (64, 128) or bk not in SWIZZLE or stages < 2:
        raise ValueError(f"tma_wgmma_gemm: bn={bn}, bk={bk}, stages={stages}: bn 64 or 128, bk 16, 32 or 64, "
                         "stages >= 2")
    A, B, C = inputs(rng, m, n, k)
    kernel = gpusim.CudaSource(CU, kernel_name(bn, bk, stages), options=("-std=c++17",))
    args = tensor_maps(A, B, C, bn, bk) + (np.int32(m), np.int32(n), np.int32(k))
    return Case("tma_wgmma_gemm", kernel, (n // bn, m // BM), (128,), args, {2: reference(A, B)},
                shared_bytes=shared_bytes(bn, bk, stages), rtol=RTOL, atol=ATOL)


PROGRAM = ProgramSpec(
    "tma_wgmma_gemm", "C = A B (f16 in, f32 out) with TMA loads into an mbarrier pipeline and wgmma (sm_90a)",
    build,
    sizes={"default": {"m": 128, "n": 128, "k": 128, "bn": 128, "bk": 32, "stages": 2},
           "tiny": {"m": 64, "n": 64, "k": 64, "bn": 64, "bk": 32, "stages": 2},
           "swizzle128": {"m": 64, "n": 128, "k": 256, "bn": 128, "bk": 64, "stages": 3},
           "large": {"m": 4096, "n": 4096, "k": 4096, "bn": 128, "bk": 64, "stages": 4}},
    tags=("cuda", "tensor", "gemm", "hopper"))
