"""reduce_first_add: per-block sum, rung 4 of Mark Harris's reduction ladder
(kernel 4, "first add during global load").

Each thread adds two elements (i and i + blockDim) while loading, so each block
covers 512 elements and half as many blocks are launched; then the sequential tree
of reduce_sequential. What it teaches: no thread is idle on the first step, and the
same work is done with half the blocks (less per-block overhead: fewer syncthreads
and tree steps per element).

Launch: 1-D, 256 threads per block, ceil(n / 512) blocks; out[b] = sum of the
512 elements of block b.
"""
from numba import cuda, float32

from programs._reduction import BLOCK, REDUCTION_SIZES, build_reduction
from programs.base import ProgramSpec


@cuda.jit
def reduce_first_add(x, out, n):
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
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        out[cuda.blockIdx.x] = sdata[0]


def build(rng, n):
    return build_reduction("reduce_first_add", reduce_first_add, rng, n, elems_per_thread=2)


PROGRAM = ProgramSpec(
    "reduce_first_add",
    "per-block sum, two elements added per thread on load, half the blocks", build,
    sizes=REDUCTION_SIZES, tags=("reduction", "shared-memory"))
