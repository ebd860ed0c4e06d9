"""The PROGRAM of mma_gemm.cu (STAGES = 2): C = A B with inline PTX mma.sync.m16n8k16 (f16 in,
f32 accumulate), ldmatrix / ldmatrix.trans from shared memory, the next tile copied by cp.async
while this one is multiplied (double buffering). `mma_gemm_single.py` is the same kernel with
STAGES = 1, for timing the two against each other.

    gpusim run programs/cuda_kernels/mma_gemm.py                       # 32 x 32 x 64, one block
    gpusim run programs/cuda_kernels/mma_gemm.py --set pad=0           # ldmatrix bank conflicts

Sizes: `tile` is the block's BM = BN (four warps, 2 x 2, of tile/2 x tile/2); BK = 32.
"""
from pathlib import Path

import numpy as np

import gpusim
from programs.base import Case, Deferred, ProgramSpec
from programs.cuda_kernels import _gemm as G

CU = Path(__file__).with_suffix(".cu")
BK = 32
SIZES = {"default": {"m": 32, "n": 32, "k": 64, "tile": 32, "pad": 8},
         "medium": {"m": 128, "n": 128, "k": 128, "tile": 64, "pad": 8},
         "large": {"m": 2048, "n": 2048, "k": 2048, "tile": 64, "pad": 8}}


def kernel_name(tile: int, stages: int, pad: int) -> str:
    return f"mma_gemm<{tile}, {tile}, {stages}, {pad}>"


def build(rng, m, n, k, tile=32, stages=2, pad=8, name="mma_gemm"):
    G.check_tile(name, m, n, k, tile, tile, BK)
    if stages not in (1, 2):
        raise ValueError(f"{name}: stages={stages}: 1 (single-buffered) or 2 (double-buffered)")
    A, B, a32, b32 = G.inputs(rng, m, n, k, "f16")
    C = np.full((m, n), np.nan, np.float32)
    kernel = gpusim.CudaSource(CU, kernel_name(tile, stages, pad))
    return Case(name, kernel, (n // tile, m // tile), (128,), (A, B, C, np.int32(m), np.int32(n), np.int32(k)),
                Deferred({2: lambda: G.reference(a32, b32)}), rtol=G.RTOL, atol=G.atol(k))


PROGRAM = ProgramSpec("mma_gemm", "C = A B: mma.sync + ldmatrix, cp.async double buffering (inline PTX)", build,
                      sizes=SIZES, tags=("cuda", "tensor", "gemm", "cp.async"))
