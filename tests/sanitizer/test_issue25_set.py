"""Issue 25's set of racy, uninitialised and mis-synchronised kernels and their clean
twins: each launch under all four tools reports exactly the hazards listed (tool, kind,
source lines, count of conflicting lanes), and nothing else."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

import gpusim
from gpusim import cuda as gcuda
import issue25_kernels as K
from issue25_kernels import line_of

z = lambda n, dt=np.int32: np.zeros(n, dt)           # noqa: E731
ar = lambda n: np.arange(n, dtype=np.int32)          # noqa: E731


def half_written(n=64):
    """A device array whose even elements an unchecked launch wrote."""
    d = gcuda.device_array(n, np.int32)
    gpusim.launch(K.write_even, 1, n, (d,))
    return d


def written(n=64):
    d = gcuda.device_array(n, np.int32)
    gpusim.launch(K.write_all, 1, n, (d,))
    return d


def column_written():
    d = gcuda.device_array((16, 4), np.int32)
    gpusim.launch(K.write_all, 1, 16, (d[:, 2],))
    return d


@dataclass
class Case:
    kernel: object
    grid: object
    block: object
    args: object                                      # () -> launch arguments
    expect: list                                      # [(tool, kind, (markers,), count)]
    result: object = None                             # (args) -> what must hold of the outputs
    launch: dict = field(default_factory=dict)        # more launch() arguments



SEQ = {"batch_lanes": 32}    # one 32-thread block per batch: a block spinning on a flag finds it set


def rc(kind, a, b, n):
    return ("racecheck", kind, (a, b), n)


CASES = {
    # racecheck, shared memory
    "shared_rotate_no_sync": Case(K.shared_rotate_no_sync, 1, 64, lambda: (ar(64), z(64)),
                                  [rc("RAW", "rot_w", "rot_r", 64)]),
    "shared_rotate": Case(K.shared_rotate, 1, 64, lambda: (ar(64), z(64)), [],
                          lambda a: a[1].tolist() == [(t + 32) % 64 for t in range(64)]),
    "shared_shift_war": Case(K.shared_shift_war, 1, 64, lambda: (ar(64), z(64)), [rc("WAR", "war_r", "war_w", 64)]),
    "shared_shift": Case(K.shared_shift, 1, 64, lambda: (ar(64), z(64)), []),
    "shared_every_warp_writes_slot0": Case(K.shared_every_warp_writes_slot0, 1, 64, lambda: (z(64),),
                                           [rc("WAW", "slot0", "slot0", 1)]),
    "shared_one_thread_writes_slot0": Case(K.shared_one_thread_writes_slot0, 1, 64, lambda: (z(64),), []),
    "warp_reverse_no_syncwarp": Case(K.warp_reverse_no_syncwarp, 1, 32, lambda: (ar(32), z(32)),
                                     [rc("RAW", "wrev_w", "wrev_r", 32)]),
    "warp_reverse": Case(K.warp_reverse, 1, 32, lambda: (ar(32), z(32)), []),
    # racecheck, global memory: message passing, fences, grid sync
    "global_neighbour_block": Case(K.global_neighbour_block, 2, 32, lambda: (z(64), z(64)),
                                   [rc("RAW", "gnb_w", "gnb_r", 64)]),
    "message_passing": Case(K.message_passing, 2, 32, lambda: (z(32), z(1), z(32)), [],
                            lambda a: a[2].tolist() == list(range(1, 33)), launch=SEQ),
    "message_passing_one_thread": Case(K.message_passing_one_thread, 2, 32, lambda: (z(2), z(1), z(2)), [],
                                       lambda a: a[2][0] == 42, launch=SEQ),
    "mp_no_writer_fence": Case(K.mp_no_writer_fence, 2, 32, lambda: (z(2), z(1), z(2)),
                               [rc("RAW", "nwf_w", "nwf_r", 1)], launch=SEQ),
    "mp_no_reader_fence": Case(K.mp_no_reader_fence, 2, 32, lambda: (z(2), z(1), z(2)),
                               [rc("RAW", "nrf_w", "nrf_r", 1)], launch=SEQ),
    "mp_block_fence_across_blocks": Case(K.mp_block_fence_across_blocks, 2, 32, lambda: (z(2), z(1), z(2)),
                                         [rc("RAW", "bfb_w", "bfb_r", 1)], launch=SEQ),
    "mp_plain_flag": Case(K.mp_plain_flag, 2, 32, lambda: (z(2), z(1), z(2)),
                          [rc("WAW", "pf_fw", "pf_fr", 1), rc("RAW", "pf_dw", "pf_dr", 1)], launch=SEQ),
    "mp_store_after_fence": Case(K.mp_store_after_fence, 2, 32, lambda: (z(2), z(1), z(2)),
                                 [rc("RAW", "saf_w", "saf_r", 1)], launch=SEQ),
    "mp_shared_flag_in_block": Case(K.mp_shared_flag_in_block, 1, 64, lambda: (z(32),), [],
                                    lambda a: a[0].tolist() == [3 * t for t in range(32)]),
    "mp_chain": Case(K.mp_chain, 3, 32, lambda: (z(1), z(2), z(1)), [], lambda a: a[2][0] == 5, launch=SEQ),
    "mp_release_sequence": Case(K.mp_release_sequence, 3, 32, lambda: (z(1), z(1), z(1)), [],
                                lambda a: a[2][0] == 9, launch=SEQ),
    "mp_warp_partials_syncwarp": Case(K.mp_warp_partials_syncwarp, 2, 32, lambda: (z(32), z(1), z(32)), [],
                                      lambda a: a[2].tolist() == list(range(32)), launch=SEQ),
    "mp_warp_partials_no_syncwarp": Case(K.mp_warp_partials_no_syncwarp, 2, 32, lambda: (z(32), z(1), z(32)),
                                         [rc("RAW", "wp_w", "wp_r", 31)], launch=SEQ),
    "last_block_sum": Case(K.last_block_sum, 4, 32, lambda: (ar(4) + 1, z(4), z(1), z(1)), [],
                           lambda a: a[3][0] == 10),
    "last_block_sum_by_batches": Case(K.last_block_sum, 4, 32, lambda: (ar(4) + 1, z(4), z(1), z(1)), [],
                                      lambda a: a[3][0] == 10, launch=SEQ),
    "last_block_sum_no_fence": Case(K.last_block_sum_no_fence, 4, 32, lambda: (ar(4) + 1, z(4), z(1), z(1)),
                                    [rc("RAW", "lb_w", "lb_r", 3)]),
    "grid_sync_rotate": Case(K.grid_sync_rotate, 2, 32, lambda: (z(64), z(64)), [],
                             lambda a: a[1].tolist() == [(i + 32) % 64 for i in range(64)]),
    "grid_sync_rotate_then_race": Case(K.grid_sync_rotate_then_race, 2, 32, lambda: (z(64), z(64)),
                                       [rc("WAR", "gs_r", "gs_w", 64)]),
    "atomic_histogram": Case(K.atomic_histogram, 2, 64, lambda: (ar(128), z(8)), [],
                             lambda a: a[1].tolist() == [16] * 8),
    # initcheck
    "shared_sum_partial_fill": Case(K.shared_sum_partial_fill, 1, 48, lambda: (z(1),),
                                    [("initcheck", "uninitialized read", ("psum",), 16)]),
    "shared_sum_full_fill": Case(K.shared_sum_full_fill, 1, 32, lambda: (z(1),), [],
                                 lambda a: a[0][0] == 2 * sum(range(32))),
    "device_array_half_written": Case(K.read_all, 1, 64, lambda: (half_written(), z(64)),
                                      [("initcheck", "uninitialized read", ("ra",), 32)]),
    "device_array_written": Case(K.read_all, 1, 64, lambda: (written(), z(64)), []),
    "device_array_slice_of_unwritten": Case(K.read_all, 1, 32, lambda: (gcuda.device_array(64, np.int32)[32:], z(32)),
                                            [("initcheck", "uninitialized read", ("ra",), 32)]),
    "device_array_slice_of_written_half": Case(K.read_all, 1, 32, lambda: (half_written()[0::2], z(32)), []),
    "device_array_view_of_half": Case(K.read_all, 1, 64, lambda: (half_written().view(np.float32), z(64, np.float32)),
                                      [("initcheck", "uninitialized read", ("ra",), 32)]),
    "device_array_column_written": Case(K.read_all_2d, 1, (16, 4), lambda: (column_written(), z((16, 4))),
                                        [("initcheck", "uninitialized read", ("ra2",), 48)]),
    # synccheck
    "shfl_half_mask_all_lanes": Case(K.shfl_half_mask_all_lanes, 1, 32, lambda: (ar(32), z(32)),
                                     [("synccheck", "caller not in membermask", ("s_half",), 16)]),
    "shfl_half_mask_half_lanes": Case(K.shfl_half_mask_half_lanes, 1, 32, lambda: (ar(32), z(32)), []),
    "shfl_down_zero_mask": Case(K.shfl_down_zero_mask, 1, 32, lambda: (ar(32), z(32)),
                                [("synccheck", "caller not in membermask", ("s_zero",), 32)]),
    "shfl_read_inactive_lane": Case(K.shfl_read_inactive_lane, 1, 32, lambda: (ar(32), z(32)),
                                    [("synccheck", "shuffle source not in membermask", ("s_inact",), 16)]),
    "shfl_read_lane_outside_mask_all_active": Case(
        K.shfl_read_lane_outside_mask_all_active, 1, 32, lambda: (ar(32), z(32)),
        [("synccheck", "caller not in membermask", ("s_out",), 16),
         ("synccheck", "shuffle source not in membermask", ("s_out",), 16)]),
    "shfl_read_lane_in_mask": Case(K.shfl_read_lane_in_mask, 1, 32, lambda: (ar(32), z(32)), [],
                                   lambda a: a[1].tolist() == [5] * 16 + list(range(16, 32))),
    "ballot_half_mask_all_lanes": Case(K.ballot_half_mask_all_lanes, 1, 32, lambda: (ar(32), z(32, np.uint32)),
                                       [("synccheck", "caller not in membermask", ("s_ballot",), 16)]),
    "syncwarp_mask_without_lane0": Case(K.syncwarp_mask_without_lane0, 1, 32, lambda: (z(32),),
                                        [("synccheck", "caller not in membermask", ("s_sw",), 1)]),
    "shfl_down_past_small_block": Case(K.shfl_down_past_small_block, 1, 16, lambda: (ar(16), z(16)),
                                       [("synccheck", "shuffle source not in membermask", ("s_small",), 1)]),
    "shfl_down_past_warp_end": Case(K.shfl_down_past_warp_end, 1, 32, lambda: (ar(32), z(32)), [],
                                    lambda a: a[1].tolist() == [t + 16 if t < 16 else t for t in range(32)]),
    "shfl_activemask_in_branch": Case(K.shfl_activemask_in_branch, 1, 32, lambda: (ar(32), z(32)), []),
    "barrier_in_partial_branch": Case(K.barrier_in_partial_branch, 1, 64, lambda: (z(64),),
                                      [("synccheck", "divergent barrier", ("s_bar",), 1)]),
}


def observed(case: Case):
    args = case.args()
    r = gpusim.launch(case.kernel, case.grid, case.block, args, check="all", **case.launch)
    got = sorted((h.tool, h.kind, h.lines, h.count) for h in r.hazards)
    return got, args


def expected(case: Case):
    return sorted((tool, kind, tuple(line_of(m) for m in marks), n) for tool, kind, marks, n in case.expect)


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_reports_exactly_its_hazards(name):
    case = CASES[name]
    got, args = observed(case)
    assert got == expected(case)
    if case.result is not None:
        assert case.result(args)


def test_the_set_has_at_least_30_kernels_with_a_hazard_and_their_clean_twins():
    buggy = [n for n, c in CASES.items() if c.expect]
    clean = [n for n, c in CASES.items() if not c.expect]
    assert (len(buggy) >= 20, len(clean) >= 15, len(CASES) >= 30) == (True, True, True)
