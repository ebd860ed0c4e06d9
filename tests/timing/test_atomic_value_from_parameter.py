"""An atomic in a loop reaches the L2 once per iteration the functional core executed, whatever
its value's source (issue 24). NVVM unrolls `for r in range(iters)` by 4 into the PTX (a 4x body,
then a remainder loop); when the atomic's value is a kernel parameter, ptxas loads it with an LDC
it files under the atomic's line. That LDC once counted as a copy of the atomic: the remainder
loop looked unrolled twice and its atomic lost its payload (with iters 1 no atomic reached the L2,
with 2 or 3 one per warp); the mapping now counts only SASS that does what the PTX access does
(`payloads.does`)."""
import numpy as np
from numba import cuda

import gpusim


@cuda.jit
def add_parameter(a, one, iters):
    g = cuda.grid(1)
    for r in range(iters):
        cuda.atomic.add(a, (g + r) & 255, one)


@cuda.jit
def add_constant(a, iters):
    g = cuda.grid(1)
    for r in range(iters):
        cuda.atomic.add(a, (g + r) & 255, 1)


def _red_sectors_per_iteration(kernel, extra) -> list[float]:
    out = []
    for iters in (1, 2, 3, 5):
        a = np.zeros(256, np.int32)
        r = gpusim.launch(kernel, 4, 256, (a,) + extra + (iters,), gpu="h200", timing=True)
        assert a.sum() == 4 * 256 * iters
        out.append(r.metrics["lts__t_sectors_op_red.sum"] / iters)
    return out


def test_constant_valued_atomics_reach_the_l2_once_per_iteration():
    per = _red_sectors_per_iteration(add_constant, ())
    assert max(per) / min(per) < 1.3, per


def test_parameter_valued_atomics_reach_the_l2_once_per_iteration():
    per = _red_sectors_per_iteration(add_parameter, (np.int32(1),))
    assert min(per) > 0 and max(per) / min(per) < 1.3, per
