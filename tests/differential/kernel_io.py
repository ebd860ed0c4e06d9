"""Inputs, outputs and the comparison of one composite random kernel (numpy only: imported
by the test, which runs gpusim, and by `cudasim_worker.py`, which runs Numba's simulator)."""
from __future__ import annotations

import numpy as np

from random_kernels import ARGS, ATOMIC_SLOTS, INPUTS, MAX_VARS, OUTPUTS

NIN = len(INPUTS)
OUTPUT_NAMES = ARGS[NIN:]


def make_args(seed: int, nthreads: int, nkernels: int) -> list[np.ndarray]:
    """The composite's arguments, the same in every process for one seed: inputs mixing small
    values and extremes, zeroed outputs, atomic accumulators with random starting values."""
    rng = np.random.default_rng(seed)
    n = nthreads

    def ints(dtype):
        info = np.iinfo(dtype)
        small = rng.integers(-50 if info.min < 0 else 0, 50, n)
        big = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        return np.where(rng.random(n) < 0.5, small, big).astype(dtype)

    xf = (rng.integers(-64, 64, n) / 8.0).astype(np.float32) + rng.random(n).astype(np.float32)
    xd = rng.uniform(-8, 8, n)
    args = [xf if d == "float32" else xd if d == "float64" else ints(np.dtype(d)) for d in INPUTS]
    for d in OUTPUTS:
        args.append(np.zeros((nkernels * MAX_VARS, n), np.dtype(d)))
    for dt in (np.int32, np.uint32, np.int64):
        args.append(ints(dt)[:1].repeat(nkernels * ATOMIC_SLOTS) if n else np.zeros(nkernels * ATOMIC_SLOTS, dt))
    return args


def mismatches(got: list[np.ndarray], want: list[np.ndarray]) -> list[tuple[int, str, int, int, object, object]]:
    """(random kernel index, output, row, thread or slot, gpusim value, reference value) of
    every differing output element (NaN equals NaN; -0.0 equals 0.0)."""
    out = []
    for name, a, b in zip(OUTPUT_NAMES, got, want):
        bad = a != b
        if a.dtype.kind == "f":
            bad &= ~(np.isnan(a) & np.isnan(b))
        for idx in np.argwhere(bad)[:5]:
            idx = tuple(int(i) for i in idx)
            row = idx[0]
            k = row // (ATOMIC_SLOTS if name.startswith("a") else MAX_VARS)
            out.append((k, name, row, idx[-1], a[idx], b[idx]))
    return out
