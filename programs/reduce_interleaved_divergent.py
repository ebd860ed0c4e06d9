"""reduce_interleaved_divergent: per-block sum, rung 1 of Mark Harris's reduction
ladder ("Optimizing Parallel Reduction in CUDA", 2007, kernel 1).

Each block loads 256 floats into shared memory and halves the number of active
threads each step with `if tid % (2*s) == 0`. What it teaches:
- warp divergence: at step s only every (2s)-th thread works, yet every warp that
  holds one active lane still issues the instruction; with s = 1 half the lanes of
  every warp are idle, and warps stay busy until s = 32;
- the modulo itself is expensive (integer % is a multi-instruction sequence).
Compare its instruction count with reduce_interleaved_strided.

Launch: 1-D, 256 threads per block, ceil(n / 256) blocks; out[b] = sum of block b.
"""
from numba import cuda, float32

from programs._reduction import BLOCK, REDUCTION_SIZES, build_reduction
from programs.base import ProgramSpec


@cuda.jit
def reduce_interleaved_divergent(x, out, n):
    sdata = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tid
    sdata[tid] = x[i] if i < n else float32(0)
    cuda.syncthreads()
    s = 1
    while s < cuda.blockDim.x:
        if tid % (2 * s) == 0:                 # divergent: active lanes are scattered
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s *= 2
    if tid == 0:
        out[cuda.blockIdx.x] = sdata[0]


def build(rng, n):
    return build_reduction("reduce_interleaved_divergent", reduce_interleaved_divergent, rng, n)


PROGRAM = ProgramSpec(
    "reduce_interleaved_divergent",
    "per-block sum, interleaved addressing with tid % (2s) (divergent warps)", build,
    sizes=REDUCTION_SIZES, tags=("reduction", "divergence", "shared-memory"))
