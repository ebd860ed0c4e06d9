"""transpose_padded: b = a.T through a 32x33 shared-memory tile.

Identical to transpose_shared except the tile is 33 floats wide. What it teaches:
one word of padding per row shifts each row by one bank, so the column read
tile[tx, ty + j] (word 33*tx + ty + j) puts the 32 lanes in 32 different banks:
conflict-free, at the cost of 128 bytes of unused shared memory per block.

Launch: 2-D, block (32, 8), grid (ceil(cols / 32), ceil(rows / 32)); each thread
moves 4 elements of its tile. Shared: 32*33 float32 = 4.125 KiB per block.
"""
from numba import cuda, float32

from programs._transpose import BLOCK_ROWS, TILE, TRANSPOSE_SIZES, build_transpose
from programs.base import ProgramSpec

TILE_PADDED = TILE + 1      # shared array shapes must be plain constants


@cuda.jit
def transpose_padded(a, b):
    tile = cuda.shared.array((TILE, TILE_PADDED), float32)  # +1: rows shift by one bank
    rows = a.shape[0]
    cols = a.shape[1]
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if x < cols and y + j < rows:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if x < rows and y + j < cols:
            b[y + j, x] = tile[tx, ty + j]               # conflict-free thanks to padding


def build(rng, rows, cols):
    return build_transpose("transpose_padded", transpose_padded, rng, rows, cols)


PROGRAM = ProgramSpec(
    "transpose_padded", "matrix transpose through a padded 32x33 shared tile (conflict-free)",
    build, sizes=TRANSPOSE_SIZES, tags=("transpose", "coalescing", "shared-memory"))
