"""histogram_shared: 256-bin histogram with per-block privatised shared bins.

Each block zeroes 256 int32 bins in shared memory, walks its share of the input
with a grid-stride loop doing shared-memory atomics, then merges its bins into the
global histogram with at most 256 global atomics. What it teaches:
- privatisation: contention moves from slow global atomics (L2) to fast
  shared-memory atomics, and global traffic drops from n atomics to
  256 * blocks;
- grid-stride loops: a fixed, GPU-sized grid (`blocks`) independent of n, so
  the merge cost is amortised over many elements per block;
- shared-memory atomics still serialise when lanes of a warp hit the same bin.

Launch: 1-D, 256 threads per block, `blocks` blocks (grid-stride over n).
"""
from numba import cuda, int32

from programs._histogram import NBINS, build_histogram
from programs.base import ProgramSpec


@cuda.jit
def histogram_shared(x, bins):
    sbins = cuda.shared.array(NBINS, int32)
    tid = cuda.threadIdx.x
    for b in range(tid, NBINS, cuda.blockDim.x):
        sbins[b] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < x.size:
        cuda.atomic.add(sbins, x[i], 1)        # shared-memory atomic
        i += stride
    cuda.syncthreads()
    for b in range(tid, NBINS, cuda.blockDim.x):
        count = sbins[b]
        if count != 0:
            cuda.atomic.add(bins, b, count)    # one global atomic per non-empty bin


def build(rng, n, blocks):
    return build_histogram("histogram_shared", histogram_shared, rng, n, blocks)


PROGRAM = ProgramSpec(
    "histogram_shared", "256-bin histogram with per-block shared bins merged by global atomics",
    build, sizes={"small": {"n": 16_384, "blocks": 16},
                  "default": {"n": 65_536, "blocks": 32},
                  "large": {"n": 1 << 24, "blocks": 528}},      # 528 = 4 blocks x 132 SMs (H100 SXM)
    tags=("atomics", "shared-memory", "privatization", "grid-stride"))
