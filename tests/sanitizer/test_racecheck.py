"""racecheck: the two accesses of each race, by line and thread; no report where a
barrier, syncwarp, atomics or one thread order the accesses."""
import numpy as np
import pytest

import gpusim
from buggy_kernels import line_of
import buggy_kernels as B
import issue25_kernels as K


def races(kernel, grid, block, args, **kw):
    r = gpusim.launch(kernel, grid, block, args, check="racecheck", **kw)
    return [h for h in r.hazards if h.tool == "racecheck"]


def test_tree_reduction_missing_syncthreads_is_a_raw_race_on_its_line():
    a = np.arange(256, dtype=np.float32)
    hs = races(B.tree_reduce_no_sync, 2, 128, (a, np.zeros(2, np.float32)))
    assert [(h.kind, h.space, h.lines) for h in hs] == [("RAW", "shared", (line_of("tree"), line_of("tree")))]


def test_tree_reduction_race_names_two_threads_of_different_warps():
    a = np.arange(256, dtype=np.float32)
    h = races(B.tree_reduce_no_sync, 2, 128, (a, np.zeros(2, np.float32)))[0]
    (w, r) = h.threads
    assert (w[0] // 32 != r[0] // 32, h.accesses[0].mode, h.accesses[1].mode) == (True, "write", "read")
    assert h.address == 4 * w[0]                    # the byte offset of s[writer] in the block's shared memory


def test_tree_reduction_with_syncthreads_has_no_race():
    assert races(B.tree_reduce, 2, 128, (np.arange(256, dtype=np.float32), np.zeros(2, np.float32))) == []


def test_warp_synchronous_reduction_without_syncwarp_races_on_the_next_line():
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(2, np.float32)
    hs = races(B.warp_reduce_no_syncwarp, 2, 32, (a, out))
    assert out.tolist() == [a[:32].sum(), a[32:].sum()]   # lock-step hides the bug from the result
    first = [h for h in hs if h.kind == "RAW" and h.lines[0] == line_of("warp16")]
    assert [h.lines for h in first] == [(line_of("warp16"), line_of("warp8"))]
    assert first[0].threads == ((8, 0, 0), (0, 0, 0))    # lane 8 wrote s[8], lane 0 read it


def test_warp_reduction_race_is_between_lanes_of_one_warp():
    hs = races(B.warp_reduce_no_syncwarp, 1, 32, (np.ones(32, np.float32), np.zeros(1, np.float32)))
    assert len(hs) == 4 and all("one warp" in h.detail for h in hs)


def test_warp_reduction_with_syncwarp_has_no_race():
    assert races(B.warp_reduce, 2, 32, (np.ones(64, np.float32), np.zeros(2, np.float32))) == []


def test_global_race_between_blocks_names_both_blocks():
    hs = races(B.neighbour_blocks, 2, 128, (np.ones(256, np.float32),))
    assert [(h.kind, h.space, h.lines, h.blocks) for h in hs] == [
        ("RAW", "global", (line_of("nb_write"), line_of("nb_read")), ((1, 0, 0), (0, 0, 0)))]


def test_stores_of_every_block_to_one_address_are_a_waw_race():
    hs = races(B.every_block_stores_flag, 3, 64, (np.zeros(1, np.int32), np.zeros(192, np.int32)))
    assert [(h.kind, h.lines, h.count) for h in hs] == [("WAW", (line_of("flag"), line_of("flag")), 2)]


def test_atomics_never_race_with_atomics():
    c = np.zeros(1, np.int32)
    assert races(B.atomic_count, 4, 64, (c,)) == [] and c[0] == 256


def test_plain_read_of_an_atomically_updated_word_races():
    hs = races(B.atomic_then_plain_read, 2, 64, (np.zeros(1, np.int32), np.zeros(128, np.int32)))
    assert [(h.kind, h.lines, h.accesses[0].mode) for h in hs] == [
        ("RAW", (line_of("atom"), line_of("atom_read")), "atomic")]


def test_bytes_of_one_word_stored_by_different_threads_do_not_race():
    assert races(B.byte_per_thread, 1, 128, (np.zeros(128, np.int32),)) == []


def test_timing_mode_reports_the_same_race():
    a = np.arange(256, dtype=np.float32)
    hs = races(B.tree_reduce_no_sync, 2, 128, (a, np.zeros(2, np.float32)), timing=True)
    assert [(h.kind, h.lines) for h in hs] == [("RAW", (line_of("tree"), line_of("tree")))]


@pytest.mark.filterwarnings("ignore::numba.cuda.core.errors.NumbaPerformanceWarning")   # the drop-in's, as Numba's
def test_dropin_launch_under_set_check_puts_hazards_on_last_result():
    from gpusim import cuda

    @cuda.jit
    def swap_halves(a):
        t = cuda.threadIdx.x
        a[t] = a[(t + 32) % 64]

    cuda.set_check("racecheck")
    try:
        swap_halves[1, 64](np.arange(64, dtype=np.int32))
    finally:
        cuda.set_check()
    assert [h.kind for h in swap_halves.last_result.hazards] == ["WAR"]


def test_global_race_between_warps_of_one_block_without_a_barrier():
    hs = races(B.global_shift_no_sync, 1, 64, (np.zeros(64, np.int32), np.zeros(64, np.int32)))
    assert [(h.kind, h.space, h.lines, h.threads) for h in hs] == [
        ("RAW", "global", (line_of("gs_write"), line_of("gs_read")), ((32, 0, 0), (0, 0, 0)))]


def test_global_accesses_of_one_block_ordered_by_a_barrier_do_not_race():
    assert races(B.global_shift, 1, 64, (np.zeros(64, np.int32), np.zeros(64, np.int32))) == []


def test_a_hazard_is_a_frozen_record_naming_tool_kernel_lines_threads_and_address():
    import dataclasses
    h = races(B.tree_reduce_no_sync, 1, 128, (np.arange(128, dtype=np.float32), np.zeros(1, np.float32)))[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        h.kind = "WAW"
    assert (h.tool, h.kernel, len(h.lines), len(h.threads), h.block, type(h.address)) == (
        "racecheck", "tree_reduce_no_sync", 2, 2, (0, 0, 0), int)


def test_message_passing_through_fence_and_atomic_flag_is_not_a_race():
    out = np.zeros(2, np.int32)
    assert races(K.message_passing_one_thread, 2, 32, (np.zeros(2, np.int32), np.zeros(1, np.int32), out)) == []
    assert out[0] == 42


def test_message_passing_without_the_readers_fence_is_a_race():
    hs = races(K.mp_no_reader_fence, 2, 32, (np.zeros(2, np.int32), np.zeros(1, np.int32), np.zeros(2, np.int32)))
    assert [(h.kind, h.lines, h.blocks) for h in hs] == [
        ("RAW", (K.line_of("nrf_w"), K.line_of("nrf_r")), ((0, 0, 0), (1, 0, 0)))]


def test_accesses_ordered_by_grid_sync_are_not_a_race():
    out = np.zeros(64, np.int32)
    assert races(K.grid_sync_rotate, 2, 32, (np.zeros(64, np.int32), out)) == []
    assert out.tolist() == [(i + 32) % 64 for i in range(64)]
