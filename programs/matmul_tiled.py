"""matmul_tiled: C = A @ B in float32 with 16x16 shared-memory tiles.

Each block stages a 16x16 tile of A and of B in shared memory per step of k, then
every thread does 16 multiply-adds from shared memory. What it teaches:
- data reuse: each global element is loaded once per block instead of 16 times,
  raising arithmetic intensity 16x over matmul_naive;
- the two __syncthreads() per step (tile loaded before use; used before
  overwritten) and their cost;
- shared-memory access patterns: sA[ty, j] is a broadcast within a warp row,
  sB[j, tx] is conflict-free (consecutive words);
- zero-filling a partial tile so m, n, k need not be multiples of 16.

Launch: 2-D, block (16, 16), grid (ceil(n / 16), ceil(m / 16)).
Shared: 2 * 16*16 float32 = 2 KiB per block.
"""
from numba import cuda, float32

from programs._matmul import MATMUL_SIZES, TILE, build_matmul
from programs.base import ProgramSpec


@cuda.jit
def matmul_tiled(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    m = a.shape[0]
    k = a.shape[1]
    n = b.shape[1]
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    acc = float32(0)
    for t in range((k + TILE - 1) // TILE):
        kk = t * TILE + tx
        if row < m and kk < k:
            sa[ty, tx] = a[row, kk]
        else:
            sa[ty, tx] = float32(0)
        kk = t * TILE + ty
        if kk < k and col < n:
            sb[ty, tx] = b[kk, col]
        else:
            sb[ty, tx] = float32(0)
        cuda.syncthreads()                     # tiles complete before anyone reads
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()                     # everyone done before the next load
    if row < m and col < n:
        c[row, col] = acc


def build(rng, m, n, k):
    return build_matmul("matmul_tiled", matmul_tiled, rng, m, n, k)


PROGRAM = ProgramSpec(
    "matmul_tiled", "float32 matrix multiply with 16x16 shared-memory tiles",
    build, sizes=MATMUL_SIZES, tags=("matmul", "compute", "shared-memory", "arithmetic-intensity"))
