"""Lanes `stride` bytes apart (issue 24: a float copy with 128 B between lanes predicted
47% too fast): what the L1 does with a request whose 32 lanes fall in 1..32 lines, when
they hit (the tag stage: lines per cycle, and which lines share a tag bank), when they
miss to a resident L2, and when the L2 misses to DRAM (32-B sectors from 64-B bursts),
for loads, stores (partial sectors) and copies.

Every kernel runs 8 blocks of 256 threads per SM; thread t of T makes 4 independent
accesses per iteration r, to elements e = t + (4r + k) T, k = 0..3, at word
(e * stride) & mask:
- `stride_read`: int32 loads, summed per thread (one store per thread at the end).
  mask = footprint - 1 wraps the accesses into a footprint: 64 KiB (L1-resident: every
  SM's L1 holds it after the first pass), 16 MiB (L2-resident), or no wrap (each
  element read once from DRAM, the array n * stride words).
- `stride_read64`: the same with int64 elements (8 B per lane: 8 sectors per request).
- `stride_copy`: y[e * sy] = x[e * sx] (float32 bits): sx = sy = s (both strided), or one
  side coalesced (s, 1) / (1, s).
- `stride_write`: y[e * s] = e: strided 4-byte stores only (partial sectors in the L2).
What each size decides: docs/mechanisms_24.md.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, int32, int64, uint32

from programs.base import Case, ProgramSpec
from validate.mechanisms.common import FILL_BLOCKS, THREADS, KiB, MiB, log2

NO_WRAP = 0xFFFFFFFF


@cuda.jit
def stride_read(x, out, stride, iters, mask):
    t = uint32(cuda.grid(1))
    T = uint32(cuda.gridsize(1))
    acc = int32(0)
    for r in range(iters):
        e = t + uint32(4 * r) * T
        acc += (x[(e * stride) & mask] + x[((e + T) * stride) & mask]
                + x[((e + uint32(2) * T) * stride) & mask] + x[((e + uint32(3) * T) * stride) & mask])
    out[t] = acc


@cuda.jit
def stride_read64(x, out, stride, iters, mask):
    t = uint32(cuda.grid(1))
    T = uint32(cuda.gridsize(1))
    acc = int64(0)
    for r in range(iters):
        e = t + uint32(4 * r) * T
        acc += (x[(e * stride) & mask] + x[((e + T) * stride) & mask]
                + x[((e + uint32(2) * T) * stride) & mask] + x[((e + uint32(3) * T) * stride) & mask])
    out[t] = acc


@cuda.jit
def stride_copy(x, y, sx, sy, iters):
    t = uint32(cuda.grid(1))
    T = uint32(cuda.gridsize(1))
    for r in range(iters):
        e = t + uint32(4 * r) * T
        a, b = x[e * sx], x[(e + T) * sx]             # 4 loads issued before the stores
        c, d = x[(e + uint32(2) * T) * sx], x[(e + uint32(3) * T) * sx]
        y[e * sy] = a
        y[(e + T) * sy] = b
        y[(e + uint32(2) * T) * sy] = c
        y[(e + uint32(3) * T) * sy] = d


@cuda.jit
def stride_write(y, stride, iters):
    t = uint32(cuda.grid(1))
    T = uint32(cuda.gridsize(1))
    for r in range(iters):
        e = t + uint32(4 * r) * T
        y[e * stride] = int32(e)
        y[(e + T) * stride] = int32(e + T)
        y[(e + uint32(2) * T) * stride] = int32(e + uint32(2) * T)
        y[(e + uint32(3) * T) * stride] = int32(e + uint32(3) * T)


def _elements(blocks, threads, iters):
    """(threads, 4 * iters) element indices each thread visits, in the kernels' order."""
    T = blocks * threads
    return np.arange(T)[:, None] + np.arange(4 * iters)[None, :] * T


