"""Held-out kernels about access patterns: row and column gathers with reuse, a strided
read (2/4/8/32 words), a random gather from a small (L1-sized) table, and the same float32
x4 data read as an array of structs and as a struct of arrays.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from programs.base import Case
from validate._heldout import blocks, small_ints

BLOCK = 256


@cuda.jit
def gather_rows(table, idx, out):
    r = cuda.blockIdx.x * cuda.blockDim.y + cuda.threadIdx.y      # blockDim.y rows per block
    j = cuda.threadIdx.x                                           # one thread per column
    if r < out.shape[0] and j < out.shape[1]:
        out[r, j] = table[idx[r], j]


@cuda.jit
def gather_cols(x, idx, out):
    j, i = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = x[i, idx[j]]


@cuda.jit
def strided_read(x, out, stride):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i * stride]


@cuda.jit
def gather_small_table(table, idx, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = table[idx[i]]


@cuda.jit
def aos_read(p, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = p[i, 0] * p[i, 1] + p[i, 2] * p[i, 3]


@cuda.jit
def soa_read(q, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = q[0, i] * q[1, i] + q[2, i] * q[3, i]


# ---- builders ----------------------------------------------------------------------

def build_gather_rows(rng, n, table_rows, cols=64):
    if not 32 <= cols <= BLOCK or cols % 32:
        raise ValueError(f"gather_rows: cols must be a multiple of 32 in 32..{BLOCK}, got {cols}")
    table = rng.standard_normal((table_rows, cols), dtype=np.float32)
    idx = rng.integers(0, table_rows, n, dtype=np.int32)
    block = (cols, BLOCK // cols)
    return Case("gather_rows", gather_rows, (blocks(n, block[1]),), block,
                (table, idx, np.full((n, cols), np.nan, np.float32)), {2: table[idx]})


def build_gather_cols(rng, rows, cols, picks):
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    idx = rng.integers(0, cols, picks, dtype=np.int32)
    grid = (blocks(picks, 32), blocks(rows, 8))
    return Case("gather_cols", gather_cols, grid, (32, 8),
                (x, idx, np.full((rows, picks), np.nan, np.float32)), {2: x[:, idx]})


def build_strided(rng, n, stride):
    x = np.arange(n * stride, dtype=np.int32)          # x[k] = k: a wrong index shows in the output
    x ^= np.int32(rng.integers(0, 1 << 30))
    return Case("strided_read", strided_read, (blocks(n, BLOCK),), (BLOCK,),
                (x, np.full(n, -1, np.int32), stride), {1: x[::stride].copy()})


def build_gather_small_table(rng, n, table_size):
    table = rng.standard_normal(table_size, dtype=np.float32)
    idx = rng.integers(0, table_size, n, dtype=np.int32)
    return Case("gather_small_table", gather_small_table, (blocks(n, BLOCK),), (BLOCK,),
                (table, idx, np.full(n, np.nan, np.float32)), {2: table[idx]})


def _particles(rng, n):
    p = small_ints(rng, (n, 4), -8, 8)                 # products and their sum are exact
    return p, p[:, 0] * p[:, 1] + p[:, 2] * p[:, 3]


def build_aos(rng, n):
    p, want = _particles(rng, n)
    return Case("aos_read", aos_read, (blocks(n, BLOCK),), (BLOCK,), (p, np.full(n, np.nan, np.float32)), {1: want})


def build_soa(rng, n):
    p, want = _particles(rng, n)                       # the same data as aos_read (same seed)
    q = np.ascontiguousarray(p.T)
    return Case("soa_read", soa_read, (blocks(n, BLOCK),), (BLOCK,), (q, np.full(n, np.nan, np.float32)), {1: want})
