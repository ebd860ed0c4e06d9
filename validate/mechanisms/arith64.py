"""64-bit integer and FP64 arithmetic (issue 24: a degree-128 FP64 Horner loop whose
instructions are mostly 64-bit index arithmetic predicted 36% too fast): the issue rate
and latency of the SASS that Numba's int64 arithmetic becomes (IADD3 + IADD3.X / IMAD.X
with carry, IMAD.WIDE(.U32), IMAD.HI, ISETP.EX), next to DFMA, and Horner loops whose
coefficient loads and 64-bit index and loop-counter arithmetic surround one DFMA.

Throughput kernels run 8 independent chains per thread, 4 steps of each per loop
iteration (a device function with a constant trip count, unrolled), on 8 blocks of 256
threads per SM; latency kernels one chain per thread on one warp per SM sub-partition
(132 blocks of 128 threads). Inputs come from a pool of 1024 values per array (thread t
takes entry fmix32(t) & 1023), so the host references run the chains for the pool only.
- `i64_add`: a, b -> a + b, a + 2b (int64): IADD3 + IADD3.X per add;
- `i64_mad`: c -> c * m + d (int64 x int64): IMAD.WIDE.U32 and IMADs for the high word;
- `i64_wide`: c -> uint32(c) * uint32(m) + c in 64 bits: IMAD.WIDE.U32 (and an IADD3
  ptxas adds for the addend's high word);
- `f64_fma`: c -> c * m + d (float64): DFMA (the latency kernel is its chain);
- `horner_*`: p = p * x + c[k] for k < degree, the coefficients in a global array
  (a warp-uniform LDG and its 64-bit address per step), in shared memory, or float32.
Pipe counts (`sm__inst_executed_pipe_*`) and stall reasons say what issued where.
What each size decides: docs/mechanisms_24.md.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float64, uint32, uint64

from programs.base import Case, ProgramSpec
from validate.mechanisms.common import FILL_BLOCKS, SMS, THREADS, mix32_np

CHAINS, STEPS, POOL = 8, 4, 1024
HORNER_SHARED = 256                      # coefficients a block copies into shared memory, at most


@cuda.jit(device=True)
def _add_steps(a, b):
    for _ in range(STEPS // 2):
        a = a + b
        b = b + a
    return a, b


@cuda.jit
def i64_add(x, y, out, iters):
    i = cuda.grid(1)
    a0, a1, a2, a3 = x[i, 0], x[i, 1], x[i, 2], x[i, 3]
    b0, b1, b2, b3 = y[i, 0], y[i, 1], y[i, 2], y[i, 3]
    for _ in range(iters):
        a0, b0 = _add_steps(a0, b0)
        a1, b1 = _add_steps(a1, b1)
        a2, b2 = _add_steps(a2, b2)
        a3, b3 = _add_steps(a3, b3)
    out[i, 0], out[i, 1], out[i, 2], out[i, 3] = a0, a1, a2, a3
    out[i, 4], out[i, 5], out[i, 6], out[i, 7] = b0, b1, b2, b3


@cuda.jit
def i64_add_lat(x, y, out, iters):
    i = cuda.grid(1)
    a, b = x[i, 0], y[i, 0]
    for _ in range(iters):
        a, b = _add_steps(a, b)
    out[i, 0], out[i, 1] = a, b


@cuda.jit(device=True)
def _mad_steps(c, m, d):
    for _ in range(STEPS):
        c = c * m + d
    return c


@cuda.jit(device=True)
def _wide_steps(c, m, d):
    for _ in range(STEPS):                      # 32 x 32 bits into 64, plus the 64-bit c: IMAD.WIDE.U32
        c = uint64(uint32(c)) * uint64(uint32(m)) + c
    return c


def _chains(step, name):
    def kernel(x, m, d, out, iters):
        i = cuda.grid(1)
        mi, di = m[i], d[i]
        c0, c1, c2, c3 = x[i, 0], x[i, 1], x[i, 2], x[i, 3]
        c4, c5, c6, c7 = x[i, 4], x[i, 5], x[i, 6], x[i, 7]
        for _ in range(iters):
            c0 = step(c0, mi, di)
            c1 = step(c1, mi, di)
            c2 = step(c2, mi, di)
            c3 = step(c3, mi, di)
            c4 = step(c4, mi, di)
            c5 = step(c5, mi, di)
            c6 = step(c6, mi, di)
            c7 = step(c7, mi, di)
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = c0, c1, c2, c3
        out[i, 4], out[i, 5], out[i, 6], out[i, 7] = c4, c5, c6, c7
    kernel.__name__ = kernel.__qualname__ = name      # the kernel's name in ncu's report and the SASS
    return kernel


i64_mad = cuda.jit(_chains(_mad_steps, "i64_mad"))
i64_wide = cuda.jit(_chains(_wide_steps, "i64_wide"))
f64_fma = cuda.jit(_chains(_mad_steps, "f64_fma"))


@cuda.jit
def f64_fma_lat(x, m, d, out, iters):
    i = cuda.grid(1)
    c = x[i, 0]
    mi, di = m[i], d[i]
    for _ in range(iters):
        c = _mad_steps(c, mi, di)
    out[i, 0] = c


@cuda.jit
def horner_global(x, coef, out, degree):
    i = cuda.grid(1)
    xv = x[i]
    p = coef[0]
    for k in range(1, degree + 1):
        p = p * xv + coef[k]
    out[i] = p


@cuda.jit
def horner_shared_f64(x, coef, out, degree):
    sc = cuda.shared.array(HORNER_SHARED, float64)
    for k in range(cuda.threadIdx.x, degree + 1, cuda.blockDim.x):
        sc[k] = coef[k]
    cuda.syncthreads()
    i = cuda.grid(1)
    xv = x[i]
    p = sc[0]
    for k in range(1, degree + 1):
        p = p * xv + sc[k]
    out[i] = p


# ---- builders ------------------------------------------------------------------------

def _pool_index(n: int) -> np.ndarray:
    return (mix32_np(np.arange(n), 0, 0x1B873593) & np.uint32(POOL - 1)).astype(np.int64)


def _affine_pow(a: np.ndarray, b: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) with x -> A x + B the k-fold composition of x -> a x + b, modulo 2^64 (uint64)."""
    ra, rb = np.ones_like(a), np.zeros_like(b)
    with np.errstate(over="ignore"):
        while k:
            if k & 1:
                ra, rb = a * ra, a * rb + b
            a, b = a * a, a * b + b
            k >>= 1
    return ra, rb


