"""float64_axpy: y[i] = a * x[i] + y[i] in float64 (daxpy).

The double-precision twin of saxpy. What it teaches: the same memory-bound loop
moves twice the bytes per element (16 loaded + 8 stored), so it takes about twice
as long on any GPU; FP64 throughput only matters for compute-bound kernels (H100
SXM: 34 TFLOP/s fp64 vs 67 fp32 non-tensor, but consumer GPUs run fp64 at 1/64).
It also exercises 64-bit float registers, loads and the fma.rn.f64 the compiler
contracts a*x+y into.

Tolerance: a, x, y > 0 (no cancellation). Separate mul and add round twice
(relative error <= 2u, u = 2^-53), a fused fma once, and the numpy reference
(two roundings) is within 2u of exact: rtol = 8u = 2^-50 ~ 8.9e-16.

Launch: 1-D, 256 threads per block, ceil(n / 256) blocks.
"""
import numpy as np
from numba import cuda

from programs.base import Case, ProgramSpec

BLOCK = 256


@cuda.jit
def float64_axpy(a, x, y):
    i = cuda.grid(1)
    if i < y.size:
        y[i] = a * x[i] + y[i]


def build(rng, n, a=2.5):
    alpha = np.float64(a)
    x = rng.uniform(0.5, 1.5, n)
    y = rng.uniform(0.5, 1.5, n)
    want = alpha * x + y
    return Case("float64_axpy", float64_axpy, ((n + BLOCK - 1) // BLOCK,), (BLOCK,),
                (alpha, x, y), {2: want}, rtol=2.0**-50, atol=0.0)


PROGRAM = ProgramSpec(
    "float64_axpy", "y = a*x + y in float64 (memory bound, 64-bit floats)", build,
    sizes={"default": {"n": 16_384}, "medium": {"n": 65_536}, "large": {"n": 1 << 24}},
    tags=("memory-bound", "float64", "elementwise"))
