"""A program file of your own: the Mandelbrot set, one thread per pixel.

    gpusim run docs/examples/mandelbrot.py                 # checked against numpy, then the source view
    gpusim run docs/examples/mandelbrot.py --plot plots/   # the divergence map of its most divergent block

What it teaches: a data-dependent loop. A warp keeps iterating until its slowest lane's
point escapes, so warps on the set's boundary run at a fraction of their lanes, while
warps far outside it (block 0, the corner at -2 - 1.5i) all escape at once.

The float check has a tolerance: ptxas contracts `zr * zr - zi * zi + cr` into fused
multiply-adds (one rounding where numpy rounds twice), so the last bits of z differ and a
point near the set's boundary may escape an iteration earlier or later. The output is the
smooth escape time, continuous in z, so such a point moves by a little: `Case(...,
atol=ATOL)` accepts it (`rtol`, `atol`: numpy.isclose's; 0 and 0 mean an exact check),
where an exact check would need `--no-check`.
"""
import math

import numpy as np
from numba import cuda

from programs.base import Case, ProgramSpec

MAX_ITER = 100
ATOL = 0.05          # the smooth escape time is continuous: one iteration more or less moves it little
BX, BY = 32, 8


@cuda.jit
def mandelbrot(out, x0, y0, step):
    col, row = cuda.grid(2)
    h, w = out.shape
    if row < h and col < w:
        cr = x0 + col * step
        ci = y0 + row * step
        zr = 0.0
        zi = 0.0
        n = 0
        while n < MAX_ITER and zr * zr + zi * zi <= 4.0:
            zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
            n += 1
        r2 = zr * zr + zi * zi
        out[row, col] = n - math.log2(0.5 * math.log2(r2)) if 4.0 < r2 else float(n)   # smooth escape time


def reference(h, w, x0, y0, step):
    c = (x0 + np.arange(w) * step)[None, :] + 1j * (y0 + np.arange(h) * step)[:, None]
    zr = np.zeros(c.shape)
    zi = np.zeros(c.shape)
    n = np.zeros(c.shape)
    for _ in range(MAX_ITER):
        alive = zr * zr + zi * zi <= 4.0
        zr, zi = np.where(alive, zr * zr - zi * zi + c.real, zr), np.where(alive, 2.0 * zr * zi + c.imag, zi)
        n += alive
    r2 = zr * zr + zi * zi
    with np.errstate(all="ignore"):
        return np.where(r2 > 4.0, n - np.log2(0.5 * np.log2(r2)), n)


def build(rng, h, w):
    x0, y0 = -2.0, -1.5
    step = 3.0 / w
    out = np.full((h, w), np.nan)
    grid = ((w + BX - 1) // BX, (h + BY - 1) // BY)
    return Case("mandelbrot", mandelbrot, grid, (BX, BY), (out, x0, y0, step),
                {0: reference(h, w, x0, y0, step)}, rtol=0.0, atol=ATOL)


PROGRAM = ProgramSpec("mandelbrot", "escape-time Mandelbrot set (data-dependent loop, divergence)", build,
                      sizes={"default": {"h": 128, "w": 256}, "large": {"h": 2048, "w": 4096}})
