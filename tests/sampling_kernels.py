"""Kernels the sampling tests share (tests/timing/test_sampling_honesty.py, test_sampling_settles.py,
tests/sweep/test_replay_identity.py): launches whose samples a property of sampled timing is about."""
import numpy as np
from numba import cuda


def reread(a, out, n):
    """The grid reads `a` four times, in order: whether its re-reads hit depends on the L2's size."""
    i = cuda.grid(1)
    if i < 4 * n:
        v = a[i % n]
        if v < -1.0:
            out[0] = v


def skewed(out, heavy_from, iters):
    """Blocks below `heavy_from` idle, the rest of widely varying work (k^2 steps for k = b * 7919 mod 16):
    after an idle first wave, the later waves start together and stay in step in a sample."""
    b = cuda.blockIdx.x
    k = (b * 7919) % 16
    n = 0 if b < heavy_from else iters * k * k
    acc = np.float32(0)
    for _ in range(n):
        acc = acc * np.float32(0.999) + np.float32(1)
    out[cuda.grid(1)] = acc
