"""Held-out sparse and dense matrix-vector products: CSR SpMV with one thread per row
(divergent: random row lengths, scattered row starts) and with one warp per row (a
shuffle reduction), on the same random sparse matrix; GEMV with one thread per row of a
row-major matrix (lanes 4*cols bytes apart, reuse through L1) and with one thread per
column (y = A^T x, coalesced).

Matrix and vector entries are small integers stored as float32: every partial sum is an
integer below 2^24, so the results are exact in any summation order.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

from programs.base import Case
from validate._heldout import blocks, small_ints

BLOCK = 128
FULL_MASK = 0xFFFFFFFF


@cuda.jit
def spmv_csr_scalar(rowptr, colidx, data, x, y):
    r = cuda.grid(1)
    if r < y.size:
        acc = float32(0)
        for k in range(rowptr[r], rowptr[r + 1]):
            acc += data[k] * x[colidx[k]]
        y[r] = acc


@cuda.jit
def spmv_csr_vector(rowptr, colidx, data, x, y):
    row = cuda.grid(1) // 32
    lane = cuda.threadIdx.x % 32
    if row < y.size:                            # the same for the whole warp
        acc = float32(0)
        for k in range(rowptr[row] + lane, rowptr[row + 1], 32):
            acc += data[k] * x[colidx[k]]
        offset = 16
        while offset > 0:
            acc += cuda.shfl_down_sync(FULL_MASK, acc, offset)
            offset //= 2
        if lane == 0:
            y[row] = acc


@cuda.jit
def gemv_rowmajor(a, x, y):
    r = cuda.grid(1)
    if r < a.shape[0]:
        acc = float32(0)
        for j in range(a.shape[1]):
            acc += a[r, j] * x[j]
        y[r] = acc


@cuda.jit
def gemv_colaccess(a, x, y):
    c = cuda.grid(1)
    if c < a.shape[1]:
        acc = float32(0)
        for i in range(a.shape[0]):
            acc += a[i, c] * x[i]
        y[c] = acc


# ---- builders ----------------------------------------------------------------------

def random_csr(rng, rows, cols, avg):
    """CSR arrays (int32 rowptr and colidx, float32 data), a dense x and y = A x.
    Row lengths are geometric with mean `avg` (empty rows included), capped at 8 * avg."""
    lengths = np.minimum(rng.geometric(1.0 / (avg + 1), rows) - 1, 8 * avg)
    rowptr = np.zeros(rows + 1, np.int32)
    np.cumsum(lengths, out=rowptr[1:])
    nnz = int(rowptr[-1])
    colidx = rng.integers(0, cols, nnz, dtype=np.int32)
    data = small_ints(rng, nnz, -4, 4)
    x = small_ints(rng, cols, -4, 4)
    y = np.bincount(np.repeat(np.arange(rows), lengths), weights=data * x[colidx], minlength=rows)
    return rowptr, colidx, data, x, y.astype(np.float32)


def build_spmv_scalar(rng, rows, cols, avg=16):
    rowptr, colidx, data, x, want = random_csr(rng, rows, cols, avg)
    return Case("spmv_csr_scalar", spmv_csr_scalar, (blocks(rows, BLOCK),), (BLOCK,),
                (rowptr, colidx, data, x, np.full(rows, np.nan, np.float32)), {4: want})


def build_spmv_vector(rng, rows, cols, avg=16):
    rowptr, colidx, data, x, want = random_csr(rng, rows, cols, avg)
    return Case("spmv_csr_vector", spmv_csr_vector, (blocks(rows * 32, BLOCK),), (BLOCK,),
                (rowptr, colidx, data, x, np.full(rows, np.nan, np.float32)), {4: want})


def build_gemv_rowmajor(rng, rows, cols):
    a = small_ints(rng, (rows, cols), -2, 2)
    x = small_ints(rng, cols, -2, 2)
    return Case("gemv_rowmajor", gemv_rowmajor, (blocks(rows, BLOCK),), (BLOCK,),
                (a, x, np.full(rows, np.nan, np.float32)), {2: a @ x})


def build_gemv_colaccess(rng, rows, cols):
    a = small_ints(rng, (rows, cols), -2, 2)
    x = small_ints(rng, rows, -2, 2)
    return Case("gemv_colaccess", gemv_colaccess, (blocks(cols, BLOCK),), (BLOCK,),
                (a, x, np.full(cols, np.nan, np.float32)), {2: x @ a})
