"""matmul_naive: C = A @ B in float32, one thread per output element.

Each thread walks a row of A and a column of B in global memory. What it teaches:
- arithmetic intensity: every multiply-add loads 8 bytes, about 0.25 flop/byte,
  far below the ~100+ flop/byte a GPU needs to be compute bound; the caches are
  what keep it from being even slower;
- coalescing: within a warp (consecutive tx = consecutive columns) the B[kk, col]
  load is coalesced and the A[row, kk] load is a broadcast of one word.
Compare with matmul_tiled.

Launch: 2-D, block (16, 16), grid (ceil(n / 16), ceil(m / 16)).
"""
from numba import cuda, float32

from programs._matmul import MATMUL_SIZES, build_matmul
from programs.base import ProgramSpec


@cuda.jit
def matmul_naive(a, b, c):
    m = a.shape[0]
    k = a.shape[1]
    n = b.shape[1]
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if row < m and col < n:
        acc = float32(0)                       # float32, not 0.0 (which is float64)
        for kk in range(k):
            acc += a[row, kk] * b[kk, col]
        c[row, col] = acc


def build(rng, m, n, k):
    return build_matmul("matmul_naive", matmul_naive, rng, m, n, k)


PROGRAM = ProgramSpec(
    "matmul_naive", "float32 matrix multiply, every operand read from global memory",
    build, sizes=MATMUL_SIZES, tags=("matmul", "compute", "arithmetic-intensity"))