def build_i64(rng, op, iters, blocks=FILL_BLOCKS, threads=THREADS):
    n = blocks * threads
    p = _pool_index(n)
    steps = iters * STEPS
    u = np.uint64
    if op in ("add", "add_lat"):
        ch = CHAINS // 2 if op == "add" else 1
        xs = rng.integers(-(1 << 62), 1 << 62, (POOL, ch), dtype=np.int64).view(np.uint64)
        ys = rng.integers(-(1 << 62), 1 << 62, (POOL, ch), dtype=np.int64).view(np.uint64)
        # (a, b) -> (a + b, a + 2b) per step pair: the matrix [[1, 1], [1, 2]] to the power steps/2
        m = [[u(1), u(0)], [u(0), u(1)]]
        base = [[u(1), u(1)], [u(1), u(2)]]
        k = steps // 2
        with np.errstate(over="ignore"):
            while k:
                if k & 1:
                    m = [[m[i][0] * base[0][j] + m[i][1] * base[1][j] for j in range(2)] for i in range(2)]
                base = [[base[i][0] * base[0][j] + base[i][1] * base[1][j] for j in range(2)] for i in range(2)]
                k >>= 1
            a = m[0][0] * xs + m[1][0] * ys
            b = m[0][1] * xs + m[1][1] * ys
        want = np.concatenate([a, b], axis=1)[p].view(np.int64)
        x, y = xs[p].view(np.int64), ys[p].view(np.int64)
        if op == "add":
            return Case("i64_add", i64_add, (blocks,), (threads,), (x, y, np.zeros((n, CHAINS), np.int64), iters),
                        {2: want})
        return Case("i64_add", i64_add_lat, (blocks,), (threads,), (x, y, np.zeros((n, 2), np.int64), iters),
                    {2: want})
    xs = rng.integers(-(1 << 62), 1 << 62, (POOL, CHAINS), dtype=np.int64)
    ms = (rng.integers(0, 1 << 30, POOL, dtype=np.int64) * 2 + 1)
    ds = rng.integers(-(1 << 40), 1 << 40, POOL, dtype=np.int64)
    if op == "mad":
        A, B = _affine_pow(ms.view(np.uint64), ds.view(np.uint64), steps)
        with np.errstate(over="ignore"):
            want = (A[:, None] * xs.view(np.uint64) + B[:, None]).view(np.int64)
        kernel = i64_mad
    else:                                       # wide: c -> (c mod 2^32) (m mod 2^32) + c, modulo 2^64
        xs, ms, ds = xs.view(np.uint64), ms.view(np.uint64), ds.view(np.uint64)
        c, lo = xs.copy(), np.uint64(0xFFFFFFFF)
        with np.errstate(over="ignore"):
            for _ in range(steps):
                c = (c & lo) * (ms[:, None] & lo) + c
        want, kernel = c, i64_wide
    return Case("i64_chains", kernel, (blocks,), (threads,),
                (xs[p], ms[p], ds[p], np.zeros((n, CHAINS), want.dtype), iters), {3: want[p]})


