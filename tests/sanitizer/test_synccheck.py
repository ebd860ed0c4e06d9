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


def test_all_lanes_shuffling_with_a_half_warp_mask_report_the_lanes_outside_it():
    a = np.arange(32, dtype=np.int32)
    out = np.zeros(32, np.int32)
    hs = sync(B.shfl_caller_outside_mask, 1, 32, (a, out))
    assert [(h.tool, h.kind, h.line, h.thread, h.count) for h in hs] == [
        ("synccheck", "caller not in membermask", line_of("shfl_caller"), (16, 0, 0), 16)]


def test_a_lane_outside_its_mask_gets_the_shuffle_over_the_executing_lanes():
    out = np.zeros(32, np.int32)
    sync(B.shfl_caller_outside_mask, 1, 32, (np.arange(32, dtype=np.int32), out))
    assert out.tolist() == [i ^ 1 for i in range(32)]       # gpusim's defined value (DEVIATIONS.md)


def test_zero_membermask_reports_every_calling_lane():
    hs = sync(B.shfl_zero_mask, 1, 32, (np.arange(32, dtype=np.int32), np.zeros(32, np.int32)))
    assert [(h.kind, h.line, h.thread, h.count) for h in hs] == [
        ("caller not in membermask", line_of("shfl_zero"), (0, 0, 0), 32)]


def test_reading_an_inactive_lane_outside_the_mask_is_reported_for_each_reader():
    out = np.zeros(32, np.int32)
    hs = sync(B.shfl_reads_inactive_lane, 1, 32, (np.arange(32, dtype=np.int32), out))
    assert [(h.kind, h.line, h.thread, h.count) for h in hs] == [
        ("shuffle source not in membermask", line_of("shfl_src"), (0, 0, 0), 16)]
    assert "reads lane 20 (inactive)" in hs[0].detail
    assert out[:16].tolist() == [20] * 16                   # lane 20's register as it stands


def test_without_synccheck_the_undefined_shuffles_run_and_report_nothing():
    r = gpusim.launch(B.shfl_zero_mask, 1, 32, (np.arange(32, dtype=np.int32), np.zeros(32, np.int32)),
                      check="racecheck")
    assert r.hazards == []
