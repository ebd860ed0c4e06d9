"""FP64 issue against dependent latency, and a work-efficient scan within a block (issue
24: FP64 FMA chains and a degree-256 Horner loop predicted 35-42% too fast, a Blelloch
scan within a block at 16M-64M elements -41%; docs/mechanisms_24.md says what each size
decides).

- `f64_ilp`: each thread runs `chains` independent float64 chains c -> c * m + d (DFMA),
  or c -> c + d (DADD), c -> c * m (DMUL), 4 steps of each per loop pass, on `warps`
  warps per SM sub-partition (blocks of 128 threads, `warps` x 132 blocks): the DFMA rate
  per SMSP against the warps and chains in flight separates the pipe's issue interval
  from its dependent latency, and from what a warp can issue back to back.
- `i64_wide_lat`: one IMAD.WIDE.U32 chain per thread on one warp per SMSP: its latency.
- `blelloch_scan`: the exclusive work-efficient scan of GPU Gems 3, chapter 39, within a
  block of 2 x `threads` int32 elements (up-sweep, clear, down-sweep: 2 log2 n
  __syncthreads, the active threads halving then doubling), with or without the
  chapter's bank-conflict padding; 2^24 elements.
Inputs come from a pool as in arith64.py; int32 values are exact.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, int32, uint32, uint64

from programs.base import Case, ProgramSpec
from validate.mechanisms.common import SMS, mix32_np

STEPS, POOL = 4, 1024
SCAN_THREADS = 256


def _pool(n: int) -> np.ndarray:
    return (mix32_np(np.arange(n), 0, 0x2545F491) & np.uint32(POOL - 1)).astype(np.int64)


@cuda.jit(device=True)
def _fma4(c, m, d):
    for _ in range(STEPS):
        c = c * m + d
    return c


@cuda.jit(device=True)
def _add4(c, m, d):
    for _ in range(STEPS):
        c = c + d
    return c


@cuda.jit(device=True)
def _mul4(c, m, d):
    for _ in range(STEPS):
        c = c * m
    return c


def _ilp_kernel(step, chains, name):
    if chains == 1:
        def kernel(x, m, d, out, iters):
            i = cuda.grid(1)
            mi, di = m[i], d[i]
            c0 = x[i, 0]
            for _ in range(iters):
                c0 = step(c0, mi, di)
            out[i, 0] = c0
    elif chains == 2:
        def kernel(x, m, d, out, iters):
            i = cuda.grid(1)
            mi, di = m[i], d[i]
            c0, c1 = x[i, 0], x[i, 1]
            for _ in range(iters):
                c0 = step(c0, mi, di)
                c1 = step(c1, mi, di)
            out[i, 0], out[i, 1] = c0, c1
    else:
        def kernel(x, m, d, out, iters):
            i = cuda.grid(1)
            mi, di = m[i], d[i]
            c0, c1, c2, c3 = x[i, 0], x[i, 1], x[i, 2], x[i, 3]
            for _ in range(iters):
                c0 = step(c0, mi, di)
                c1 = step(c1, mi, di)
                c2 = step(c2, mi, di)
                c3 = step(c3, mi, di)
            out[i, 0], out[i, 1], out[i, 2], out[i, 3] = c0, c1, c2, c3
    kernel.__name__ = kernel.__qualname__ = name      # the kernel's name in ncu's report and the SASS
    return cuda.jit(kernel)


_STEP = {"fma": _fma4, "add": _add4, "mul": _mul4}
_KERNELS = {(op, c): _ilp_kernel(_STEP[op], c, f"f64_{op}_c{c}") for op in _STEP for c in (1, 2, 4)}


def build_ilp(rng, op, chains, warps, iters, blocks=None):
    blocks, threads = blocks or SMS * warps, 128
    n = blocks * threads
    p = _pool(n)
    xs = rng.uniform(-1, 1, (POOL, chains))
    ms, ds = rng.uniform(0.5, 0.75, POOL), rng.uniform(0.5, 1.0, POOL)
    if op == "mul":
        ms = rng.uniform(0.999, 1.001, POOL)
    c = xs.copy()
    for _ in range(iters * STEPS):
        c = c * ms[:, None] + ds[:, None] if op == "fma" else c + ds[:, None] if op == "add" else c * ms[:, None]
    return Case("f64_ilp", _KERNELS[(op, chains)], (blocks,), (threads,),
                (xs[p], ms[p], ds[p], np.zeros((n, chains)), iters), {3: c[p]}, rtol=1e-9)


@cuda.jit
def i64_wide_lat(x, m, out, iters):
    i = cuda.grid(1)
    c, mi = x[i], m[i]
    for _ in range(iters):
        for _ in range(STEPS):
            c = uint64(uint32(c)) * uint64(uint32(mi)) + c
    out[i] = c


def build_wide_lat(rng, iters, blocks=SMS):
    threads = 128
    n = blocks * threads
    p = _pool(n)
    xs = rng.integers(0, 1 << 62, POOL, dtype=np.int64).view(np.uint64)
    ms = rng.integers(0, 1 << 31, POOL, dtype=np.int64).view(np.uint64)
    c, lo = xs.copy(), np.uint64(0xFFFFFFFF)
    with np.errstate(over="ignore"):
        for _ in range(iters * STEPS):
            c = (c & lo) * (ms & lo) + c
    return Case("i64_wide_lat", i64_wide_lat, (blocks,), (threads,), (xs[p], ms[p], np.zeros(n, np.uint64), iters),
                {2: c[p]})


# ---- Blelloch scan -----------------------------------------------------------------------
ELEMS = 2 * SCAN_THREADS
LOG_BANKS = 5


@cuda.jit(device=True, inline=True)
def _pad(i, padded):
    return i + (i >> LOG_BANKS) if padded else i


def _scan_kernel(padded, name):
    size = ELEMS + (ELEMS >> LOG_BANKS if padded else 0)

    def kernel(x, out):
        temp = cuda.shared.array(size, int32)
        tid = cuda.threadIdx.x
        base = cuda.blockIdx.x * ELEMS
        temp[_pad(tid, padded)] = x[base + tid]
        temp[_pad(tid + SCAN_THREADS, padded)] = x[base + tid + SCAN_THREADS]
        offset = 1
        d = ELEMS >> 1
        while d > 0:                                  # up-sweep: partial sums in place
            cuda.syncthreads()
            if tid < d:
                ai = offset * (2 * tid + 1) - 1
                bi = offset * (2 * tid + 2) - 1
                temp[_pad(bi, padded)] += temp[_pad(ai, padded)]
            offset *= 2
            d >>= 1
        if tid == 0:
            temp[_pad(ELEMS - 1, padded)] = 0
        d = 1
        while d < ELEMS:                              # down-sweep
            offset >>= 1
            cuda.syncthreads()
            if tid < d:
                ai = _pad(offset * (2 * tid + 1) - 1, padded)
                bi = _pad(offset * (2 * tid + 2) - 1, padded)
                t = temp[ai]
                temp[ai] = temp[bi]
                temp[bi] += t
            d *= 2
        cuda.syncthreads()
        out[base + tid] = temp[_pad(tid, padded)]
        out[base + tid + SCAN_THREADS] = temp[_pad(tid + SCAN_THREADS, padded)]
    kernel.__name__ = kernel.__qualname__ = name
    return cuda.jit(kernel)


_SCANS = {False: _scan_kernel(False, "blelloch_scan"), True: _scan_kernel(True, "blelloch_scan_padded")}


def build_scan(rng, n, padded=False):
    n = max(n, ELEMS)                                 # one block at least
    if n % ELEMS:
        raise ValueError(f"blelloch_scan: n = {n} is not a multiple of {ELEMS}")
    x = rng.integers(-100, 101, n).astype(np.int32)
    seg = x.reshape(-1, ELEMS).astype(np.int64)
    want = (np.cumsum(seg, axis=1) - seg).reshape(-1).astype(np.int32)
    return Case("blelloch_scan", _SCANS[padded], (n // ELEMS,), (SCAN_THREADS,),
                (x, np.full(n, np.iinfo(np.int32).min, np.int32)), {1: want})


SPECS = (
    ProgramSpec("f64_ilp", "float64 chains per thread (1, 2, 4) against warps per SMSP (1, 2, 4, 16): DFMA, DADD, DMUL",
                build_ilp, sizes={
                    "default": {"op": "fma", "chains": 2, "warps": 1, "iters": 8},
                    **{f"fma_c{c}_w{w}": {"op": "fma", "chains": c, "warps": w, "iters": 4096 // (c * w)}
                       for c in (1, 2, 4) for w in (1, 2, 4, 16)},
                    "add_c4_w16": {"op": "add", "chains": 4, "warps": 16, "iters": 64},
                    "mul_c4_w16": {"op": "mul", "chains": 4, "warps": 16, "iters": 64}},
                tags=("fp64", "latency")),
    ProgramSpec("i64_wide_lat", "one IMAD.WIDE.U32 chain per thread, one warp per SMSP: its latency",
                build_wide_lat, sizes={"default": {"iters": 8}, "lat": {"iters": 2048}},
                tags=("int64", "latency")),
    ProgramSpec("blelloch_scan", "work-efficient exclusive scan in blocks of 512 int32 (GPU Gems 3 ch. 39)",
                build_scan, sizes={
                    "default": {"n": 8 * ELEMS},
                    "n4M": {"n": 1 << 22}, "n16M": {"n": 1 << 24}, "n16M_padded": {"n": 1 << 24, "padded": True}},
                tags=("scan", "shared-memory", "synchronization")),
)
