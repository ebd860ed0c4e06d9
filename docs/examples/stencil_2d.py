"""A program file of your own: the 2-D 5-point stencil, one thread per output element.

    gpusim run docs/examples/stencil_2d.py                     # the source view, verdict and memory chart
    gpusim run docs/examples/stencil_2d.py --mode full         # every block simulated: the L2 sees the reuse
    gpusim run docs/examples/stencil_2d.py --set h=1024 --set w=1024

How a program file is written: a module that defines `PROGRAM = ProgramSpec(name,
description, build, sizes)`. `build(rng, **params)` makes the inputs for one size and
returns a `Case(name, kernel, grid, block, args, expected)`: the `@cuda.jit` kernel, the
launch, its arguments (numpy arrays are copied to the simulated GPU and back, scalars
passed as they are), and `expected`, {argument index: the array numpy computes}, which
`gpusim run` checks each output against (exactly, or within `Case(rtol=, atol=)`: see
mandelbrot.py). `sizes` names the parameter sets; 'default' is the one `gpusim run` uses,
and `--size NAME`, `--set KEY=VALUE` pick others.

What it teaches: each input element is read by five threads. The L1 serves the
neighbours in a row (the same sectors), the L2 the rows above and below that a
neighbouring block loaded, so DRAM reads the input about once (its 524 KB at 256 x 512).
"""
import numpy as np
from numba import cuda, float32

from programs.base import Case, ProgramSpec

BX, BY = 32, 8                       # a warp is one 32-wide row segment


@cuda.jit
def stencil_2d(x, out):
    j, i = cuda.grid(2)
    h, w = x.shape
    if i < h and j < w:
        if 0 < i < h - 1 and 0 < j < w - 1:
            out[i, j] = float32(4) * x[i, j] - x[i - 1, j] - x[i + 1, j] - x[i, j - 1] - x[i, j + 1]
        else:
            out[i, j] = x[i, j]


def reference(x):
    out = x.copy()
    out[1:-1, 1:-1] = 4 * x[1:-1, 1:-1] - x[:-2, 1:-1] - x[2:, 1:-1] - x[1:-1, :-2] - x[1:-1, 2:]
    return out


def build(rng, h, w):
    x = rng.integers(0, 10, (h, w)).astype(np.float32)        # small integers: every sum is exact
    out = np.zeros_like(x)
    return Case("stencil_2d", stencil_2d, ((w + BX - 1) // BX, (h + BY - 1) // BY), (BX, BY), (x, out),
                {1: reference(x)})


PROGRAM = ProgramSpec("stencil_2d", "2-D 5-point stencil (reuse through L1 and L2)", build,
                      sizes={"default": {"h": 256, "w": 512}, "large": {"h": 4096, "w": 4096}})
