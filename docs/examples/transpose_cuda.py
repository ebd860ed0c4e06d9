"""The PROGRAM of transpose_cuda.cu: a CUDA C++ kernel run by `gpusim run`.

    gpusim run docs/examples/transpose_cuda.cu                 # the .cu lines in the source view
    gpusim run docs/examples/transpose_cuda.cu --set pad=1     # padded tile: no bank conflicts
    gpusim run docs/examples/transpose_cuda.cu --html out.html

How a .cu program is written: `gpusim run file.cu` loads `file.py` beside it, which defines
`PROGRAM = ProgramSpec(...)` as any program file does (see stencil_2d.py); its `build`
returns a `Case` whose kernel is `gpusim.CudaSource(path of the .cu, "kernel<...>")`, with
the arguments as the kernel's parameters take them (numpy arrays for pointers, numpy
scalars of the parameter's type: np.int32 for an `int`).
"""
from pathlib import Path

import numpy as np

import gpusim
from programs.base import Case, ProgramSpec

CU = Path(__file__).with_suffix(".cu")
TILE = 32


def build(rng, n, pad):
    x = rng.random((n, n), dtype=np.float32)
    out = np.zeros_like(x)
    kernel = gpusim.CudaSource(CU, f"transpose<{TILE}, {pad}>")
    return Case("transpose_cuda", kernel, (n // TILE, n // TILE), (TILE, TILE), (x, out, np.int32(n)),
                {1: x.T.copy()})


PROGRAM = ProgramSpec("transpose_cuda", "shared-memory transpose in CUDA C++ (bank conflicts without padding)",
                      build, sizes={"default": {"n": 256, "pad": 0}, "large": {"n": 2048, "pad": 0}})
