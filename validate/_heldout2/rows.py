"""Row-wise kernels: layer norm with one block (512 threads) per row and the row staged in
dynamic shared memory (one global read, two-pass mean and variance from shared), softmax with
one warp per row (three passes over the row in global memory, butterfly shuffles) and with one
block (256 threads) per row (shared-memory block reductions), and a FlashAttention-style
forward pass: one thread per query row, 64 query rows a block, key and value tiles of 64 rows
staged in shared memory, an online softmax (running max and sum), the query and output rows in local arrays
(which the compiler keeps in registers); head dimension 64, optionally causal.

float32 throughout; references in float64, compared within float32 rounding.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32

from programs.base import Case
from validate._heldout2 import blocks

FULL_MASK = 0xFFFFFFFF
LN_THREADS = 512
SM_THREADS = 256                        # softmax_block_row; softmax_warp_row: 8 rows a block
HEAD_DIM = 64                           # flash_attn_fwd: head dimension = query rows a block = threads
KEY_TILE = 64
NEG_INF = -math.inf


@cuda.jit(device=True)
def _warp_sum(v):
    off = 16
    while off > 0:
        v += cuda.shfl_xor_sync(FULL_MASK, v, off)
        off //= 2
    return v


@cuda.jit(device=True)
def _warp_max(v):
    off = 16
    while off > 0:
        v = max(v, cuda.shfl_xor_sync(FULL_MASK, v, off))
        off //= 2
    return v


@cuda.jit(device=True)
def _block_reduce(v, red, is_max):
    """Sum (or max) of v over the block, returned to every thread; red: 32 float32 in shared."""
    lane = cuda.threadIdx.x % 32
    w = cuda.threadIdx.x // 32
    v = _warp_max(v) if is_max else _warp_sum(v)
    if lane == 0:
        red[w] = v
    cuda.syncthreads()
    if w == 0:
        fill = float32(NEG_INF) if is_max else float32(0)
        t = red[lane] if lane < cuda.blockDim.x // 32 else fill
        t = _warp_max(t) if is_max else _warp_sum(t)
        if lane == 0:
            red[0] = t
    cuda.syncthreads()
    total = red[0]
    cuda.syncthreads()                  # everyone has read red[0] before it is reused
    return total


@cuda.jit
def layernorm_smem_row(x, gamma, beta, y, eps):
    row_s = cuda.shared.array(0, float32)
    red = cuda.shared.array(32, float32)
    row = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    cols = x.shape[1]
    s = float32(0)
    for j in range(tid, cols, LN_THREADS):
        v = x[row, j]
        row_s[j] = v
        s += v
    mean = _block_reduce(s, red, False) / float32(cols)
    q = float32(0)
    for j in range(tid, cols, LN_THREADS):
        d = row_s[j] - mean
        q += d * d
    rstd = float32(1) / math.sqrt(_block_reduce(q, red, False) / float32(cols) + eps)
    for j in range(tid, cols, LN_THREADS):
        y[row, j] = (row_s[j] - mean) * rstd * gamma[j] + beta[j]


@cuda.jit
def softmax_warp_row(x, y):
    row = cuda.grid(1) // 32
    lane = cuda.threadIdx.x % 32
    if row < x.shape[0]:                # the same for the whole warp
        cols = x.shape[1]
        m = float32(NEG_INF)
        for j in range(lane, cols, 32):
            m = max(m, x[row, j])
        m = _warp_max(m)
        s = float32(0)
        for j in range(lane, cols, 32):
            s += math.exp(x[row, j] - m)
        inv = float32(1) / _warp_sum(s)
        for j in range(lane, cols, 32):
            y[row, j] = math.exp(x[row, j] - m) * inv


@cuda.jit
def softmax_block_row(x, y):
    red = cuda.shared.array(32, float32)
    row = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    cols = x.shape[1]
    m = float32(NEG_INF)
    for j in range(tid, cols, SM_THREADS):
        m = max(m, x[row, j])
    m = _block_reduce(m, red, True)
    s = float32(0)
    for j in range(tid, cols, SM_THREADS):
        s += math.exp(x[row, j] - m)
    inv = float32(1) / _block_reduce(s, red, False)
    for j in range(tid, cols, SM_THREADS):
        y[row, j] = math.exp(x[row, j] - m) * inv


@cuda.jit
def flash_attn_fwd(q, k, v, o, scale, causal):
    ks = cuda.shared.array((KEY_TILE, HEAD_DIM), float32)
    vs = cuda.shared.array((KEY_TILE, HEAD_DIM), float32)
    qr = cuda.local.array(HEAD_DIM, float32)
    acc = cuda.local.array(HEAD_DIM, float32)
    t = cuda.threadIdx.x
    bh = cuda.blockIdx.y
    row = cuda.blockIdx.x * HEAD_DIM + t
    for d in range(HEAD_DIM):
        qr[d] = q[bh, row, d] * scale
        acc[d] = float32(0)
    m = float32(NEG_INF)
    l = float32(0)
    last = (cuda.blockIdx.x + 1) * HEAD_DIM if causal else q.shape[1]     # keys this block needs
    for base in range(0, last, KEY_TILE):
        for r in range(KEY_TILE):       # thread t loads column t of each key and value row
            ks[r, t] = k[bh, base + r, t]
            vs[r, t] = v[bh, base + r, t]
        cuda.syncthreads()
        for j in range(KEY_TILE):
            if not causal or base + j <= row:
                s = float32(0)
                for d in range(HEAD_DIM):
                    s += qr[d] * ks[j, d]
                mn = max(m, s)
                alpha = math.exp(m - mn)
                p = math.exp(s - mn)
                l = l * alpha + p
                for d in range(HEAD_DIM):
                    acc[d] = acc[d] * alpha + p * vs[j, d]
                m = mn
        cuda.syncthreads()
    inv = float32(1) / l
    for d in range(HEAD_DIM):
        o[bh, row, d] = acc[d] * inv


# ---- builders ----------------------------------------------------------------------

def build_layernorm(rng, rows, cols, eps=1e-5):
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    gamma = rng.uniform(0.5, 1.5, cols).astype(np.float32)
    beta = rng.uniform(-0.5, 0.5, cols).astype(np.float32)
    xd = x.astype(np.float64)
    xd -= xd.mean(axis=1, keepdims=True)
    xd *= 1 / np.sqrt(np.mean(xd * xd, axis=1, keepdims=True) + eps)
    xd *= gamma
    xd += beta
    return Case("layernorm_smem_row", layernorm_smem_row, (rows,), (LN_THREADS,),
                (x, gamma, beta, np.full((rows, cols), np.nan, np.float32), np.float32(eps)),
                {3: xd.astype(np.float32)}, shared_bytes=4 * cols, rtol=1e-4, atol=1e-4)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True), dtype=np.float64)
    e /= e.sum(axis=1, keepdims=True)
    return e.astype(np.float32)


def build_softmax_warp(rng, rows, cols):
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    return Case("softmax_warp_row", softmax_warp_row, (blocks(rows * 32, SM_THREADS),), (SM_THREADS,),
                (x, np.full((rows, cols), np.nan, np.float32)), {1: _softmax(x)}, rtol=1e-4, atol=1e-9)


def build_softmax_block(rng, rows, cols):
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    return Case("softmax_block_row", softmax_block_row, (rows,), (SM_THREADS,),
                (x, np.full((rows, cols), np.nan, np.float32)), {1: _softmax(x)}, rtol=1e-4, atol=1e-9)


def build_flash_attn(rng, heads, seq, causal=False):
    if seq % HEAD_DIM:
        raise ValueError(f"flash_attn_fwd: seq must be a multiple of {HEAD_DIM}, got {seq}")
    q, k, v = (rng.standard_normal((heads, seq, HEAD_DIM), dtype=np.float32) for _ in range(3))
    scale = np.float32(1 / math.sqrt(HEAD_DIM))
    want = np.empty_like(q)
    above = np.triu(np.ones((seq, seq), bool), 1)
    for h in range(heads):
        s = (q[h] * scale).astype(np.float64) @ k[h].T.astype(np.float64)
        if causal:
            s[above] = -np.inf
        p = np.exp(s - s.max(axis=1, keepdims=True))
        want[h] = (p @ v[h].astype(np.float64)) / p.sum(axis=1, keepdims=True)
    return Case("flash_attn_fwd", flash_attn_fwd, (seq // HEAD_DIM, heads), (HEAD_DIM,),
                (q, k, v, np.full_like(q, np.nan), scale, np.int64(bool(causal))), {3: want},
                rtol=1e-4, atol=1e-5)
