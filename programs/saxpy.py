"""saxpy: y[i] = a * x[i] + y[i], float32, with a scalar argument `a`.

What it teaches: a kernel with a scalar parameter (passed as np.float32 so Numba
types it float32, not float64); a read-modify-write of y (8 bytes loaded + 4 stored
per 2 flops: memory bound); the compiler contracts a*x+y into one fma.rn.f32.

Launch: 1-D, 256 threads per block, ceil(n / 256) blocks.
"""
import numpy as np
from numba import cuda

from programs.base import Case, ProgramSpec

BLOCK = 256


@cuda.jit
def saxpy(a, x, y):
    i = cuda.grid(1)
    if i < y.size:
        y[i] = a * x[i] + y[i]


def build(rng, n, a=2.5):
    alpha = np.float32(a)
    x = rng.uniform(0.5, 1.5, n).astype(np.float32)
    y = rng.uniform(0.5, 1.5, n).astype(np.float32)
    want = (np.float64(alpha) * x.astype(np.float64) + y).astype(np.float32)
    # Tolerance: a, x, y > 0, so no cancellation. Separate mul and add round twice
    # (relative error <= 2u, u = 2^-24), a fused fma once; the float32 reference is
    # itself within u/2 of the exact value. rtol = 4u covers both with margin.
    return Case("saxpy", saxpy, ((n + BLOCK - 1) // BLOCK,), (BLOCK,),
                (alpha, x, y), {2: want}, rtol=4 * 2.0**-24, atol=0.0)


PROGRAM = ProgramSpec(
    "saxpy", "y = a*x + y in float32 with a scalar argument (memory bound, fma)", build,
    sizes={"default": {"n": 16_384}, "medium": {"n": 65_536}, "large": {"n": 1 << 24}},
    tags=("memory-bound", "coalescing", "elementwise", "scalar-arg"))
