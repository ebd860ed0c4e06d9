"""histogram_global: 256-bin histogram of uint8 values with global atomics.

One thread per element does `cuda.atomic.add(bins, x[i], 1)` on global memory.
What it teaches: atomics are serialised per address -- when many lanes of a warp
(and many warps across the GPU) hit the same hot bin, the updates queue up in the
L2 atomic units, so throughput depends on the data distribution, not just on n.
Compare with histogram_shared.

Launch: 1-D, 256 threads per block, ceil(n / 256) blocks.
"""
from numba import cuda

from programs._histogram import BLOCK, build_histogram
from programs.base import ProgramSpec


@cuda.jit
def histogram_global(x, bins):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(bins, x[i], 1)         # contended on hot bins


def build(rng, n):
    return build_histogram("histogram_global", histogram_global, rng, n, (n + BLOCK - 1) // BLOCK)


PROGRAM = ProgramSpec(
    "histogram_global", "256-bin histogram with one global atomicAdd per element",
    build, sizes={"small": {"n": 16_384}, "default": {"n": 65_536}, "large": {"n": 1 << 24}},
    tags=("atomics", "contention"))
