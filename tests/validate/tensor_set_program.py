"""A CUDA C++ program for the tensor-set harness's tests (validate/tensor_set): the cp.async GEMM
of tests/timing/cp_async_gemm.cu, single- or double-buffered, as a ProgramSpec."""
from pathlib import Path

import numpy as np

import gpusim
from programs.base import Case, ProgramSpec

CU = Path(__file__).resolve().parents[1] / "timing" / "cp_async_gemm.cu"


def build(rng, m, n, k, stages=2):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    kernel = gpusim.CudaSource(CU, "gemm_double" if stages == 2 else "gemm_single", options=("-std=c++17",))
    return Case("cp_async_gemm", kernel, (n // 32, m // 32), (16, 16), (a, b, c, np.int32(n), np.int32(k)),
                {2: a @ b}, rtol=1e-4, atol=1e-3)


PROGRAM = ProgramSpec("cp_async_gemm", "fp32 GEMM with cp.async tiles (tests)", build,
                      sizes={"default": {"m": 32, "n": 32, "k": 64}})
