"""transpose_naive: b = a.T for a float32 matrix, straight from global memory.

Each thread copies a[y, x] to b[x, y]. What it teaches: the read is coalesced
(a warp reads 32 consecutive floats of one row of a) but the write is strided: the
32 lanes of a warp write one column of b, 32 different rows `rows * 4` bytes
apart, so each warp store touches 32 separate 32-byte sectors -- an 8x waste of
store bandwidth. Compare with transpose_shared and transpose_padded.

Launch: 2-D, block (32, 8), grid (ceil(cols / 32), ceil(rows / 32)); each thread
moves 4 elements of its 32x32 tile.
"""
from numba import cuda

from programs._transpose import BLOCK_ROWS, TILE, TRANSPOSE_SIZES, build_transpose
from programs.base import ProgramSpec


@cuda.jit
def transpose_naive(a, b):
    rows = a.shape[0]
    cols = a.shape[1]
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x        # column of a
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y        # row of a
    for j in range(0, TILE, BLOCK_ROWS):
        if x < cols and y + j < rows:
            b[x, y + j] = a[y + j, x]                    # strided (uncoalesced) store


def build(rng, rows, cols):
    return build_transpose("transpose_naive", transpose_naive, rng, rows, cols)


PROGRAM = ProgramSpec(
    "transpose_naive", "matrix transpose straight through global memory (uncoalesced stores)",
    build, sizes=TRANSPOSE_SIZES, tags=("transpose", "coalescing"))
