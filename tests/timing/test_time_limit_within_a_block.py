"""The caller's time limit holds while one long block is being timed: the engine calls
`TimingOptions.heartbeat` every HEARTBEAT_QUANTA quanta of an SM (block_scheduler.py), not only when a block ends
(a 8192^3 TMA GEMM's block ran minutes past a 60 s limit before)."""
import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim.timing.block_scheduler import HEARTBEAT_QUANTA
from gpusim.timing.engine import TimingOptions


@cuda.jit
def long_block(n, out):
    a = np.float32(cuda.threadIdx.x)
    for _ in range(n[0]):
        a = a * np.float32(0.999) + np.float32(1.0)
    out[cuda.threadIdx.x] = a


class Beat(Exception):
    pass


def test_the_heartbeat_comes_before_the_only_block_ends():
    seen = []

    def beat(done, total):
        seen.append((done, total))
        raise Beat()

    with pytest.raises(Beat):
        gpusim.launch(long_block, 1, 32, (np.array([20_000], np.int32), np.zeros(32, np.float32)), gpu="h100",
                      timing=True, timing_options=TimingOptions(mode="full", heartbeat=beat))
    assert seen == [(0, 1)] and HEARTBEAT_QUANTA * 64 < 20_000 * 4      # called inside the block's run
