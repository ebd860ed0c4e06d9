"""Scalar shared loads that ptxas merges into one wide SASS load (numba's unrolled `sa[ty, k]`:
four `ld.shared.f32` -> one LDS.128, a broadcast) are one access of the SASS width: the
timing's payload, Nsight's wavefront count and its bank conflicts are the LDS.128's (2
wavefronts, no conflict, as an H200 counts them for held-out sgemm_shared_tile: 402.8 M
wavefronts at n2048, 402.7 M predicted), and every one of the four PTX loads lands on that
LDS.128 (gpusim/frontend/sass/payloads.py `_nearest`, gpusim/timing/access_payloads.py)."""
import numpy as np

import gpusim
from gpusim.timing.engine import TimingOptions
from tiled_kernels import TILE, tiled_matmul


def _metrics(timing: bool) -> dict:
    n = 64
    a = np.ones((n, n), np.float32)
    r = gpusim.launch(tiled_matmul, (n // TILE, n // TILE), (TILE, TILE), (a, a.copy(), np.zeros((n, n), np.float32)),
                      gpu="h200", timing=timing, timing_options=TimingOptions(mode="full") if timing else None)
    return r.metrics


WARP_STEPS = 4 * 32 * 2                  # blocks x warps x tile steps


def test_the_four_merged_broadcast_loads_count_as_one_ldS128_of_two_wavefronts():
    m = _metrics(True)
    # a warp's tile step: 32 LDS of sb (1 each) and 8 LDS.128 of sa (2 each)
    assert m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == WARP_STEPS * (32 + 8 * 2)
    assert m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 0


def test_without_the_sass_each_ptx_load_counts_on_its_own():
    # functional mode does not compile the SASS: 64 scalar loads of one wavefront a step
    assert _metrics(False)["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == WARP_STEPS * 64
