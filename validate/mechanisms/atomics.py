"""Global atomics under contention (issue 24): what an L2 slice's atomic units cost per
lane, per distinct address, per sector and per hot line, for int and float, with and
without a returned value, and what ptxas already aggregates.

Every kernel runs 8 blocks of 256 threads per SM (1056 blocks) and does `iters` atomic
adds per thread (or per active lane) of 1 in the array's dtype, at addresses
a hash of (thread or warp, iteration) picks (`common.mix32`), so ptxas cannot prove an
address warp-uniform and emits one REDG (ATOMG when the old value is used) per warp
instruction, with each lane's own address:
- `atomic_bins`: a histogram with uniform random keys: lane -> key = hash & (nbins - 1),
  address key << shift (shift 0: 8 bins to a 32-B sector; 3: one bin per sector; 5: one
  per 128-B line). Sweeping nbins 1..131072 moves from every SM on one address to no
  contention at all; the 256-bin int32 case is the one predicted 7x too fast.
- `atomic_lanes`: one request's shape, fixed: the warp's 32 lanes hit 32 >> lane_shift
  distinct addresses (2^lane_shift lanes each), 2^addr_shift words apart, inside a span
  the hash places per (warp, iteration) in a region of `region` spans (large: each
  warp on its own lines; 1: every warp of the GPU on the same lines).
- `atomic_hot`: only the first `nactive` lanes of each warp add, at one of `nhot` hot
  addresses 2^hot_shift words apart per (warp, iteration): nactive 1 is a warp-
  aggregated atomic written by hand (a shuffle reduction, then lane 0's add).
- `atomic_hot_ret`: the same with the old value used (ATOMG: the warp waits for it).
- `atomic_uniform`: the address is the block index & mask, provably warp-uniform:
  ptxas aggregates the int32 add of a constant (VOTEU.ANY, UFLO, POPC, one REDG from the
  leader lane) but not the float add (REDG from every lane).
What each size decides: docs/mechanisms_24.md.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, uint32

from programs.base import Case, ProgramSpec
from validate.mechanisms.common import FILL_BLOCKS, THREADS, log2, mix32, mix32_np

SEED = 0x2545F491


# ---- kernels ----------------------------------------------------------------------------
# One set per dtype, the added 1 a constant of it (frozen from the closure): an atomic whose
# value is a kernel parameter loads it with an LDC that ptxas files under the atomic's line,
# and gpusim then misplaces the remainder loop's atomics (tests/timing/test_atomic_value_from_parameter.py).

def _kernels(dtype):
    one = np.dtype(dtype).type(1)
    zero = np.dtype(dtype).type(0)

    @cuda.jit
    def atomic_bins(bins, iters, mask, shift, seed):
        g = uint32(cuda.grid(1))
        for r in range(iters):
            cuda.atomic.add(bins, (mix32(g, uint32(r), seed) & mask) << shift, one)

    @cuda.jit
    def atomic_bins_ret(bins, old, iters, mask, shift, seed):
        g = uint32(cuda.grid(1))
        acc = zero
        for r in range(iters):
            acc += cuda.atomic.add(bins, (mix32(g, uint32(r), seed) & mask) << shift, one)
        old[g] = acc                             # the old values, order-dependent: recorded, not checked

    @cuda.jit
    def atomic_lanes(counts, iters, lane_shift, addr_shift, span_shift, region_mask, seed):
        g = uint32(cuda.grid(1))
        off = ((g & uint32(31)) >> lane_shift) << addr_shift
        w = g >> uint32(5)
        for r in range(iters):
            cuda.atomic.add(counts, ((mix32(w, uint32(r), seed) & region_mask) << span_shift) + off, one)

    @cuda.jit
    def atomic_hot(counts, iters, nactive, hot_mask, hot_shift, seed):
        g = uint32(cuda.grid(1))
        if (g & uint32(31)) < nactive:
            w = g >> uint32(5)
            for r in range(iters):
                cuda.atomic.add(counts, (mix32(w, uint32(r), seed) & hot_mask) << hot_shift, one)

    @cuda.jit
    def atomic_hot_ret(counts, old, iters, nactive, hot_mask, hot_shift, seed):
        g = uint32(cuda.grid(1))
        acc = zero
        if (g & uint32(31)) < nactive:
            w = g >> uint32(5)
            for r in range(iters):
                acc += cuda.atomic.add(counts, (mix32(w, uint32(r), seed) & hot_mask) << hot_shift, one)
        old[g] = acc

    @cuda.jit
    def atomic_uniform(counts, iters, mask):
        slot = uint32(cuda.blockIdx.x) & mask
        for _ in range(iters):
            cuda.atomic.add(counts, slot, one)

    return {f.py_func.__name__: f for f in (atomic_bins, atomic_bins_ret, atomic_lanes, atomic_hot, atomic_hot_ret,
                                            atomic_uniform)}


KERNELS = {dt: _kernels(dt) for dt in ("int32", "float32", "float64")}


# ---- builders ------------------------------------------------------------------------

def _u32(*v):
    return tuple(np.uint32(x) for x in v)


def build_bins(rng, nbins, iters, shift=0, dtype="int32", ret=False, blocks=FILL_BLOCKS, threads=THREADS):
    dt = np.dtype(dtype)
    log2(nbins, "nbins")
    n = blocks * threads
    keys = mix32_np(np.arange(n)[:, None], np.arange(iters)[None, :], SEED) & np.uint32(nbins - 1)
    want = np.zeros(nbins << shift, dt)
    want[::1 << shift] = np.bincount(keys.ravel(), minlength=nbins)
    bins = np.zeros(nbins << shift, dt)
    scal = (iters,) + _u32(nbins - 1, shift, SEED)
    k = KERNELS[dt.name]
    if ret:
        return Case("atomic_bins", k["atomic_bins_ret"], (blocks,), (threads,), (bins, np.zeros(n, dt)) + scal, {0: want})
    return Case("atomic_bins", k["atomic_bins"], (blocks,), (threads,), (bins,) + scal, {0: want})


def build_lanes(rng, lanes_per_addr, addr_stride_words, region, iters, dtype="int32", blocks=FILL_BLOCKS,
                threads=THREADS):
    dt = np.dtype(dtype)
    ls, as_ = log2(lanes_per_addr, "lanes_per_addr"), log2(addr_stride_words, "addr_stride_words")
    span = max(32, (32 >> ls) << as_)                     # words one request spans, a whole 128-B line at least
    n = blocks * threads
    g = np.arange(n)
    base = (mix32_np((g >> 5)[:, None], np.arange(iters)[None, :], SEED) & np.uint32(region - 1)).astype(np.int64)
    addr = base * span + (((g & 31) >> ls) << as_)[:, None]
    want = np.bincount(addr.ravel(), minlength=region * span).astype(dt)
    return Case("atomic_lanes", KERNELS[dt.name]["atomic_lanes"], (blocks,), (threads,),
                (np.zeros(region * span, dt), iters) + _u32(ls, as_, log2(span, "span"), region - 1, SEED),
                {0: want})


def build_hot(rng, nactive, nhot, iters, hot_stride_words=1, dtype="int32", ret=False, blocks=FILL_BLOCKS,
              threads=THREADS):
    dt = np.dtype(dtype)
    hs = log2(hot_stride_words, "hot_stride_words")
    n = blocks * threads
    w = np.arange(n // 32)
    hot = mix32_np(w[:, None], np.arange(iters)[None, :], SEED) & np.uint32(nhot - 1)
    want = np.zeros(nhot << hs, dt)
    want[::1 << hs] = np.bincount(hot.ravel(), minlength=nhot) * nactive
    scal = (iters,) + _u32(nactive, nhot - 1, hs, SEED)
    k = KERNELS[dt.name]
    if ret:
        return Case("atomic_hot", k["atomic_hot_ret"], (blocks,), (threads,),
                    (np.zeros(nhot << hs, dt), np.zeros(n, dt)) + scal, {0: want})
    return Case("atomic_hot", k["atomic_hot"], (blocks,), (threads,), (np.zeros(nhot << hs, dt),) + scal, {0: want})


def build_uniform(rng, nslots, iters, dtype="int32", blocks=FILL_BLOCKS, threads=THREADS):
    dt = np.dtype(dtype)
    log2(nslots, "nslots")
    want = (np.bincount(np.arange(blocks) & (nslots - 1), minlength=nslots) * threads * iters).astype(dt)
    return Case("atomic_uniform", KERNELS[dt.name]["atomic_uniform"], (blocks,), (threads,),
                (np.zeros(nslots, dt), iters) + _u32(nslots - 1), {0: want})


# ---- the suite -----------------------------------------------------------------------

_SMALL = {"blocks": 4, "threads": 64}
SPECS = (
    ProgramSpec("atomic_bins", "histogram of uniform random keys: nbins int32/float bins at 4, 32 or 128 B",
                build_bins, sizes={
                    "default": {"nbins": 256, "iters": 2, **_SMALL},
                    **{f"i32_b{b}": {"nbins": b, "iters": it} for b, it in
                       ((1, 1), (8, 1), (32, 2), (256, 4), (2048, 16), (16384, 16), (131072, 16))},
                    **{f"i32_b{b}_s32B": {"nbins": b, "iters": it, "shift": 3} for b, it in ((8, 1), (32, 4), (256, 16))},
                    **{f"i32_b{b}_s128B": {"nbins": b, "iters": it, "shift": 5} for b, it in ((8, 1), (32, 4), (256, 16))},
                    "f32_b256": {"nbins": 256, "iters": 4, "dtype": "float32"},
                    "f32_b131072": {"nbins": 131072, "iters": 16, "dtype": "float32"},
                    "f64_b256": {"nbins": 256, "iters": 8, "dtype": "float64"},
                    "i32_b256_ret": {"nbins": 256, "iters": 4, "ret": True},
                    "f32_b256_ret": {"nbins": 256, "iters": 4, "dtype": "float32", "ret": True}},
                tags=("atomics", "contention")),
    ProgramSpec("atomic_lanes", "one request's shape fixed: 2^k lanes per address, addresses 4 or 32 B apart, "
                "spread over many lines or all warps on one span",
                build_lanes, sizes={
                    "default": {"lanes_per_addr": 4, "addr_stride_words": 1, "region": 64, "iters": 2, **_SMALL},
                    **{f"priv_l{lp}_w1": {"lanes_per_addr": lp, "addr_stride_words": 1, "region": 1 << 14, "iters": 64}
                       for lp in (1, 2, 4, 8, 32)},
                    **{f"priv_l{lp}_w8": {"lanes_per_addr": lp, "addr_stride_words": 8, "region": 1 << 12, "iters": 64}
                       for lp in (1, 4)},
                    "hot_l1_w1": {"lanes_per_addr": 1, "addr_stride_words": 1, "region": 1, "iters": 2},
                    "hot_l4_w1": {"lanes_per_addr": 4, "addr_stride_words": 1, "region": 1, "iters": 2},
                    "hot_l1_w8": {"lanes_per_addr": 1, "addr_stride_words": 8, "region": 1, "iters": 2},
                    "hot8_l1_w1": {"lanes_per_addr": 1, "addr_stride_words": 1, "region": 8, "iters": 4}},
                tags=("atomics", "contention")),
    ProgramSpec("atomic_hot", "the first nactive lanes of every warp add at one of nhot hot addresses "
                "(nactive 1: a warp-aggregated atomic written by hand)",
                build_hot, sizes={
                    "default": {"nactive": 1, "nhot": 1, "iters": 4, **_SMALL},
                    **{f"i32_a{a}_h1": {"nactive": a, "nhot": 1, "iters": it} for a, it in ((1, 16), (4, 4), (32, 1))},
                    "f32_a1_h1": {"nactive": 1, "nhot": 1, "iters": 16, "dtype": "float32"},
                    "f32_a32_h1": {"nactive": 32, "nhot": 1, "iters": 1, "dtype": "float32"},
                    "f32_a1_h32": {"nactive": 1, "nhot": 32, "iters": 64, "hot_stride_words": 8, "dtype": "float32"},
                    "f32_a1_h1024": {"nactive": 1, "nhot": 1024, "iters": 64, "dtype": "float32"},
                    "f32_a1_h1_ret": {"nactive": 1, "nhot": 1, "iters": 16, "dtype": "float32", "ret": True}},
                tags=("atomics", "contention", "warp-aggregation")),
    ProgramSpec("atomic_uniform", "add at blockIdx & (nslots - 1): ptxas aggregates int32 (one REDG per warp), "
                "not float32 (32 lanes on one address)",
                build_uniform, sizes={
                    "default": {"nslots": 1, "iters": 4, **_SMALL},
                    "i32_s1": {"nslots": 1, "iters": 16},
                    "f32_s1": {"nslots": 1, "iters": 1, "dtype": "float32"}},
                tags=("atomics", "warp-aggregation")),
)
