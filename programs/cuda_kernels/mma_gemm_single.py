"""The PROGRAM of mma_gemm.cu with STAGES = 1: the double-buffered kernel of mma_gemm.py
single-buffered (each tile's cp.async copies are waited for before it is multiplied), so that
the two can be timed against each other on the same sizes.

    gpusim run programs/cuda_kernels/mma_gemm_single.py
"""
from functools import partial

from programs.base import ProgramSpec
from programs.cuda_kernels.mma_gemm import SIZES, build

PROGRAM = ProgramSpec("mma_gemm_single", "mma_gemm with STAGES = 1: single-buffered cp.async tiles",
                      partial(build, stages=1, name="mma_gemm_single"), sizes=SIZES,
                      tags=("cuda", "tensor", "gemm", "cp.async"))
