"""synccheck: divergent barriers and membermasks naming non-converged or exited lanes."""
import numpy as np

import gpusim
from buggy_kernels import line_of
import buggy_kernels as B


def sync(kernel, grid, block, args):
    return gpusim.launch(kernel, grid, block, args, check="synccheck").hazards


def test_syncthreads_in_divergent_code_is_reported_at_the_barrier():
    hs = sync(B.divergent_barrier, 1, 32, (np.zeros(32, np.int32),))
    assert [(h.kind, h.line, h.thread) for h in hs] == [("divergent barrier", line_of("divbar"), (16, 0, 0))]


def test_full_mask_shuffle_in_a_branch_names_a_non_converged_lane():
    hs = sync(B.shfl_in_branch, 1, 32, (np.zeros(32, np.int32), np.zeros(32, np.int32)))
    assert [(h.kind, h.line, h.thread) for h in hs] == [
        ("non-converged lane in membermask", line_of("shfl_div"), (16, 0, 0))]


def test_full_mask_shuffle_in_a_half_warp_block_names_missing_lanes():
    hs = sync(B.shfl_after_exit, 1, 16, (np.zeros(16, np.int32), np.zeros(16, np.int32)))
    assert [(h.kind, h.line, h.thread) for h in hs] == [("exited lane in membermask", line_of("shfl_exit"), (0, 0, 0))]
    assert "names lane 16" in hs[0].detail


def test_half_warp_mask_matching_the_branch_is_clean():
    assert sync(B.shfl_half_warp, 1, 32, (np.arange(32, dtype=np.int32), np.zeros(32, np.int32))) == []