def build_f64(rng, op, iters, blocks=FILL_BLOCKS, threads=THREADS):
    n = blocks * threads
    p = _pool_index(n)
    xs = rng.uniform(-1, 1, (POOL, CHAINS))
    ms, ds = rng.uniform(0.5, 0.75, POOL), rng.uniform(0.5, 1.0, POOL)
    c = xs.copy()
    for _ in range(iters * STEPS):                  # converges to d / (1 - m) within a few ulp
        c = c * ms[:, None] + ds[:, None]
    if op == "fma":
        return Case("f64_fma", f64_fma, (blocks,), (threads,), (xs[p], ms[p], ds[p], np.zeros((n, CHAINS)), iters),
                    {3: c[p]}, rtol=1e-12)
    return Case("f64_fma", f64_fma_lat, (blocks,), (threads,), (xs[p], ms[p], ds[p], np.zeros((n, 1)), iters),
                {3: c[p, :1]}, rtol=1e-12)


def build_horner(rng, where, degree, dtype="float64", blocks=FILL_BLOCKS, threads=THREADS):
    if where == "shared" and (dtype != "float64" or degree + 1 > HORNER_SHARED):
        raise ValueError(f"horner: shared coefficients are float64, at most {HORNER_SHARED}")
    dt = np.dtype(dtype)
    n = blocks * threads
    p = _pool_index(n)
    xs = rng.uniform(-0.9, 0.9, POOL)
    coef = rng.uniform(-1, 1, degree + 1).astype(dt)
    v = np.full(POOL, coef[0], np.float64)
    for k in range(1, degree + 1):
        v = v * xs.astype(dt) + coef[k]
    kernel = horner_shared_f64 if where == "shared" else horner_global
    return Case("horner", kernel, (blocks,), (threads,), (xs[p].astype(dt), coef, np.zeros(n, dt), degree),
                {2: v[p].astype(dt)}, rtol=1e-10 if dt == np.float64 else 1e-4, atol=1e-12 if dt == np.float64 else 1e-5)


_SMALL = {"blocks": 2, "threads": 64}
_LAT = {"blocks": SMS, "threads": 128}            # one warp per sub-partition
SPECS = (
    ProgramSpec("i64_chains", "int64 chains: add (IADD3 + carry), mad (int64 multiply), wide (IMAD.WIDE)",
                build_i64, sizes={
                    "default": {"op": "add", "iters": 8, **_SMALL},
                    "add": {"op": "add", "iters": 512}, "add_lat": {"op": "add_lat", "iters": 2048, **_LAT},
                    "mad": {"op": "mad", "iters": 128}, "wide": {"op": "wide", "iters": 128}},
                tags=("throughput", "int64")),
    ProgramSpec("f64_fma", "float64 FMA chains: 8 per thread at full occupancy, or one per thread on 4 warps an SM",
                build_f64, sizes={
                    "default": {"op": "fma", "iters": 8, **_SMALL},
                    "fma": {"op": "fma", "iters": 256}, "fma_lat": {"op": "lat", "iters": 2048, **_LAT}},
                tags=("throughput", "fp64")),
    ProgramSpec("horner", "degree-d Horner loop per thread: coefficients from global or shared memory, f64 or f32",
                build_horner, sizes={
                    "default": {"where": "global", "degree": 16, **_SMALL},
                    "f64_global_d128": {"where": "global", "degree": 128},
                    "f64_shared_d128": {"where": "shared", "degree": 128},
                    "f32_global_d128": {"where": "global", "degree": 128, "dtype": "float32"},
                    "f64_global_d128_lowocc": {"where": "global", "degree": 128, **_LAT}},
                tags=("fp64", "int64", "index-arithmetic")),
)
