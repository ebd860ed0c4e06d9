"""Shared-memory atomics (issue 24: a privatised 256-bin histogram predicted 32-38% too
slow): what ATOMS costs per distinct address, per same-address lane and per bank
conflict, and what the float add (no native shared float add on sm_90: ptxas emits a
compare-and-swap loop, ATOMS.CAST.SPIN) costs.

Every kernel: 1056 blocks of 256 threads, each block zeroes 4096 int32 (float32)
shared words, does `iters` atomic adds per thread, and writes what it counted:
- `shared_bins_*`: random keys (`common.mix32` of thread and iteration) & (nbins - 1):
  the privatised histogram's inner loop. int32 + 1 compiles to ATOMS.POPC.INC.32 (the
  hardware adds the number of lanes on each address), int32 + a varying value to
  ATOMS.ADD, float32 + 1 to the CAS loop. Each block writes its nbins counts.
- `shared_lanes`: a fixed conflict structure, every iteration the same: lane l of warp
  w adds 1 at word ((l >> lane_shift) * stride + w) mod 4096: 2^lane_shift lanes per
  address, 32 >> lane_shift addresses `stride` words apart (stride 32: all in one bank).
  Each thread writes the count at its own word.
What each size decides: docs/mechanisms_24.md.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, int32, uint32

from programs.base import Case, ProgramSpec
from validate.mechanisms.common import FILL_BLOCKS, THREADS, log2, mix32, mix32_np

SH_WORDS = 4096                          # 16 KiB of shared memory per block: 8 blocks fit an SM
SEED = 0x68E31DA4


@cuda.jit
def shared_bins_inc(out, iters, mask, seed):
    sh = cuda.shared.array(SH_WORDS, int32)
    tid = cuda.threadIdx.x
    for k in range(tid, SH_WORDS, cuda.blockDim.x):
        sh[k] = 0
    cuda.syncthreads()
    g = uint32(cuda.grid(1))
    for r in range(iters):
        cuda.atomic.add(sh, mix32(g, uint32(r), seed) & mask, 1)           # ATOMS.POPC.INC
    cuda.syncthreads()
    for k in range(tid, mask + uint32(1), cuda.blockDim.x):
        out[cuda.blockIdx.x * (mask + uint32(1)) + k] = sh[k]


@cuda.jit
def shared_bins_add(out, iters, mask, seed):
    sh = cuda.shared.array(SH_WORDS, int32)
    tid = cuda.threadIdx.x
    for k in range(tid, SH_WORDS, cuda.blockDim.x):
        sh[k] = 0
    cuda.syncthreads()
    g = uint32(cuda.grid(1))
    v = int32(g & uint32(7)) + 1
    for r in range(iters):
        cuda.atomic.add(sh, mix32(g, uint32(r), seed) & mask, v)           # ATOMS.ADD
    cuda.syncthreads()
    for k in range(tid, mask + uint32(1), cuda.blockDim.x):
        out[cuda.blockIdx.x * (mask + uint32(1)) + k] = sh[k]


@cuda.jit
def shared_bins_f32(out, iters, mask, seed):
    sh = cuda.shared.array(SH_WORDS, float32)
    tid = cuda.threadIdx.x
    for k in range(tid, SH_WORDS, cuda.blockDim.x):
        sh[k] = 0
    cuda.syncthreads()
    g = uint32(cuda.grid(1))
    for r in range(iters):
        cuda.atomic.add(sh, mix32(g, uint32(r), seed) & mask, float32(1))  # CAS loop
    cuda.syncthreads()
    for k in range(tid, mask + uint32(1), cuda.blockDim.x):
        out[cuda.blockIdx.x * (mask + uint32(1)) + k] = sh[k]


@cuda.jit
def shared_lanes(out, iters, lane_shift, stride):
    sh = cuda.shared.array(SH_WORDS, int32)
    tid = cuda.threadIdx.x
    for k in range(tid, SH_WORDS, cuda.blockDim.x):
        sh[k] = 0
    cuda.syncthreads()
    a = ((((uint32(tid) & uint32(31)) >> lane_shift) * stride) + (uint32(tid) >> uint32(5))) & uint32(SH_WORDS - 1)
    for _ in range(iters):
        cuda.atomic.add(sh, a, 1)
    cuda.syncthreads()
    out[cuda.grid(1)] = sh[a]


@cuda.jit
def shared_lanes_f32(out, iters, lane_shift, stride):
    sh = cuda.shared.array(SH_WORDS, float32)
    tid = cuda.threadIdx.x
    for k in range(tid, SH_WORDS, cuda.blockDim.x):
        sh[k] = 0
    cuda.syncthreads()
    a = ((((uint32(tid) & uint32(31)) >> lane_shift) * stride) + (uint32(tid) >> uint32(5))) & uint32(SH_WORDS - 1)
    for _ in range(iters):
        cuda.atomic.add(sh, a, float32(1))
    cuda.syncthreads()
    out[cuda.grid(1)] = sh[a]


_BINS = {"inc": shared_bins_inc, "add": shared_bins_add, "f32": shared_bins_f32}


def build_bins(rng, op, nbins, iters, blocks=FILL_BLOCKS, threads=THREADS):
    if not 1 <= nbins <= SH_WORDS:
        raise ValueError(f"shared_bins: nbins must be in 1..{SH_WORDS}, got {nbins}")
    log2(nbins, "nbins")
    g = np.arange(blocks * threads)
    keys = (mix32_np(g[:, None], np.arange(iters)[None, :], SEED) & np.uint32(nbins - 1)).astype(np.int64)
    vals = np.broadcast_to(((g & 7) + 1)[:, None] if op == "add" else np.ones(1, np.int64), keys.shape)
    flat = (g // threads)[:, None] * nbins + keys
    want = np.bincount(flat.ravel(), weights=vals.ravel(), minlength=blocks * nbins)
    dt = np.float32 if op == "f32" else np.int32
    return Case("shared_bins", _BINS[op], (blocks,), (threads,),
                (np.full(blocks * nbins, -1, dt), iters, np.uint32(nbins - 1), np.uint32(SEED)), {0: want.astype(dt)})


def build_lanes(rng, lanes_per_addr, stride, iters, dtype="int32", blocks=FILL_BLOCKS, threads=THREADS):
    ls = log2(lanes_per_addr, "lanes_per_addr")
    tid = np.arange(threads)
    a = (((tid & 31) >> ls) * stride + (tid >> 5)) & (SH_WORDS - 1)
    count = np.bincount(a, minlength=SH_WORDS)[a] * iters
    dt = np.dtype(dtype)
    return Case("shared_lanes", shared_lanes_f32 if dt == np.float32 else shared_lanes, (blocks,), (threads,),
                (np.full(blocks * threads, -1, dt), iters, np.uint32(ls), np.uint32(stride)),
                {0: np.tile(count, blocks).astype(dt)})


_SMALL = {"blocks": 2, "threads": 64}
SPECS = (
    ProgramSpec("shared_bins", "privatised histogram loop: random keys into nbins shared bins (inc / add / f32)",
                build_bins, sizes={
                    "default": {"op": "inc", "nbins": 256, "iters": 4, **_SMALL},
                    **{f"inc_b{b}": {"op": "inc", "nbins": b, "iters": 64} for b in (1, 32, 256, 4096)},
                    "add_b256": {"op": "add", "nbins": 256, "iters": 64},
                    "f32_b256": {"op": "f32", "nbins": 256, "iters": 16},
                    "f32_b4096": {"op": "f32", "nbins": 4096, "iters": 16}},
                tags=("atomics", "shared-memory")),
    ProgramSpec("shared_lanes", "fixed conflict structure: 2^k lanes per address, addresses `stride` words apart",
                build_lanes, sizes={
                    "default": {"lanes_per_addr": 4, "stride": 32, "iters": 4, **_SMALL},
                    "l1_s1": {"lanes_per_addr": 1, "stride": 1, "iters": 256},
                    "l1_s2": {"lanes_per_addr": 1, "stride": 2, "iters": 128},
                    "l1_s32": {"lanes_per_addr": 1, "stride": 32, "iters": 32},
                    "l4_s1": {"lanes_per_addr": 4, "stride": 1, "iters": 128},
                    "l4_s32": {"lanes_per_addr": 4, "stride": 32, "iters": 64},
                    "l32": {"lanes_per_addr": 32, "stride": 1, "iters": 64},
                    "f32_l1_s1": {"lanes_per_addr": 1, "stride": 1, "iters": 64, "dtype": "float32"},
                    "f32_l32": {"lanes_per_addr": 32, "stride": 1, "iters": 8, "dtype": "float32"}},
                tags=("atomics", "shared-memory", "bank-conflicts")),
)
