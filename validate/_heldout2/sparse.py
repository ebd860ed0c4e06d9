"""CSR sparse matrix-vector products, y = A x, with one thread per row and with one warp per
row (lanes stride the row, shuffle reduction), each on three matrices: every row the same
length (16 nonzeros, and 4 nonzeros on four times the rows) and power-law row lengths
(Zipf, exponent 2, scaled by 4 and capped at 4,096: most rows short, a few hundred at the
cap, as in web and social graphs). Columns are uniform random over a vector of as many
entries as rows.

Entries are small integers stored as float32, so every row sum is exact in any order.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

from programs.base import Case
from validate._heldout2 import blocks, small_ints

BLOCK = 256
FULL_MASK = 0xFFFFFFFF


@cuda.jit
def spmv_thread_row(rowptr, colidx, vals, x, y):
    r = cuda.grid(1)
    if r < y.size:
        acc = float32(0)
        for k in range(rowptr[r], rowptr[r + 1]):
            acc += vals[k] * x[colidx[k]]
        y[r] = acc


@cuda.jit
def spmv_warp_row(rowptr, colidx, vals, x, y):
    r = cuda.grid(1) // 32
    lane = cuda.threadIdx.x % 32
    if r < y.size:                              # the same for the whole warp
        acc = float32(0)
        for k in range(rowptr[r] + lane, rowptr[r + 1], 32):
            acc += vals[k] * x[colidx[k]]
        off = 16
        while off > 0:
            acc += cuda.shfl_down_sync(FULL_MASK, acc, off)
            off //= 2
        if lane == 0:
            y[r] = acc


def row_lengths(rng, rows: int, kind: str, nnz_per_row: int = 16, cap: int = 4096) -> np.ndarray:
    """Nonzeros per row: `nnz_per_row` each ("uniform") or 4 * Zipf(2) capped at `cap` ("powerlaw")."""
    if kind == "uniform":
        return np.full(rows, nnz_per_row, np.int64)
    if kind == "powerlaw":
        return np.minimum(rng.zipf(2.0, rows) * 4, cap)
    raise ValueError(f"spmv: kind must be 'uniform' or 'powerlaw', got {kind!r}")


def csr(rng, rows: int, kind: str, nnz_per_row: int = 16):
    """CSR arrays (int32 rowptr and colidx, float32 values), x, and the float32 y = A x."""
    lengths = row_lengths(rng, rows, kind, nnz_per_row)
    rowptr = np.zeros(rows + 1, np.int32)
    np.cumsum(lengths, out=rowptr[1:])
    nnz = int(rowptr[-1])
    colidx = rng.integers(0, rows, nnz, dtype=np.int32)
    vals = small_ints(rng, nnz, -4, 4)
    x = small_ints(rng, rows, -4, 4)
    y = np.bincount(np.repeat(np.arange(rows), lengths), weights=vals * x[colidx], minlength=rows)
    return rowptr, colidx, vals, x, y.astype(np.float32)


def build_spmv_thread_row(rng, rows, kind, nnz_per_row=16):
    rowptr, colidx, vals, x, want = csr(rng, rows, kind, nnz_per_row)
    return Case("spmv_thread_row", spmv_thread_row, (blocks(rows, BLOCK),), (BLOCK,),
                (rowptr, colidx, vals, x, np.full(rows, np.nan, np.float32)), {4: want})


def build_spmv_warp_row(rng, rows, kind, nnz_per_row=16):
    rowptr, colidx, vals, x, want = csr(rng, rows, kind, nnz_per_row)
    return Case("spmv_warp_row", spmv_warp_row, (blocks(rows * 32, BLOCK),), (BLOCK,),
                (rowptr, colidx, vals, x, np.full(rows, np.nan, np.float32)), {4: want})
