"""What the mechanism microbenchmarks share: a cheap per-(thread, iteration) hash that
Numba kernels and numpy compute alike (the references replay it on the host), and the
launch shapes. Imports nothing of gpusim (`validate measure` runs it on the GPU machine).

The hash is MurmurHash3's 32-bit finaliser (fmix32) of `a * K1 + b * K2 + seed`: two
IMADs and three shift-xors per call, so a kernel whose addresses come from it spends
a few ALU instructions per memory operation, and no two lanes' addresses are related
by an affine rule (an LCG seeded with the thread index gives each iteration's lanes
addresses on one line through the index space, which changes collisions per warp).
The value is data-dependent for ptxas: an atomic whose address comes from it is never
warp-aggregated (`atomics.py` checks the SASS for VOTEU in `benchmarks/mechanisms_sass.py`).
"""
from __future__ import annotations

import numpy as np
from numba import cuda, uint32

from validate.microbench_kernels import FILL_BLOCKS, THREADS, KiB, MiB  # noqa: F401 - re-exported

K1 = 0x9E3779B9                          # golden-ratio constants of the two hash inputs
K2 = 0x632BE5AB
SMS = 132                                # H100 SXM / H200: FILL_BLOCKS = 8 blocks of THREADS on each


@cuda.jit(device=True, inline=True)
def mix32(a, b, seed):
    """fmix32(a * K1 + b * K2 + seed) in uint32 arithmetic (a, b, seed: uint32)."""
    h = uint32(a * uint32(K1) + b * uint32(K2) + seed)
    h = uint32(h ^ (h >> uint32(16)))
    h = uint32(h * uint32(0x85EBCA6B))
    h = uint32(h ^ (h >> uint32(13)))
    h = uint32(h * uint32(0xC2B2AE35))
    return uint32(h ^ (h >> uint32(16)))


def mix32_np(a, b, seed: int) -> np.ndarray:
    """The same hash on the host, elementwise over broadcast uint32 arrays `a`, `b`."""
    m = np.uint64(0xFFFFFFFF)
    h = (np.asarray(a, np.uint64) * np.uint64(K1) + np.asarray(b, np.uint64) * np.uint64(K2) + np.uint64(seed)) & m
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & m
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & m
    h ^= h >> np.uint64(16)
    return h.astype(np.uint32)


def log2(n: int, what: str) -> int:
    if n < 1 or n & (n - 1):
        raise ValueError(f"{what} must be a power of two, got {n}")
    return n.bit_length() - 1
