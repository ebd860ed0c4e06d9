"""The PROGRAM of tma_wgmma_gemm.cu: C = A B on Hopper's tensor cores, fed by the TMA.

    gpusim run programs/hopper_kernels/tma_wgmma_gemm.py --gpu h100      # 128 x 128 x 128
    gpusim run programs/hopper_kernels/tma_wgmma_gemm.py --size tiny --functional

A (M x K) and B (K x N) are f16, row-major; C (M x N) is f32. One warpgroup per 64 x BN tile
of C: thread 0 loads BK-wide slices of A and B with `cp.async.bulk.tensor` into a ring of
`stages` shared-memory stages, each completed through an mbarrier by the bytes that land; the
warpgroup multiplies each stage with `wgmma.mma_async` (m64nBNk16, f32 accumulate) through
swizzled shared-memory descriptors, and stores its tile with a TMA store. The tensor maps are
`gpusim.TensorMap`s (on a GPU: cuTensorMapEncodeTiled, `validate/semantics/tma_record.py`,
which records this kernel's outputs for the same inputs).

Sizes: `bn` 64 or 128, `bk` 16, 32 or 64 (A's swizzle is 2 * bk bytes), `stages` >= 2; m a
multiple of 64, n of bn, k of bk (the kernel has no edge code). The result is checked against
numpy's exact product rounded to f32 (tensor-core sums truncate: rtol 1e-4, an absolute
tolerance growing with k as for the other GEMM programs, `programs/cuda_kernels/_gemm.py`); bit for bit, the
recorded GPU outputs are the reference (tests/programs/test_tma_wgmma_gemm.py).
"""
from pathlib import Path

import numpy as np

import gpusim
from programs.base import Case, Deferred, ProgramSpec
from programs.cuda_kernels import _gemm as G
from programs.hopper_kernels import _tma_cases as C

CU = Path(__file__).with_suffix(".cu")
BM = C.BM
RTOL, ATOL = 1e-4, 1e-4


def kernel_name(bn: int, bk: int, stages: int) -> str:
    return f"tma_wgmma_gemm<{bn}, {bk}, {stages}>"


def reference(A, B) -> np.ndarray:
    """The exact product (float64 sums of exact products) rounded to f32."""
    return (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)


def build(rng, m, n, k, bn=128, bk=32, stages=2):
    for name, v, t in (("m", m, BM), ("n", n, bn), ("k", k, bk)):
        if v <= 0 or v % t:
            raise ValueError(f"tma_wgmma_gemm: {name}={v} must be a positive multiple of {t} (the kernel's tile)")
    if bn not in (64, 128) or bk not in C.A_SWIZZLE or stages < 2:
        raise ValueError(f"tma_wgmma_gemm: bn={bn}, bk={bk}, stages={stages}: bn 64 or 128, bk 16, 32 or 64, "
                         "stages >= 2")
    A, B = C.gemm_inputs(rng, m, n, k)
    out = np.full((m, n), np.nan, np.float32)         # NaN: every element must be written
    maps = tuple(gpusim.TensorMap(x, **kw) for x, kw in zip((A, B, out), C.gemm_maps(bn, bk)))
    kernel = gpusim.CudaSource(CU, kernel_name(bn, bk, stages), options=("-std=c++17",))
    return Case("tma_wgmma_gemm", kernel, (n // bn, m // BM), (128,), maps + (np.int32(m), np.int32(n), np.int32(k)),
                Deferred({2: lambda: reference(A, B)}), shared_bytes=C.gemm_shared_bytes(bn, bk, stages), rtol=RTOL,
                atol=G.atol(k))


PROGRAM = ProgramSpec(
    "tma_wgmma_gemm", "C = A B (f16 in, f32 out) with TMA loads into an mbarrier pipeline and wgmma (sm_90a)",
    build, sizes=dict(C.GEMM_SIZES), tags=("cuda", "tensor", "gemm", "hopper"))
