"""cp.async pipelines timed as the hardware runs them (gpusim/timing/async_groups.py): a GEMM whose
K tiles come to shared memory by cp.async is faster double-buffered (tile k+1 copied while tile
k's math runs, `cp.async.wait_group 1`) than single-buffered (`wait_group 0` before each tile's
math), because the single-buffered one waits out each copy's trip to the L2 / HBM at its
`DEPBAR`: the `long_scoreboard` stall there. Kernels: tests/timing/cp_async_gemm.cu."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim.specs.presets import H100

SOURCE = (Path(__file__).parent / "cp_async_gemm.cu").read_text()


def _gemm(name: str, n: int = 64, k: int = 256, gpu="h100"):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((n, n), np.float32)
    r = gpusim.launch(gpusim.CudaSource(SOURCE, name, options=("-std=c++17",)), (n // 32, n // 32), (16, 16),
                      (a, b, c, np.int32(n), np.int32(k)), gpu=gpu, timing=True)
    return r, c, a @ b


@pytest.fixture(scope="module")
def both():
    return {name: _gemm(name) for name in ("gemm_single", "gemm_double")}


@pytest.mark.slow
def test_both_compute_the_product(both):
    for r, c, want in both.values():
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-3)


@pytest.mark.slow
def test_double_buffered_is_faster_than_single_buffered(both):
    single = both["gemm_single"][0].metrics["gpu__time_duration.sum"]
    double = both["gemm_double"][0].metrics["gpu__time_duration.sum"]
    assert double < 0.85 * single


@pytest.mark.slow
def test_the_single_buffered_kernel_waits_for_its_copies(both):
    key = "smsp__pcsamp_warps_issue_stalled_long_scoreboard"
    single = both["gemm_single"][0].metrics[key]
    double = both["gemm_double"][0].metrics[key]
    assert single > 5 * double


@pytest.mark.slow
def test_a_longer_cp_async_fill_delays_each_tile_of_the_single_buffered_gemm():
    # tensor.cp_async_fill_cycles: from the sectors' return to the group's completion; the
    # single-buffered kernel waits for it once per K tile (256 / 32 = 8 tiles). No DRAM refresh:
    # a line waiting for one would hide the fill of the lines back before it
    def cycles(fill):
        gpu = dataclasses.replace(H100, tensor=dataclasses.replace(H100.tensor, cp_async_fill_cycles=fill),
                                  hbm=dataclasses.replace(H100.hbm, t_rfc_ns=0.0))
        return _gemm("gemm_single", gpu=gpu)[0].metrics["sm__cycles_elapsed.max"]
    added = cycles(200.0) - cycles(0.0)
    assert 0.8 * 200 * 8 < added < 1.2 * 200 * 8
