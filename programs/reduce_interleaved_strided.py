"""reduce_interleaved_strided: per-block sum, rung 2 of Mark Harris's reduction
ladder (kernel 2).

Same tree as reduce_interleaved_divergent, but thread tid works on index 2*s*tid,
so the active threads are contiguous (threads 0..blockDim/(2s)-1). What it teaches:
- divergence removed: whole warps drop out instead of every other lane;
- but shared-memory bank conflicts appear: at step s a warp reads sdata[2*s*tid],
  a stride of 2s words, so lanes collide in the 32 banks (2-way at s = 1, 4-way at
  s = 2, ... up to 16-way), and each conflicting access is replayed.

Launch: 1-D, 256 threads per block, ceil(n / 256) blocks; out[b] = sum of block b.
"""
from numba import cuda, float32

from programs._reduction import BLOCK, REDUCTION_SIZES, build_reduction
from programs.base import ProgramSpec


@cuda.jit
def reduce_interleaved_strided(x, out, n):
    sdata = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tid
    sdata[tid] = x[i] if i < n else float32(0)
    cuda.syncthreads()
    s = 1
    while s < cuda.blockDim.x:
        index = 2 * s * tid                    # contiguous threads, strided banks
        if index < cuda.blockDim.x:
            sdata[index] += sdata[index + s]
        cuda.syncthreads()
        s *= 2
    if tid == 0:
        out[cuda.blockIdx.x] = sdata[0]


def build(rng, n):
    return build_reduction("reduce_interleaved_strided", reduce_interleaved_strided, rng, n)


PROGRAM = ProgramSpec(
    "reduce_interleaved_strided",
    "per-block sum, interleaved addressing with index 2*s*tid (bank conflicts)", build,
    sizes=REDUCTION_SIZES, tags=("reduction", "bank-conflicts", "shared-memory"))
