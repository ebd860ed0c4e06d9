"""dynamic_shared: reverse each block's segment of x through dynamic shared memory.

out[start + t] = x[start + count - 1 - t] for each block's `count` valid elements
(count = block except in a partial last block). The shared buffer is declared
`cuda.shared.array(0, float32)`: its size is not compiled in but chosen at launch
(the 4th launch parameter, Case.shared_bytes = block * 4). What it teaches:
- dynamic shared memory: one compiled kernel serves any block size, and the
  shared bytes per block -- hence occupancy -- are a launch-time decision;
- a block-wide permutation needs a barrier between the write and the read;
- both global accesses stay coalesced; the reversal happens in shared memory
  (reversed consecutive words: conflict-free).
Exact copy.

Launch: 1-D, `block` threads per block (default 128), ceil(n / block) blocks,
block * 4 bytes of dynamic shared memory.
"""
import numpy as np
from numba import cuda, float32

from programs.base import Case, ProgramSpec


@cuda.jit
def dynamic_shared(x, out):
    buf = cuda.shared.array(0, float32)        # size set at launch (shared_bytes)
    tid = cuda.threadIdx.x
    start = cuda.blockIdx.x * cuda.blockDim.x
    count = min(cuda.blockDim.x, x.size - start)
    if tid < count:
        buf[tid] = x[start + tid]
    cuda.syncthreads()
    if tid < count:
        out[start + tid] = buf[count - 1 - tid]


def build(rng, n, block=128):
    x = rng.uniform(-100.0, 100.0, n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    grid = (n + block - 1) // block
    want = np.concatenate([x[s:s + block][::-1] for s in range(0, n, block)])
    return Case("dynamic_shared", dynamic_shared, (grid,), (block,), (x, out), {1: want},
                shared_bytes=block * 4)


PROGRAM = ProgramSpec(
    "dynamic_shared", "per-block reversal through cuda.shared.array(0) sized at launch",
    build, sizes={"default": {"n": 16_384, "block": 128},
                  "medium": {"n": 65_536, "block": 128},
                  "large": {"n": 1 << 24, "block": 128}},
    tags=("dynamic-shared", "shared-memory"))
