"""Prediction-only launches (`gpusim.launch(..., outputs=False)`, `gpusim run --predict-only`):
only the timed blocks execute, the prediction is the one a launch with outputs makes, the
arguments stay untouched, and kernels whose timed blocks could depend on other blocks are
refused with the reason (gpusim/functional/communication.py)."""
from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import gpusim
import programs
from gpusim.errors import LaunchError, UnsupportedKernel


def case():
    return programs.get("transpose_shared").case({"rows": 1024, "cols": 1024}, seed=2)


@pytest.mark.slow
def test_prediction_only_predicts_the_time_of_a_launch_with_outputs():
    c = case()
    full = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h200", timing=True)
    c = case()
    pred = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h200", outputs=False)
    assert pred.metrics["gpu__time_duration.sum"] == full.metrics["gpu__time_duration.sum"]
    assert pred.metrics["smsp__inst_executed.sum"] == pytest.approx(full.metrics["smsp__inst_executed.sum"], rel=0.01)


def test_prediction_only_executes_a_sample_and_leaves_the_arguments_alone():
    c = case()
    out = c.args[1]
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h200", outputs=False)
    assert np.isnan(out).all()                    # the program's output starts as NaN
    assert r.extra["outputs"].startswith("not computed: prediction only")
    executed = int(r.extra["outputs"].split(", ")[1].split(" of ")[0])
    assert 0 < executed < 1024


@cuda.jit
def work_queue(counter, out):
    slot = cuda.atomic.add(counter, 0, 1)          # which element this thread fills depends on every other block
    out[slot] = cuda.grid(1)


@cuda.jit
def count_positive(x, counter):
    i = cuda.grid(1)
    if x[i] > 0:
        cuda.atomic.add(counter, 0, 1)             # the old value is not used: blocks do not depend on it


def test_a_kernel_using_atomic_return_values_is_refused_with_the_line():
    with pytest.raises(UnsupportedKernel, match="atom.global.add.* returns a value .* and the kernel uses it"):
        gpusim.launch(work_queue, 4096, 256, (np.zeros(1, np.int32), np.zeros(4096 * 256, np.int32)),
                      gpu="h200", outputs=False)


@pytest.mark.slow
def test_atomics_whose_values_are_unused_are_predicted():
    r = gpusim.launch(count_positive, 4096, 256, (np.ones(4096 * 256, np.float32), np.zeros(1, np.int32)),
                      gpu="h200", outputs=False)
    assert r.metrics["gpu__time_duration.sum"] > 0


def test_an_atomic_in_a_loop_whose_value_is_unused_is_predicted():
    """histogram_shared merges its shared bins with one global atom.add per bin in a loop, the
    value never read: the atom's destination is a definition, not a use that the loop keeps
    live (it was refused: 'returns a value ... and the kernel uses it'); the prediction is the
    full launch's."""
    c = programs.get("histogram_shared").case("default", seed=0)
    full = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", timing=True)
    c = programs.get("histogram_shared").case("default", seed=0)
    pred = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", outputs=False)
    assert pred.metrics["gpu__time_duration.sum"] == full.metrics["gpu__time_duration.sum"]


def test_prediction_only_refuses_sanitizer_tools():
    c = case()
    with pytest.raises(LaunchError, match="sanitizer tools need every block"):
        gpusim.launch(c.kernel, c.grid, c.block, c.args, outputs=False, check="memcheck")


FENCED = """.version 8.5
.target sm_90
.address_size 64
.visible .entry fenced(.param .u64 p)
{
.reg .b32 %r<4>;
.reg .b64 %rd<4>;
.shared .align 4 .b8 buf[128];
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mov.u32 %r3, buf;
st.shared.u32 [%r3], %r1;
FENCE;
mov.u32 %r2, %ctaid.x;
mul.wide.u32 %rd2, %r2, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r2;
ret;
}
"""


@pytest.mark.parametrize("fence, refused", [("fence.proxy.async.shared::cta", False), ("fence.proxy.async", False),
                                            ("fence.acq_rel.gpu", True), ("fence.proxy.alias", False)])
def test_a_proxy_fence_orders_one_thread_s_accesses_not_blocks(fence, refused):
    # fence.proxy.* (TMA and wgmma kernels, Triton's tl.dot) orders one thread's generic and async-proxy
    # accesses; a gpu-scope fence may order blocks through memory
    src = gpusim.PtxSource(FENCED.replace("FENCE", fence), "fenced")
    if refused:
        with pytest.raises(UnsupportedKernel, match="orders memory between blocks"):
            gpusim.launch(src, 512, 32, (np.zeros(512, np.uint32),), gpu="h200", outputs=False)
    else:
        r = gpusim.launch(src, 512, 32, (np.zeros(512, np.uint32),), gpu="h200", outputs=False)
        assert r.metrics["gpu__time_duration.sum"] > 0


def test_fence_mbarrier_init_orders_the_ctas_barriers_not_blocks():
    # TMA kernels follow mbarrier.init with fence.mbarrier_init.release.cluster: it makes the
    # CTA's own shared-memory barriers visible in its cluster, no global memory between blocks
    src = gpusim.PtxSource(FENCED.replace("FENCE", "fence.mbarrier_init.release.cluster"), "fenced")
    r = gpusim.launch(src, 512, 32, (np.zeros(512, np.uint32),), gpu="h200", outputs=False)
    assert r.metrics["gpu__time_duration.sum"] > 0
