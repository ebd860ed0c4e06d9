"""gpusim.System: placement, peer copies and collectives on a timeline that overlaps."""
import numpy as np
import pytest

import gpusim
from gpusim.errors import ConfigError
from programs.multi_gpu.matmul import run as split_matmul


def test_copy_moves_the_data_and_takes_the_links_time():
    s = gpusim.System("h200", gpus=2)
    a = s.to_device(np.arange(1 << 20, dtype=np.float32), gpu=0)
    b = s.device_array(1 << 20, np.float32, gpu=1)
    op = s.copy(b, a)
    assert np.array_equal(b.data, a.data)
    assert (4 << 20) / (op.time_us * 1e3) < s.spec.nvlink.bandwidth_GBps


def test_collectives_on_different_streams_overlap_copies():
    s = gpusim.System("h200", gpus=4)
    xs = [s.to_device(np.full(1 << 20, g, np.float32), gpu=g) for g in range(4)]
    ar = s.all_reduce(xs)
    ys = [s.device_array(1 << 20, np.float32, gpu=g) for g in range(4)]
    cp = s.copy(ys[1], xs[0])
    assert cp.start_us == 0.0 and ar.start_us == 0.0          # comm and copy streams run together
    assert all(np.all(x.data == 6) for x in xs)


def test_after_orders_dependent_work():
    s = gpusim.System("h200", gpus=2)
    xs = [s.to_device(np.ones(1024, np.float32), gpu=g) for g in range(2)]
    first = s.all_reduce(xs)
    ys = [s.device_array(1024, np.float32, gpu=g) for g in range(2)]
    second = s.copy(ys[1], xs[0], after=[first])
    assert second.start_us == pytest.approx(first.end_us)


def test_arrays_must_be_on_distinct_gpus_of_the_system():
    s = gpusim.System("h200", gpus=2)
    xs = [s.to_device(np.ones(8, np.float32), gpu=0) for _ in range(2)]
    with pytest.raises(ConfigError, match="distinct GPUs"):
        s.all_reduce(xs)
    with pytest.raises(ConfigError, match="not in this system"):
        s.to_device(np.ones(8), gpu=2)


def test_split_matmul_is_correct_and_overlaps_communication():
    r = split_matmul(2, 128, 128, 128, "all_gather", "h200", chunks=2)
    assert r["check"] == "passed"
    kernels = [t for t in r["timeline"] if t[1] == "kernel" and t[2] == [0]]
    colls = [t for t in r["timeline"] if t[1] == "collective"]
    assert colls[0][4] < kernels[1][5]                         # chunk 0's all_gather runs during chunk 1's kernel


def test_reduce_scatter_matmul_is_correct():
    assert split_matmul(2, 64, 64, 128, "reduce_scatter", "h200", chunks=2)["check"] == "passed"


def test_a_timed_launch_computes_every_element_of_a_large_grid():
    from numba import cuda

    @cuda.jit
    def scale(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = 2.0 * x[i]

    s = gpusim.System("h200", gpus=2)
    x = s.to_device(np.arange(1 << 20, dtype=np.float32), gpu=0)
    out = s.device_array(1 << 20, np.float32, gpu=0)
    s.launch(scale, 4096, 256, (x, out), gpu=0)           # timing samples blocks; the outputs stay exact
    assert np.array_equal(out.data, 2.0 * x.data)
