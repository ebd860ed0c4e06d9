"""Shared input builder and reference for matmul_naive / matmul_tiled.

C = A @ B with A (m, k), B (k, n), float32, one thread per element of C in 16x16
blocks. Inputs are drawn from [0.5, 1.5), all positive, so the dot products have
no cancellation and a rigorous relative bound holds: k products and k additions
accumulated in float32 (in any order, fused or not) have relative error at most
gamma_k ~= k * u, u = 2^-24 (Higham, "Accuracy and Stability of Numerical
Algorithms", Thm 3.1 / eq. 3.5), and the float64 reference rounded to float32 adds
u/2. rtol = (k + 2) * u: 4.9e-6 at k = 80, 2.4e-4 at k = 4096.
"""
import numpy as np

from programs.base import Case

TILE = 16


def build_matmul(name, kernel, rng, m, n, k):
    a = rng.uniform(0.5, 1.5, (m, k)).astype(np.float32)
    b = rng.uniform(0.5, 1.5, (k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    return Case(name, kernel, grid, (TILE, TILE), (a, b, c), {2: want},
                rtol=(k + 2) * 2.0**-24, atol=0.0)


MATMUL_SIZES = {
    "default": {"m": 64, "n": 96, "k": 80},
    "medium": {"m": 128, "n": 192, "k": 160},
    "large": {"m": 4096, "n": 4096, "k": 4096},
}
