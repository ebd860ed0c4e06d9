"""transpose_shared: b = a.T through a 32x32 shared-memory tile.

A block reads a 32x32 tile of a row by row (coalesced), synchronizes, and writes
it to b row by row (coalesced) by reading the tile column-wise. What it teaches:
both global accesses are now coalesced, but the column read tile[tx, ty + j] has
a stride of 32 words, so all 32 lanes of a warp hit the same shared-memory bank: a
32-way bank conflict, replayed 32 times. transpose_padded removes it.

Launch: 2-D, block (32, 8), grid (ceil(cols / 32), ceil(rows / 32)); each thread
moves 4 elements of its tile. Shared: 32*32 float32 = 4 KiB per block.
"""
from numba import cuda, float32

from programs._transpose import BLOCK_ROWS, TILE, TRANSPOSE_SIZES, build_transpose
from programs.base import ProgramSpec


@cuda.jit
def transpose_shared(a, b):
    tile = cuda.shared.array((TILE, TILE), float32)
    rows = a.shape[0]
    cols = a.shape[1]
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if x < cols and y + j < rows:
            tile[ty + j, tx] = a[y + j, x]               # coalesced load, row of tile
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx                      # column of b = row of a
    y = cuda.blockIdx.x * TILE + ty                      # row of b = column of a
    for j in range(0, TILE, BLOCK_ROWS):
        if x < rows and y + j < cols:
            b[y + j, x] = tile[tx, ty + j]               # 32-way bank conflict


def build(rng, rows, cols):
    return build_transpose("transpose_shared", transpose_shared, rng, rows, cols)


PROGRAM = ProgramSpec(
    "transpose_shared", "matrix transpose through a 32x32 shared tile (32-way bank conflicts)",
    build, sizes=TRANSPOSE_SIZES, tags=("transpose", "coalescing", "shared-memory", "bank-conflicts"))
