"""The PROGRAM of wmma_gemm.cu: C = A B with nvcuda::wmma fragments (f16 or bf16 in, f32
accumulate), 16 x 16 x 16 fragments from padded shared-memory tiles.

    gpusim run programs/cuda_kernels/wmma_gemm.py                      # 32 x 32 x 32, one block
    gpusim run programs/cuda_kernels/wmma_gemm.py --size bf16          # bf16 inputs
    gpusim run programs/cuda_kernels/wmma_gemm.py --set pad=0          # unpadded tiles

Sizes: `tile` is the block's BM = BN (four warps of tile/2 x tile/2); BK = 32.
"""
from pathlib import Path

import numpy as np

import gpusim
from programs.base import Case, Deferred, ProgramSpec
from programs.cuda_kernels import _gemm as G

CU = Path(__file__).with_suffix(".cu")
BK = 32
CTYPE = {"f16": "half", "bf16": "__nv_bfloat16"}


def kernel_name(dtype: str, tile: int, pad: int) -> str:
    return f"wmma_gemm<{CTYPE[dtype]}, {tile}, {tile}, {BK}, {tile // 2}, {tile // 2}, {pad}>"


def build(rng, m, n, k, tile=32, dtype="f16", pad=8):
    G.check_tile("wmma_gemm", m, n, k, tile, tile, BK)
    if dtype not in CTYPE:
        raise ValueError(f"wmma_gemm: dtype={dtype!r}: f16 or bf16")
    A, B, a32, b32 = G.inputs(rng, m, n, k, dtype)
    C = np.full((m, n), np.nan, np.float32)
    kernel = gpusim.CudaSource(CU, kernel_name(dtype, tile, pad))
    return Case("wmma_gemm", kernel, (n // tile, m // tile), (128,),
                (A, B, C, np.int32(m), np.int32(n), np.int32(k)), Deferred({2: lambda: G.reference(a32, b32)}),
                rtol=G.RTOL, atol=G.atol(k))


PROGRAM = ProgramSpec(
    "wmma_gemm", "C = A B with nvcuda::wmma (f16/bf16 in, f32 accumulate) from shared-memory tiles", build,
    sizes={"default": {"m": 32, "n": 32, "k": 32, "tile": 32, "dtype": "f16", "pad": 8},
           "bf16": {"m": 32, "n": 32, "k": 32, "tile": 32, "dtype": "bf16", "pad": 8},
           "medium": {"m": 128, "n": 128, "k": 128, "tile": 64, "dtype": "f16", "pad": 8},
           "medium_bf16": {"m": 128, "n": 128, "k": 128, "tile": 64, "dtype": "bf16", "pad": 8},
           "large": {"m": 2048, "n": 2048, "k": 2048, "tile": 64, "dtype": "f16", "pad": 8}},
    tags=("cuda", "tensor", "gemm"))
