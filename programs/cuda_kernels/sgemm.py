"""The PROGRAM of sgemm.cu: C = A B in f32 on the CUDA cores, register tiled (each thread a
TM x TN block of C), the best-effort CUDA-core GEMM the tensor-core programs are compared with.

    gpusim run programs/cuda_kernels/sgemm.py                          # 64 x 64 x 64, one block

Sizes: `tile` is the block's BM = BN with BK = 8; 64: 4 x 4 per thread (256 threads), 128: 8 x 8
per thread (256 threads). Exact to numpy's float64 product within fma rounding (rtol below).
"""
from pathlib import Path

import numpy as np

import gpusim
from programs.base import Case, Deferred, ProgramSpec
from programs.cuda_kernels import _gemm as G

CU = Path(__file__).with_suffix(".cu")
BK = 8
PER_THREAD = {64: 4, 128: 8}


def build(rng, m, n, k, tile=64):
    G.check_tile("sgemm", m, n, k, tile, tile, BK)
    t = PER_THREAD.get(tile)
    if t is None:
        raise ValueError(f"sgemm: tile={tile}: one of {sorted(PER_THREAD)}")
    A, B, a32, b32 = G.inputs(rng, m, n, k, "f32")
    C = np.full((m, n), np.nan, np.float32)
    kernel = gpusim.CudaSource(CU, f"sgemm<{tile}, {tile}, {BK}, {t}, {t}>")
    return Case("sgemm", kernel, (n // tile, m // tile), ((tile // t) ** 2,),
                (A, B, C, np.int32(m), np.int32(n), np.int32(k)), Deferred({2: lambda: G.reference(a32, b32)}),
                rtol=1e-5, atol=1e-5 * np.sqrt(k))


PROGRAM = ProgramSpec("sgemm", "C = A B in f32 on the CUDA cores, register tiled (the tensor GEMMs' baseline)",
                      build, sizes={"default": {"m": 64, "n": 64, "k": 64, "tile": 64},
                                    "medium": {"m": 256, "n": 256, "k": 256, "tile": 128},
                                    "large": {"m": 2048, "n": 2048, "k": 2048, "tile": 128}},
                      tags=("cuda", "gemm"))
