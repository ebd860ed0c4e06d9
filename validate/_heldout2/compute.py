"""Compute loops: a float32 Mandelbrot set (a divergent data-dependent loop, 16x16 blocks),
an all-pairs n-body step with shared-memory tiles of bodies (float32, sqrt and division
as written in Python), a float64 Horner polynomial with the coefficients in global memory,
four independent float64 FMA chains per thread, and a fastmath loop of special functions
(sin, exp, rsqrt: the SFU), and a fixed amount of FMA work per block launched on grids
just at and just past one and two full waves (`wave_quant`: 48,000 B of static shared memory
a block, so 4 blocks fit on an SM of 228 KB: a wave is 4 x 132 = 528 blocks on H100/H200).

Mandelbrot is bit exact: its kernel writes every multiply-add as `cuda.fma` (so no
contraction choice of the compiler changes a rounding) and the reference (`numba.njit`,
compiled on first use) performs the same float32 operations, each fused multiply-add
rounded once (`_fma32`). The other references are closed forms or float64 numpy, compared
within tolerances that the kernels' float32/float64 rounding stays far inside.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32, float64, njit
from numba.cuda import libdevice

from programs.base import Case
from validate._heldout2 import blocks

BLOCK = 256
MANDEL_BLOCK = (16, 16)
NBODY_BLOCK = 128                       # bodies per shared tile = threads per block
WAVE_FLOATS = 12000                     # 48,000 B shared per block: 4 blocks per SM (5 x 49 KB > 228 KB)
WAVE_SPREAD = 46                        # thread t uses word 46 t: 255 * 46 < 12,000


@cuda.jit
def mandelbrot_f32(out, x0, y0, step, maxiter):
    px, py = cuda.grid(2)
    if py < out.shape[0] and px < out.shape[1]:
        cx = cuda.fma(float32(px), step, x0)
        cy = cuda.fma(float32(py), step, y0)
        x = float32(0)
        y = float32(0)
        it = 0
        while it < maxiter:
            yy = y * y
            if cuda.fma(x, x, yy) > float32(4):
                break
            xt = cuda.fma(x, x, -yy) + cx
            y = cuda.fma(x + x, y, cy)
            x = xt
            it += 1
        out[py, px] = it


@cuda.jit
def nbody_shared(pos, acc, eps2):
    tile = cuda.shared.array((NBODY_BLOCK, 4), float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = pos.shape[0]
    xi = pos[i, 0] if i < n else float32(0)
    yi = pos[i, 1] if i < n else float32(0)
    zi = pos[i, 2] if i < n else float32(0)
    ax = float32(0)
    ay = float32(0)
    az = float32(0)
    for start in range(0, n, NBODY_BLOCK):
        j = start + t
        for c in range(4):
            tile[t, c] = pos[j, c] if j < n else float32(0)     # mass 0 pads a partial tile
        cuda.syncthreads()
        for k in range(NBODY_BLOCK):
            dx = tile[k, 0] - xi
            dy = tile[k, 1] - yi
            dz = tile[k, 2] - zi
            r2 = dx * dx + dy * dy + dz * dz + eps2
            inv = float32(1) / math.sqrt(r2)
            s = tile[k, 3] * inv * inv * inv
            ax += dx * s
            ay += dy * s
            az += dz * s
        cuda.syncthreads()
    if i < n:
        acc[i, 0] = ax
        acc[i, 1] = ay
        acc[i, 2] = az


@cuda.jit
def horner_f64(x, coef, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        deg = coef.size - 1
        p = coef[deg]
        for k in range(deg - 1, -1, -1):
            p = p * v + coef[k]
        out[i] = p


@cuda.jit
def fp64_fma_chains(a0, b, c, iters, out):
    i = cuda.grid(1)
    if i < out.size:
        bi = b[i]
        ci = c[i]
        p = a0[i]
        q = p + float64(0.25)
        r = p + float64(0.5)
        s = p + float64(0.75)
        for _ in range(iters):
            p = p * bi + ci
            q = q * bi + ci
            r = r * bi + ci
            s = s * bi + ci
        out[i] = p + q + r + s


@cuda.jit(fastmath=True)
def sfu_loop(x, out, iters, d):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        acc = float32(0)
        y = v
        for k in range(iters):
            t = v + float32(k) * d
            acc += math.sin(t) + math.exp(-t)
            y = libdevice.rsqrtf(float32(1) + y)
        out[i] = acc + y


@cuda.jit
def wave_quant(out, iters, b, c):
    buf = cuda.shared.array(WAVE_FLOATS, float32)
    t = cuda.threadIdx.x
    p = float32(t) * float32(1e-3)
    q = p + float32(0.5)
    for _ in range(iters):
        p = p * b + c
        q = q * b + c
    buf[t * WAVE_SPREAD] = p + q
    cuda.syncthreads()
    out[cuda.grid(1)] = buf[((t + 1) % BLOCK) * WAVE_SPREAD]


# ---- references and builders --------------------------------------------------------

@njit(cache=False)
def _fma32(a, b, c):
    """float32(a * b + c) rounded once: the exact float64 sum p + c (TwoSum), rounded to
    odd in float64, then to nearest float32 (53 >= 24 + 2 bits makes the second rounding
    exact)."""
    p = np.float64(a) * np.float64(b)                  # exact: 24 x 24 bits
    cc = np.float64(c)
    s = p + cc
    bp = s - p
    e = (p - (s - bp)) + (cc - bp)
    if e != 0.0:
        m, _ = math.frexp(s)
        if int(abs(m) * 9007199254740992.0) % 2 == 0:  # even last bit: step toward the exact value
            s = np.nextafter(s, np.inf if e > 0.0 else -np.inf)
    return np.float32(s)


@njit(cache=False)
def _mandelbrot_ref(h, w, x0, y0, step, maxiter):
    out = np.zeros((h, w), np.int64)
    four = np.float32(4)
    for py in range(h):
        cy = _fma32(np.float32(py), step, y0)
        for px in range(w):
            cx = _fma32(np.float32(px), step, x0)
            x = np.float32(0)
            y = np.float32(0)
            it = 0
            while it < maxiter:
                yy = np.float32(y * y)
                if _fma32(x, x, yy) > four:
                    break
                xt = np.float32(_fma32(x, x, -yy) + cx)
                y = _fma32(np.float32(x + x), y, cy)
                x = xt
                it += 1
            out[py, px] = it
    return out


def build_mandelbrot(rng, h, w, maxiter, x0=-2.0, y0=-1.25, span=2.5):
    """The view [x0, x0 + span] x [y0, y0 + span * h / w], one pixel per `span / w`."""
    step, x0, y0 = np.float32(span / w), np.float32(x0), np.float32(y0)
    want = _mandelbrot_ref(h, w, x0, y0, step, maxiter)
    grid = (blocks(w, MANDEL_BLOCK[0]), blocks(h, MANDEL_BLOCK[1]))
    return Case("mandelbrot_f32", mandelbrot_f32, grid, MANDEL_BLOCK,
                (np.full((h, w), -1, np.int64), x0, y0, step, np.int64(maxiter)), {0: want})


def _nbody_ref(pos: np.ndarray, eps2: float, chunk: int = 1024) -> np.ndarray:
    """acc_i = sum_j m_j (p_j - p_i) w_ij, w_ij = (|p_j - p_i|^2 + eps2)^-3/2, in float64 as
    W (m p) - p (W m) by matrix products, `chunk` rows of W at a time."""
    p = pos[:, :3].astype(np.float64)
    m = pos[:, 3].astype(np.float64)
    sq = np.einsum("ij,ij->i", p, p)
    mp = np.concatenate([m[:, None] * p, m[:, None]], axis=1)             # (n, 4): m p and m
    out = np.empty((len(p), 3))
    for s in range(0, len(p), chunk):
        r2 = sq[s:s + chunk, None] + sq[None, :] - 2 * (p[s:s + chunk] @ p.T)
        np.maximum(r2, 0, out=r2)
        r2 += eps2
        w = r2 * np.sqrt(r2)
        np.reciprocal(w, out=w)
        wm = w @ mp
        out[s:s + chunk] = wm[:, :3] - p[s:s + chunk] * wm[:, 3:]
    return out.astype(np.float32)


def build_nbody(rng, n, eps2=0.01):
    pos = np.empty((n, 4), np.float32)
    pos[:, :3] = rng.standard_normal((n, 3), dtype=np.float32)
    pos[:, 3] = rng.uniform(0.5, 1.5, n).astype(np.float32)
    want = _nbody_ref(pos, eps2)
    scale = float(np.abs(want).max())
    # float32 sums of n terms in another order: ~1e-6 relative to the largest acceleration
    return Case("nbody_shared", nbody_shared, (blocks(n, NBODY_BLOCK),), (NBODY_BLOCK,),
                (pos, np.full((n, 3), np.nan, np.float32), np.float32(eps2)), {1: want},
                rtol=1e-3, atol=1e-3 * scale)


def build_horner(rng, n, degree):
    x = rng.uniform(-1.0, 1.0, n)
    coef = rng.uniform(-1.0, 1.0, degree + 1)
    want = np.full(n, coef[degree])
    for k in range(degree - 1, -1, -1):
        want *= x
        want += coef[k]
    # |p| <= sum |coef| <= degree + 1; fused or not, rounding stays below ~degree^2 * 1e-16
    return Case("horner_f64", horner_f64, (blocks(n, BLOCK),), (BLOCK,),
                (x, coef, np.full(n, np.nan)), {2: want}, rtol=1e-10, atol=1e-10)


def build_fp64_chains(rng, n, iters):
    a0 = rng.uniform(-1.0, 1.0, n)
    b = rng.uniform(0.5, 0.9, n)
    c = rng.uniform(-1.0, 1.0, n)
    fix = c / (1 - b)                                   # a_k = b^k (a_0 - fix) + fix
    bk = b ** iters
    want = sum(bk * (a0 + off - fix) + fix for off in (0.0, 0.25, 0.5, 0.75))
    return Case("fp64_fma_chains", fp64_fma_chains, (blocks(n, BLOCK),), (BLOCK,),
                (a0, b, c, np.int64(iters), np.full(n, np.nan)), {4: want}, rtol=1e-12, atol=1e-12)


def build_sfu(rng, n, iters):
    v = rng.uniform(0.0, 1.0, n).astype(np.float32)
    d = np.float32(2.0 / iters)                         # arguments stay in [0, 3]
    vd, dd = v.astype(np.float64), float(d)
    sins = np.sin(vd + (iters - 1) * dd / 2) * math.sin(iters * dd / 2) / math.sin(dd / 2)
    exps = np.exp(-vd) * (1 - math.exp(-iters * dd)) / (1 - math.exp(-dd))
    y = vd.copy()
    for _ in range(min(iters, 60)):                     # y -> 1/sqrt(1 + y) contracts by ~0.3 a step
        y = 1 / np.sqrt(1 + y)
    want = (sins + exps + y).astype(np.float32)
    # approximate sin/exp (~1e-6 absolute each) summed over iters in float32
    return Case("sfu_loop", sfu_loop, (blocks(n, BLOCK),), (BLOCK,),
                (v, np.full(n, np.nan, np.float32), np.int64(iters), d), {1: want},
                rtol=1e-4, atol=1e-5 * iters)


def build_wave_quant(rng, grid, iters=2048, b=0.75, c=0.25):
    b, c = np.float32(b), np.float32(c)
    t = np.roll(np.arange(BLOCK), -1).astype(np.float64) * 1e-3        # thread t reads thread t + 1's value
    fix = float(c) / (1 - float(b))
    bk = float(b) ** iters
    block = bk * (2 * t + 0.5 - 2 * fix) + 2 * fix
    want = np.tile(block, grid).astype(np.float32)
    return Case("wave_quant", wave_quant, (grid,), (BLOCK,),
                (np.full(grid * BLOCK, np.nan, np.float32), np.int64(iters), b, c), {0: want},
                rtol=1e-5, atol=1e-5)