def build_read(rng, stride_bytes, iters, footprint_bytes=None, wide=False, blocks=FILL_BLOCKS, threads=THREADS):
    esize = 8 if wide else 4
    if stride_bytes % esize:
        raise ValueError(f"stride_read: stride_bytes {stride_bytes} is not a multiple of the element ({esize} B)")
    s = stride_bytes // esize
    e = _elements(blocks, threads, iters)
    if footprint_bytes is None:                           # each element once, from DRAM
        mask, words = NO_WRAP, int(e.max() + 1) * s
    else:
        words = footprint_bytes // esize
        mask = words - 1
        log2(words, "footprint words")
    idx = (e * s) & mask
    dt = np.int64 if wide else np.int32
    x = (np.arange(words, dtype=np.int64) & 0xFFFF).astype(dt)
    want = (idx & 0xFFFF).sum(axis=1).astype(dt) if dt == np.int64 else (idx & 0xFFFF).sum(axis=1).astype(np.int32)
    kernel = stride_read64 if wide else stride_read
    return Case("stride_read", kernel, (blocks,), (threads,),
                (x, np.zeros(blocks * threads, dt), np.uint32(s), iters, np.uint32(mask)), {1: want})


def build_copy(rng, sx, sy, iters, blocks=FILL_BLOCKS, threads=THREADS):
    e = _elements(blocks, threads, iters).ravel()
    n = int(e.max()) + 1
    x = (np.arange(n * sx, dtype=np.int64) & 0xFFFF).astype(np.float32)
    y = np.full(n * sy, -1.0, np.float32)
    want = y.copy()
    want[e * sy] = x[e * sx]
    return Case("stride_copy", stride_copy, (blocks,), (threads,), (x, y, np.uint32(sx), np.uint32(sy), iters),
                {1: want})


def build_write(rng, stride_bytes, iters, blocks=FILL_BLOCKS, threads=THREADS):
    s = stride_bytes // 4
    e = _elements(blocks, threads, iters).ravel()
    y = np.full((int(e.max()) + 1) * s, -1, np.int32)
    want = y.copy()
    want[e * s] = e
    return Case("stride_write", stride_write, (blocks,), (threads,), (y, np.uint32(s), iters), {0: want})


_SMALL = {"blocks": 4, "threads": 64}
SPECS = (
    ProgramSpec("stride_read", "int32 loads with lanes stride_bytes apart: L1-resident (64 KiB), L2-resident "
                "(16 MiB) or each element once from DRAM",
                build_read, sizes={
                    "default": {"stride_bytes": 128, "iters": 2, "footprint_bytes": 64 * KiB, **_SMALL},
                    **{f"l1_s{b}B": {"stride_bytes": b, "iters": it, "footprint_bytes": 64 * KiB}
                       for b, it in ((4, 96), (16, 64), (32, 32), (64, 32), (128, 32), (256, 32), (512, 32),
                                     (1024, 32))},
                    "l1_i64_s8B": {"stride_bytes": 8, "iters": 64, "footprint_bytes": 64 * KiB, "wide": True},
                    **{f"l2_s{b}B": {"stride_bytes": b, "iters": it, "footprint_bytes": 16 * MiB}
                       for b, it in ((4, 64), (32, 8), (128, 8))},
                    **{f"dram_s{b}B": {"stride_bytes": b, "iters": it}
                       for b, it in ((4, 16), (16, 8), (32, 4), (64, 2), (128, 2), (256, 2))}},
                tags=("l1", "coalescing", "memory")),
    ProgramSpec("stride_copy", "float32 copy y[e*sy] = x[e*sx]: both strided, or one side coalesced",
                build_copy, sizes={
                    "default": {"sx": 32, "sy": 32, "iters": 2, **_SMALL},
                    **{f"s{4 * s}B": {"sx": s, "sy": s, "iters": it} for s, it in ((1, 16), (8, 2), (32, 2))},
                    "read_s128B": {"sx": 32, "sy": 1, "iters": 2},
                    "write_s128B": {"sx": 1, "sy": 32, "iters": 2}},
                tags=("l1", "coalescing", "memory", "dram")),
    ProgramSpec("stride_write", "int32 stores with lanes stride_bytes apart (partial sectors)",
                build_write, sizes={
                    "default": {"stride_bytes": 128, "iters": 2, **_SMALL},
                    **{f"s{b}B": {"stride_bytes": b, "iters": it} for b, it in ((4, 16), (32, 2), (128, 2))}},
                tags=("l2", "partial-writes", "dram")),
)
