"""A tiled shared-memory matmul (numba's classic 32 x 32 tiles) for the timing tests: four
waves of two 1,024-thread blocks a SM when large (loop sampling, test_sampling.py), and ptxas
merges its four broadcast `sa[ty, k]` loads into one LDS.128 (test_merged_shared_access.py)."""
from numba import cuda, float32

TILE = 32


@cuda.jit
def tiled_matmul(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    acc = float32(0)
    for k0 in range(0, a.shape[1], TILE):
        sa[ty, tx] = a[row, k0 + tx]
        sb[ty, tx] = b[k0 + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += sa[ty, k] * sb[k, tx]        # sa: one address a warp (broadcast), merged by 4
        cuda.syncthreads()
    c[row, col] = acc
