"""`cuda.syncwarp()` inside a divergent branch (gpusim/functional/collectives.py)."""
from __future__ import annotations

import numpy as np
import pytest

from gpusim import cuda
from gpusim.errors import BarrierError


@cuda.jit
def fold_under_if(out):
    sm = cuda.shared.array(32, np.int32)
    t = cuda.threadIdx.x
    sm[t] = t
    cuda.syncwarp()
    if t < 2:                        # numba-cuda's cuda.Reduce does this: the other lanes wait at the if's end
        sm[t] += sm[t + 2]
        cuda.syncwarp()
    if t == 0:
        out[0] = sm[0] + sm[1]


@cuda.jit
def both_sides_sync(out):
    t = cuda.threadIdx.x
    if t < 16:
        cuda.syncwarp()
        out[t] = 1
    else:
        cuda.syncwarp()              # the other side's barrier: Volta+ meets them, a stack machine cannot
        out[t] = 2


def test_syncwarp_naming_lanes_parked_at_the_reconvergence_point_completes():
    out = np.zeros(1, np.int32)
    fold_under_if[1, 32](out)
    assert out[0] == 0 + 2 + 1 + 3


def test_syncwarp_naming_lanes_that_still_run_the_other_side_is_reported():
    with pytest.raises(BarrierError, match="not converged"):
        both_sides_sync[1, 32](np.zeros(32, np.int32))
