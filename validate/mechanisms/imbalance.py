"""Uneven work per warp (issue 24: a warp-per-row CSR SpMV with skewed rows predicted 44%
too slow): the same number of elements summed by a warp per row, with equal rows or with
power-law row lengths (a few rows thousands of elements long), in random or descending
order. There is no column gather: what differs between the sizes is only how the work
is spread over warps, so the measured time shows how a long row's single warp streams
(its loads per cycle, the latency it hides) and how the grid's tail ends.

- `ragged_rows`: warp r sums row r's elements x[rowptr[r] .. rowptr[r + 1]), its lanes
  32 apart, and each lane stores its partial sum at out[32 r + lane] (no shuffles).
Values are small integers (exact float sums in any order).
What each size decides: docs/mechanisms_24.md.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

from programs.base import Case, ProgramSpec


@cuda.jit
def ragged_rows(rowptr, x, out):
    g = cuda.grid(1)
    r = g >> 5
    lane = g & 31
    if r < rowptr.size - 1:
        acc = float32(0)
        for j in range(rowptr[r] + lane, rowptr[r + 1], 32):
            acc += x[j]
        out[g] = acc


def row_lengths(rng, rows: int, mean: int, shape: str) -> np.ndarray:
    if shape == "uniform":
        return np.full(rows, mean, np.int64)
    # Pareto (alpha 1.1) lengths scaled to the mean, at most 1024 x the mean: a heavy tail
    w = np.minimum(rng.pareto(1.1, rows) + 1.0, 1024.0)
    n = np.maximum(1, np.floor(w / w.mean() * mean)).astype(np.int64)
    return -np.sort(-n) if shape == "sorted" else n


def build(rng, rows, mean, shape, threads=256):
    if rows * 32 % threads:
        raise ValueError(f"ragged_rows: {rows} rows of 32 lanes are not a whole number of {threads}-thread blocks")
    n = row_lengths(rng, rows, mean, shape)
    rowptr = np.concatenate([[0], np.cumsum(n)]).astype(np.int64)
    x = (np.arange(rowptr[-1], dtype=np.int64) % 7).astype(np.float32)
    # S[k] = x[k] + x[k - 32] + ...: lane l of row r sums S[last] - S[start - 32]
    pad = -x.size % 32
    s = np.cumsum(np.concatenate([x, np.zeros(pad, np.float32)]).astype(np.float64).reshape(-1, 32), axis=0).ravel()
    start = rowptr[:-1, None] + np.arange(32)[None, :]
    cnt = np.maximum(0, (rowptr[1:, None] - start + 31) // 32)
    last = np.clip(start + (cnt - 1) * 32, 0, s.size - 1)
    before = np.clip(start - 32, 0, s.size - 1)
    want = np.where(cnt > 0, s[last] - np.where(start >= 32, s[before], 0.0), 0.0).astype(np.float32).ravel()
    return Case("ragged_rows", ragged_rows, (rows * 32 // threads,), (threads,),
                (rowptr, x, np.full(rows * 32, np.nan, np.float32)), {2: want})


SPECS = (
    ProgramSpec("ragged_rows", "warp per row, no gather: equal rows vs power-law row lengths (random or sorted)",
                build, sizes={
                    "default": {"rows": 256, "mean": 64, "shape": "skewed", "threads": 64},
                    "uniform": {"rows": 1 << 17, "mean": 64, "shape": "uniform"},
                    "skewed": {"rows": 1 << 17, "mean": 64, "shape": "skewed"},
                    "sorted": {"rows": 1 << 17, "mean": 64, "shape": "sorted"}},
                tags=("imbalance", "tail")),
)
