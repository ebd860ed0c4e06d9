"""The clock a launch runs at (gpusim/timing/clock_domain.py): a kernel that issues
reduced-precision tensor instructions runs at `clocks.tensor_clock_mhz` (never above the boost
clock, 0: the boost clock), any other at the boost clock; `sm__cycles_elapsed.avg.per_second`
reports it and `gpu__time_duration.sum` converts its cycles at it."""
import numpy as np
import pytest

import gpusim
from gpusim import specs
from gpusim.specs.overrides import apply
from programs.cuda_kernels.wmma_gemm import PROGRAM as WMMA

H100 = specs.get("h100")


def _timed(case, gpu):
    return gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu=gpu, shared_bytes=case.shared_bytes,
                         timing=True, outputs=False).metrics


@gpusim.cuda.jit
def _scale(x):
    i = gpusim.cuda.grid(1)
    if i < x.size:
        x[i] = x[i] * 2.0


@pytest.fixture(scope="module")
def wmma():
    return WMMA.case("default", seed=0)


def test_a_wmma_kernel_runs_at_the_tensor_clock(wmma):
    m = _timed(wmma, H100)
    assert m["sm__cycles_elapsed.avg.per_second"] == pytest.approx(1830e6)


def test_its_duration_is_its_cycles_at_the_tensor_clock(wmma):
    m = _timed(wmma, H100)
    ns = m["sm__cycles_elapsed.max"] * 1000.0 / 1830.0 + H100.launch.kernel_fixed_ns
    assert m["gpu__time_duration.sum"] == pytest.approx(ns)


def test_a_kernel_without_tensor_instructions_runs_at_the_boost_clock():
    x = np.ones(256, np.float32)
    m = gpusim.launch(_scale, 2, 128, (x,), gpu=H100, timing=True).metrics
    assert m["sm__cycles_elapsed.avg.per_second"] == pytest.approx(H100.clocks.sm_clock_mhz * 1e6)


def test_tensor_clock_0_is_the_boost_clock(wmma):
    m = _timed(wmma, apply(H100, {"clocks.tensor_clock_mhz": 0}))
    assert m["sm__cycles_elapsed.avg.per_second"] == pytest.approx(H100.clocks.sm_clock_mhz * 1e6)


def test_a_boost_clock_below_the_tensor_clock_caps_it(wmma):
    m = _timed(wmma, apply(H100, {"clock_mhz": 1500}))
    assert m["sm__cycles_elapsed.avg.per_second"] == pytest.approx(1500e6)
