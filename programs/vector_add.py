"""vector_add: c[i] = a[i] + b[i] over n float32 elements.

The "hello world" of GPU kernels. What it teaches:
- one thread per element, and the bounds check a partial last block needs;
- perfect coalescing: a warp's 32 consecutive float32 loads are one 128-byte
  request per array, so the kernel runs at DRAM bandwidth (12 bytes moved per flop,
  hopelessly memory bound on any GPU).

Launch: 1-D, 256 threads per block, ceil(n / 256) blocks.
"""
import numpy as np
from numba import cuda

from programs.base import Case, ProgramSpec

BLOCK = 256


@cuda.jit
def vector_add(a, b, c):
    i = cuda.grid(1)
    if i < c.size:
        c[i] = a[i] + b[i]


def _nonzero_float32(rng, n):
    """Magnitudes in [0.5, 2), random sign: never zero, exponents within 2 binades."""
    return (rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)).astype(np.float32)


def build(rng, n):
    a = _nonzero_float32(rng, n)
    b = _nonzero_float32(rng, n)
    c = np.full(n, np.nan, np.float32)          # NaN: an element never written fails the check
    # Exact: the float64 sum of two float32 whose exponents differ by < 29 is exact, so
    # rounding it once to float32 equals IEEE float32 addition (add.rn.f32) bit for bit.
    want = (a.astype(np.float64) + b).astype(np.float32)
    return Case("vector_add", vector_add, ((n + BLOCK - 1) // BLOCK,), (BLOCK,),
                (a, b, c), {2: want})


PROGRAM = ProgramSpec(
    "vector_add", "c = a + b, one float32 per thread (coalesced, memory bound)", build,
    sizes={"default": {"n": 16_384}, "medium": {"n": 65_536}, "large": {"n": 1 << 24}},
    tags=("memory-bound", "coalescing", "elementwise"))
