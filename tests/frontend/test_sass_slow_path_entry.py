"""A float32 square root's slow path (gpusim/frontend/sass/mapping.py, region entry): ptxas
lays out `@!P BRA fast; MOV; CALL sqrt_rn_f32_slowpath; ...; fast:` after the range test
of the argument, and when the square root starts a new PTX block both the call block and
the fast path are entered from the block before. The GPU calls the subroutine only for
special operands (denormals, negatives, infinities), so a warp of ordinary operands issues
none of it."""
import math

import numpy as np
import pytest
from numba import cuda, float32

import gpusim
from gpusim.frontend import sass

pytestmark = pytest.mark.skipif(not (sass.have_ptxas() and sass.have_nvdisasm()),
                                reason=f"ptxas/nvdisasm not installed: {sass.INSTALL_HINT}")


@cuda.jit
def log_then_sqrt(x, y):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        y[i] = math.log(v + float32(1)) + math.sqrt(v)


def _launch():
    x = np.linspace(0.1, 10, 128).astype(np.float32)          # 4 warps, all ordinary operands
    return gpusim.launch(log_then_sqrt, 2, 64, (x, np.zeros(128, np.float32)), gpu="h200")


def test_ordinary_operands_issue_no_sqrt_slow_path():
    r = _launch()
    ins = r.sass.instructions
    assert any(x.function and "sqrt" in x.function for x in ins)         # the subroutine is in the binary
    issued = sum(n for x, n in zip(ins, r.sass.inst) if x.function or x.base == "CALL")
    assert issued == 0


def test_every_warp_issues_the_sqrt_fast_path_once():
    r = _launch()
    ins = r.sass.instructions
    halves = [n for x, n in zip(ins, r.sass.inst)                       # the Newton step: FMUL.FTZ R, R, 0.5
              if x.function is None and x.opcode == "FMUL.FTZ" and x.operands.endswith("0.5")]
    assert halves == [4]
