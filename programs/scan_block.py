"""scan_block: inclusive prefix sum within each block of 256 (Hillis-Steele).

out[i] = sum of x[j] for j from the start of i's block up to i. log2(256) = 8
steps; at step d every thread tid >= d adds sdata[tid - d]. Each step reads, waits
at a barrier, then writes, so no thread overwrites a value another still needs.
What it teaches:
- a work-inefficient but step-efficient scan: 8 steps doing n log n additions
  where a sequential scan needs n;
- two __syncthreads() per step, and how many lanes sit idle (tid < d) as d grows;
- segmented output: a full-array scan would add each block's total to the later
  blocks in a second pass (not done here).
int32 values in [-100, 100], exact.

Launch: 1-D, 256 threads per block, ceil(n / 256) blocks.
Shared: 256 int32 per block.
"""
import numpy as np
from numba import cuda, int32

from programs.base import Case, ProgramSpec

BLOCK = 256


@cuda.jit
def scan_block(x, out):
    sdata = cuda.shared.array(BLOCK, int32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.size
    sdata[tid] = x[i] if i < n else 0
    cuda.syncthreads()
    d = 1
    while d < cuda.blockDim.x:
        t = 0
        if tid >= d:
            t = sdata[tid - d]
        cuda.syncthreads()                     # everyone has read before anyone writes
        if tid >= d:
            sdata[tid] += t
        cuda.syncthreads()
        d *= 2
    if i < n:
        out[i] = sdata[tid]


def build(rng, n):
    x = rng.integers(-100, 101, n).astype(np.int32)
    out = np.full(n, np.iinfo(np.int32).min, np.int32)   # sentinel: |scan| <= 25,600
    grid = (n + BLOCK - 1) // BLOCK
    padded = np.zeros(grid * BLOCK, np.int64)
    padded[:n] = x
    want = np.cumsum(padded.reshape(grid, BLOCK), axis=1).reshape(-1)[:n].astype(np.int32)
    return Case("scan_block", scan_block, (grid,), (BLOCK,), (x, out), {1: want})


PROGRAM = ProgramSpec(
    "scan_block", "inclusive Hillis-Steele prefix sum within each block of 256",
    build, sizes={"default": {"n": 16_384}, "medium": {"n": 65_536}, "large": {"n": 1 << 24}},
    tags=("scan", "shared-memory", "synchronization"))
