"""Held-out compute kernels: a dependent float32 FMA chain per thread with two warps per
SM (latency bound) and the same with 8 independent chains (ILP), integer division and
modulo by runtime values in a loop, a float32 sqrt/exp/log/sin kernel (libdevice, not
fastmath), and a per-thread array indexed by data (local memory).

The FMA chains x <- x * m + d (0.5 <= m <= 0.75) converge to d / (1 - m) within a few
ulp after ~64 steps, so the reference is that fixed point (rtol 1e-5), whatever the
number of steps and whether the compiler fuses the multiply-add. The loops are plain
`for _ in range(iters)`, as a Numba user writes them: the 64-bit loop count Numba carries
from step to step is itself a dependent chain, longer than the FMA's (H200: ~21 cycles per
step for one chain, ~25 for eight; see validate/heldout.py).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32, int32

from programs.base import Case
from validate._heldout import blocks

BLOCK = 256
CHAIN_BLOCKS, CHAIN_THREADS = 132, 64   # two warps per SM on 132 SMs: one warp on half the schedulers
DIGITS = 16                             # local array: one counter per hex digit


@cuda.jit
def fma_chain(x, m, d, out, iters):
    i = cuda.grid(1)
    a = x[i]
    mi = m[i]
    di = d[i]
    for _ in range(iters):
        a = a * mi + di
    out[i] = a


@cuda.jit
def fma_chain_ilp8(x, m, d, out, iters):
    i = cuda.grid(1)
    mi = m[i]
    di = d[i]
    a0, a1, a2, a3 = x[i, 0], x[i, 1], x[i, 2], x[i, 3]
    a4, a5, a6, a7 = x[i, 4], x[i, 5], x[i, 6], x[i, 7]
    for _ in range(iters):
        a0 = a0 * mi + di
        a1 = a1 * mi + di
        a2 = a2 * mi + di
        a3 = a3 * mi + di
        a4 = a4 * mi + di
        a5 = a5 * mi + di
        a6 = a6 * mi + di
        a7 = a7 * mi + di
    out[i] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))


@cuda.jit
def intdiv_loop(x, out, div, mod, iters):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        for k in range(iters):
            v = (v * 7 + k) % mod + v // div
        out[i] = v


@cuda.jit
def math_heavy(x, y):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        y[i] = math.sqrt(v) + math.exp(-v) * math.log(v + float32(1)) + math.sin(v)


@cuda.jit
def digit_histogram_local(x, out):
    i = cuda.grid(1)
    if i < x.size:
        counts = cuda.local.array(DIGITS, int32)
        for b in range(DIGITS):
            counts[b] = 0
        v = x[i]
        for k in range(8):
            counts[(v >> (4 * k)) & 15] += 1    # index known only at run time: local memory
        best = 0
        arg = 0
        for b in range(DIGITS):
            if counts[b] > best:
                best = counts[b]
                arg = b
        out[i] = best * DIGITS + arg


# ---- builders ----------------------------------------------------------------------

def _chain_inputs(rng, n, chains, dt=np.float32):
    x = rng.uniform(-1, 1, (n, chains) if chains > 1 else n).astype(dt)
    m = rng.uniform(0.5, 0.75, n).astype(dt)
    d = rng.uniform(0.5, 1.0, n).astype(dt)
    fixed = d.astype(np.float64) / (1 - m.astype(np.float64))
    return x, m, d, (chains * fixed).astype(dt)


def build_fma_chain(rng, iters, grid=CHAIN_BLOCKS, threads=CHAIN_THREADS):
    if iters < 64:
        raise ValueError(f"fma_chain: iters must be >= 64 for the chain to converge, got {iters}")
    n = grid * threads
    x, m, d, want = _chain_inputs(rng, n, 1)
    return Case("fma_chain", fma_chain, (grid,), (threads,), (x, m, d, np.full(n, np.nan, np.float32), iters),
                {3: want}, rtol=1e-5)


def build_fma_chain_ilp8(rng, iters, grid=CHAIN_BLOCKS, threads=CHAIN_THREADS):
    if iters < 64:
        raise ValueError(f"fma_chain_ilp8: iters must be >= 64 for the chains to converge, got {iters}")
    n = grid * threads
    x, m, d, want = _chain_inputs(rng, n, 8)
    return Case("fma_chain_ilp8", fma_chain_ilp8, (grid,), (threads,),
                (x, m, d, np.full(n, np.nan, np.float32), iters), {3: want}, rtol=1e-5)


def build_intdiv(rng, n, iters, div=3, mod=1_000_003):
    x = rng.integers(0, mod, n, dtype=np.int32)
    v = x.astype(np.int64)
    for k in range(iters):                             # numpy's // and % floor like Python's (and Numba's)
        v = (v * 7 + k) % mod + v // div
    return Case("intdiv_loop", intdiv_loop, (blocks(n, BLOCK),), (BLOCK,),
                (x, np.full(n, -1, np.int64), div, mod, iters), {1: v})


def build_math(rng, n):
    x = rng.uniform(0.1, 10.0, n).astype(np.float32)
    want = np.sqrt(x) + np.exp(-x) * np.log(x + np.float32(1)) + np.sin(x)
    # float32 on both sides (numpy's float32 functions are within a few ulp, libdevice's within
    # 2). The result is >= 0.3 (sqrt(x) >= 1 wherever sin(x) < 0), so a few ulp of the largest
    # term (<= 3.2) are below 1e-5 of it: rtol 2e-5 is safe.
    return Case("math_heavy", math_heavy, (blocks(n, BLOCK),), (BLOCK,), (x, np.full(n, np.nan, np.float32)),
                {1: want}, rtol=2e-5)


def build_digits(rng, n):
    x = rng.integers(0, 1 << 32, n, dtype=np.uint32)
    digits = [((x >> np.uint32(4 * k)) & np.uint32(15)).astype(np.uint8) for k in range(8)]
    best, arg = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    for b in range(DIGITS):                            # the first most frequent digit, as the kernel
        count = sum((d == b).view(np.uint8) for d in digits)
        more = count > best
        best[more], arg[more] = count[more], b
    want = best.astype(np.int32) * DIGITS + arg
    return Case("digit_histogram_local", digit_histogram_local, (blocks(n, BLOCK),), (BLOCK,),
                (x, np.full(n, -1, np.int32)), {1: want})
