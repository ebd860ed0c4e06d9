"""SGEMM, C = A B in float32, two ways: the textbook shared-memory tiling (32x32 tiles, one
output per thread, 1,024 threads a block) and a register-tiled kernel (a 128x128 block tile,
K in steps of 8 through shared memory with A stored transposed, 256 threads each computing
an 8x8 block of outputs from 8 + 8 values held in local arrays that the compiler keeps in
registers). m and n are multiples of 128 (32 for the shared tiles), k of 8 (32).

Entries are small integers stored as float32 (|C| <= 4 K < 2^24): exact in any order.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

from programs.base import Case
from validate._heldout2 import small_ints

T = 32                                  # sgemm_shared_tile
BM = BN = 128                           # sgemm_reg_8x8: block tile
BK = 8
TM = TN = 8                             # outputs per thread: TM x TN
REG_THREADS = (BM // TM) * (BN // TN)   # 256


@cuda.jit
def sgemm_shared_tile(a, b, c):
    sa = cuda.shared.array((T, T), float32)
    sb = cuda.shared.array((T, T), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * T + ty
    col = cuda.blockIdx.x * T + tx
    acc = float32(0)
    for k0 in range(0, a.shape[1], T):
        sa[ty, tx] = a[row, k0 + tx]
        sb[ty, tx] = b[k0 + ty, col]
        cuda.syncthreads()
        for k in range(T):
            acc += sa[ty, k] * sb[k, tx]
        cuda.syncthreads()
    c[row, col] = acc


@cuda.jit
def sgemm_reg_8x8(a, b, c):
    at = cuda.shared.array((BK, BM), float32)       # A tile, transposed: at[k, m]
    bs = cuda.shared.array((BK, BN), float32)
    acc = cuda.local.array((TM, TN), float32)
    af = cuda.local.array(TM, float32)
    bf = cuda.local.array(TN, float32)
    tid = cuda.threadIdx.x
    tr = tid // (BN // TN)
    tc = tid % (BN // TN)
    brow = cuda.blockIdx.y * BM
    bcol = cuda.blockIdx.x * BN
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0)
    ar = tid // 2                       # A tile: 128 rows x 8, four consecutive values a thread
    ac = (tid % 2) * 4
    br = tid // 32                      # B tile: 8 rows x 128
    bc = (tid % 32) * 4
    for k0 in range(0, a.shape[1], BK):
        for q in range(4):
            at[ac + q, ar] = a[brow + ar, k0 + ac + q]
            bs[br, bc + q] = b[k0 + br, bcol + bc + q]
        cuda.syncthreads()
        for kk in range(BK):
            for i in range(TM):
                af[i] = at[kk, tr * TM + i]
            for j in range(TN):
                bf[j] = bs[kk, tc * TN + j]
            for i in range(TM):
                for j in range(TN):
                    acc[i, j] += af[i] * bf[j]
        cuda.syncthreads()
    for i in range(TM):
        for j in range(TN):
            c[brow + tr * TM + i, bcol + tc * TN + j] = acc[i, j]


# ---- builders ----------------------------------------------------------------------

def _operands(rng, m, n, k, mn_multiple, k_multiple):
    if m % mn_multiple or n % mn_multiple or k % k_multiple:
        raise ValueError(f"sgemm: m and n must be multiples of {mn_multiple} and k of {k_multiple}, "
                         f"got {m}, {n}, {k}")
    a = small_ints(rng, (m, k), -2, 2)
    b = small_ints(rng, (k, n), -2, 2)
    return a, b, a @ b


def build_shared_tile(rng, m, n, k):
    a, b, want = _operands(rng, m, n, k, T, T)
    return Case("sgemm_shared_tile", sgemm_shared_tile, (n // T, m // T), (T, T),
                (a, b, np.full((m, n), np.nan, np.float32)), {2: want})


def build_reg_8x8(rng, m, n, k):
    a, b, want = _operands(rng, m, n, k, BM, BK)
    return Case("sgemm_reg_8x8", sgemm_reg_8x8, (n // BN, m // BM), (REG_THREADS,),
                (a, b, np.full((m, n), np.nan, np.float32)), {2: want})
