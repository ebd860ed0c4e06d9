"""reduce_warp_shuffle: per-block sum, the last rung of the reduction ladder.

Like reduce_first_add down to 64 partial sums in shared memory; then the first warp
finishes with register shuffles: `v += cuda.shfl_down_sync(FULL_MASK, v, offset)`
for offset 16, 8, 4, 2, 1. What it teaches:
- the last five tree steps need neither shared memory nor __syncthreads(): lanes of
  one warp exchange registers directly (shfl.sync.down), which replaces Harris's
  "unroll the last warp" with volatile shared memory (unsafe since Volta);
- 5 fewer block-wide barriers and 10 fewer shared accesses per block.

Launch: 1-D, 256 threads per block, ceil(n / 512) blocks; out[b] = sum of the
512 elements of block b.
"""
from numba import cuda, float32

from programs._reduction import BLOCK, REDUCTION_SIZES, build_reduction
from programs.base import ProgramSpec

FULL_MASK = 0xFFFFFFFF


@cuda.jit
def reduce_warp_shuffle(x, out, n):
    sdata = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * (cuda.blockDim.x * 2) + tid
    v = float32(0)
    if i < n:
        v = x[i]
    if i + cuda.blockDim.x < n:
        v += x[i + cuda.blockDim.x]
    sdata[tid] = v
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 32:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid < 32:                               # the whole first warp, converged
        v = sdata[tid] + sdata[tid + 32]
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(FULL_MASK, v, offset)
            offset //= 2
        if tid == 0:
            out[cuda.blockIdx.x] = v


def build(rng, n):
    return build_reduction("reduce_warp_shuffle", reduce_warp_shuffle, rng, n, elems_per_thread=2)


PROGRAM = ProgramSpec(
    "reduce_warp_shuffle",
    "per-block sum, shared tree down to one warp, then shfl_down_sync", build,
    sizes=REDUCTION_SIZES, tags=("reduction", "warp-shuffle", "shared-memory"))
