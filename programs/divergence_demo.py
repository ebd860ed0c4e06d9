"""divergence_demo: two kinds of warp divergence in one small integer kernel.

For v = x[i] (an int32 in [0, 1000)):
  1. lane-parity branch: even lanes start from acc = 3*v + 1, odd lanes from
     acc = v // 2 - 7. The two paths are executed one after the other with half
     the warp masked off each time (SIMT efficiency 50% over the branch);
  2. data-dependent loop: `v % 32` iterations of acc = (5*acc + t) % 65521. A warp
     keeps issuing until its slowest lane is done, so the warp's cost is the max
     trip count over its lanes (~31) while the average lane needs ~15.5.
out[i] = acc. Integer arithmetic, exact. `//` and `%` follow Python semantics in
Numba (floor division, non-negative modulo for a positive divisor), which odd
lanes exercise: v // 2 - 7 is negative for v < 14.

Launch: 1-D, 256 threads per block, ceil(n / 256) blocks.
"""
import numpy as np
from numba import cuda

from programs.base import Case, ProgramSpec

BLOCK = 256
MODULUS = 65521


@cuda.jit
def divergence_demo(x, out):
    i = cuda.grid(1)
    if i < out.size:
        v = x[i]
        if cuda.laneid % 2 == 0:               # lane-parity branch: both paths run
            acc = 3 * v + 1
        else:
            acc = v // 2 - 7
        trips = v % 32                         # data-dependent trip count
        for t in range(trips):
            acc = (5 * acc + t) % MODULUS
        out[i] = acc


def reference(x, lanes):
    v = x.astype(np.int64)
    acc = np.where(lanes % 2 == 0, 3 * v + 1, v // 2 - 7)
    trips = v % 32
    for t in range(int(trips.max(initial=0))):
        acc = np.where(t < trips, (5 * acc + t) % MODULUS, acc)
    return acc.astype(np.int32)


def build(rng, n):
    x = rng.integers(0, 1000, n).astype(np.int32)
    out = np.full(n, -1, np.int32)             # -1 can never be a result (all are >= -7 and set)
    # lane = threadIdx.x % 32; with a 1-D block that is a multiple of 32, i % 32.
    want = reference(x, np.arange(n) % 32)
    return Case("divergence_demo", divergence_demo, ((n + BLOCK - 1) // BLOCK,), (BLOCK,),
                (x, out), {1: want})


PROGRAM = ProgramSpec(
    "divergence_demo", "lane-parity branch and data-dependent loop trip count (SIMT efficiency)",
    build, sizes={"default": {"n": 16_384}, "medium": {"n": 65_536}, "large": {"n": 1 << 24}},
    tags=("divergence",))
