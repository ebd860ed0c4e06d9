"""local_array_sort: each thread bubble-sorts its own row of k <= 8 int32 values.

Thread i copies x[i, :] into `cuda.local.array(8, int32)`, bubble-sorts it (28
compare-and-swaps for k = 8) and writes the sorted row to out[i, :]. What it
teaches:
- per-thread arrays and local memory: the compiler keeps such an array in
  registers only if every index is known at compile time (fully unrolled loops).
  Here the row length comes from x.shape[1] at run time, so the loops cannot be
  unrolled and the array lives in *local memory* (thread-private, in DRAM, cached
  in L1): the PTX has st.local/ld.local. With a constant trip count the whole
  array would be promoted to registers and no local access would remain;
- data-dependent swaps: lanes take the swap branch at different times, a mild
  form of divergence;
- strided global access: lane i reads k consecutive ints at byte offset 4*k*i, so
  one warp load instruction spans 1 KiB for k = 8 (32 sectors) and uses each only
  1/8 -- the classic array-of-structures pattern.
Exact int32.

Launch: 1-D, 128 threads per block, ceil(n / 128) blocks; x and out are (n, k).
"""
import numpy as np
from numba import cuda, int32

from programs.base import Case, ProgramSpec

BLOCK = 128
K = 8


@cuda.jit
def local_array_sort(x, out):
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return
    m = x.shape[1]                             # row length, known only at run time (<= K)
    v = cuda.local.array(K, int32)
    for k in range(m):
        v[k] = x[i, k]                         # stride of 4*m bytes between lanes
    for a in range(m - 1):
        for b in range(m - 1 - a):
            if v[b] > v[b + 1]:                # data-dependent swap
                t = v[b]
                v[b] = v[b + 1]
                v[b + 1] = t
    for k in range(m):
        out[i, k] = v[k]


def build(rng, n, k=K):
    if not 1 <= k <= K:
        raise ValueError(f"local_array_sort: row length k must be in 1..{K}, got {k}")
    x = rng.integers(-1_000_000, 1_000_001, (n, k)).astype(np.int32)
    out = np.full((n, k), np.iinfo(np.int32).min, np.int32)   # sentinel outside the value range
    return Case("local_array_sort", local_array_sort, ((n + BLOCK - 1) // BLOCK,), (BLOCK,),
                (x, out), {1: np.sort(x, axis=1)})


PROGRAM = ProgramSpec(
    "local_array_sort", "per-thread bubble sort of 8 ints in a cuda.local.array",
    build, sizes={"default": {"n": 4096}, "medium": {"n": 16_384}, "large": {"n": 1 << 22}},
    tags=("local-memory", "divergence", "coalescing"))
