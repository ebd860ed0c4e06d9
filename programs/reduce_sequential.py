"""reduce_sequential: per-block sum, rung 3 of Mark Harris's reduction ladder
(kernel 3, "sequential addressing").

The stride s starts at blockDim/2 and halves: thread tid adds sdata[tid + s] into
sdata[tid]. What it teaches:
- no divergence within a warp until s < 32 (active threads are contiguous);
- no bank conflicts: consecutive lanes read consecutive words;
- but half the threads are idle from the very first step (they only loaded one
  element each) -- fixed by reduce_first_add.

Launch: 1-D, 256 threads per block, ceil(n / 256) blocks; out[b] = sum of block b.
"""
from numba import cuda, float32

from programs._reduction import BLOCK, REDUCTION_SIZES, build_reduction
from programs.base import ProgramSpec


@cuda.jit
def reduce_sequential(x, out, n):
    sdata = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tid
    sdata[tid] = x[i] if i < n else float32(0)
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:                            # contiguous lanes, conflict-free
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        out[cuda.blockIdx.x] = sdata[0]


def build(rng, n):
    return build_reduction("reduce_sequential", reduce_sequential, rng, n)


PROGRAM = ProgramSpec(
    "reduce_sequential",
    "per-block sum, sequential addressing s = blockDim/2 .. 1 (no conflicts)", build,
    sizes=REDUCTION_SIZES, tags=("reduction", "shared-memory"))
