"""Writes from outside the kernel while it runs (TimingOptions.background_*): counted over the
predicted duration, as Nsight counts the profiler's own traffic beside a kernel (validate compare
sets the rates measured by benchmarks/ncu_dirty_probe.py --background). One property per test."""
import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim.errors import ConfigError
from gpusim.timing.engine import TimingOptions


@cuda.jit
def scale(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = 2.0 * x[i]


def _run(**background):
    x = np.arange(4096, dtype=np.float32)
    return gpusim.launch(scale, 16, 256, (x, np.zeros_like(x)), gpu="h200", timing=True,
                         timing_options=TimingOptions(**background)).metrics


def test_background_dram_writes_grow_with_the_predicted_duration():
    quiet, busy = _run(), _run(background_dram_write_bytes_per_s=18e6)
    seconds = busy["gpu__time_duration.sum"] * 1e-9
    assert busy["gpu__time_duration.sum"] == quiet["gpu__time_duration.sum"]     # counted, not timed
    assert busy["dram__bytes_write.sum"] - quiet["dram__bytes_write.sum"] == pytest.approx(18e6 * seconds)


def test_background_l2_write_sectors_join_the_l2_write_count():
    quiet, busy = _run(), _run(background_l2_write_sectors_per_s=1e6)
    seconds = busy["gpu__time_duration.sum"] * 1e-9
    added = busy["lts__t_sectors_op_write.sum"] - quiet["lts__t_sectors_op_write.sum"]
    assert added == pytest.approx(1e6 * seconds)


@pytest.mark.parametrize("value", [-1.0, float("inf"), "18e6", True])
def test_a_background_rate_that_is_not_a_finite_number_from_zero_up_is_refused(value):
    with pytest.raises(ConfigError, match="background_dram_write_bytes_per_s"):
        TimingOptions(background_dram_write_bytes_per_s=value)
