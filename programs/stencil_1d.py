"""stencil_1d: out[i] = sum_{j=-3..3} w_j * x[i + 3 + j], weights w = 1,2,3,4,3,2,1.

x holds n + 6 values (the 3-element halo on each side is part of the input), out
holds n. Each block stages its 256 elements plus a 3-element halo on each side in
shared memory, then each thread reads 7 neighbours from shared. What it teaches:
- reuse through shared memory: each input element is loaded from global once per
  block instead of 7 times;
- halo loading: the first RADIUS threads also fetch the left and right halo, a
  small load imbalance (divergent branch in warp 0);
- the partial last block: its right halo starts after its last valid element.

Values are small integers stored as float32 (|x| <= 100, |out| <= 1600), so every
partial sum is exact and the check is exact.

Launch: 1-D, 256 threads per block, ceil(n / 256) blocks.
Shared: (256 + 6) float32 per block.
"""
import numpy as np
from numba import cuda, float32

from programs.base import Case, ProgramSpec

BLOCK = 256
RADIUS = 3
SHARED_LEN = BLOCK + 2 * RADIUS       # shared array shapes must be plain constants


@cuda.jit
def stencil_1d(x, out, n):
    temp = cuda.shared.array(SHARED_LEN, float32)
    tid = cuda.threadIdx.x
    start = cuda.blockIdx.x * cuda.blockDim.x
    gi = start + tid
    count = min(cuda.blockDim.x, n - start)              # valid elements in this block
    if tid < count:
        temp[tid + RADIUS] = x[gi + RADIUS]
    if tid < RADIUS:                                     # halo: warp 0 diverges here
        temp[tid] = x[start + tid]
        temp[count + RADIUS + tid] = x[start + count + RADIUS + tid]
    cuda.syncthreads()
    if tid < count:
        acc = float32(0)
        for j in range(-RADIUS, RADIUS + 1):
            w = RADIUS + 1 - abs(j)
            acc += float32(w) * temp[tid + RADIUS + j]
        out[gi] = acc


def build(rng, n):
    x = rng.integers(-100, 101, n + 2 * RADIUS).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    weights = RADIUS + 1 - np.abs(np.arange(-RADIUS, RADIUS + 1))
    want = np.zeros(n, np.float64)
    for j, w in enumerate(weights):
        want += w * x[j:j + n].astype(np.float64)
    return Case("stencil_1d", stencil_1d, ((n + BLOCK - 1) // BLOCK,), (BLOCK,),
                (x, out, n), {1: want.astype(np.float32)})


PROGRAM = ProgramSpec(
    "stencil_1d", "radius-3 weighted 1-D stencil with a shared-memory halo", build,
    sizes={"default": {"n": 16_384}, "medium": {"n": 65_536}, "large": {"n": 1 << 24}},
    tags=("stencil", "shared-memory", "halo"))
