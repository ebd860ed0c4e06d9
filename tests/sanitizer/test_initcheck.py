"""initcheck: reads of shared memory never stored by the block and of device arrays never
written; host-copied arrays and written device arrays are clean."""
import numpy as np
import pytest

import gpusim
from gpusim import cuda as gcuda
from buggy_kernels import line_of
import buggy_kernels as B


def uninit(kernel, grid, block, args):
    return [h for h in gpusim.launch(kernel, grid, block, args, check="initcheck").hazards]


def test_shared_read_before_any_store_is_reported_with_its_line_and_first_thread():
    hs = uninit(B.shared_read_before_store, 1, 64, (np.zeros(64, np.int32),))
    assert [(h.kind, h.space, h.line, h.thread, h.address, h.count) for h in hs] == [
        ("uninitialized read", "shared", line_of("uninit_shared"), (32, 0, 0), 128, 32)]


def test_device_array_read_before_any_write_is_reported():
    d = gcuda.device_array(100, np.float32)
    hs = uninit(B.copy, 1, 128, (d, np.zeros(100, np.float32)))
    assert [(h.space, h.line, h.count) for h in hs] == [("global", line_of("copy"), 100)]


def test_device_array_written_by_an_earlier_launch_is_initialised():
    d = gcuda.device_array(100, np.float32)
    uninit(B.copy, 1, 128, (np.ones(100, np.float32), d))
    assert uninit(B.copy, 1, 128, (d, np.zeros(100, np.float32))) == []


def test_partly_written_device_array_reports_only_the_unwritten_part():
    d = gcuda.device_array(100, np.float32)
    uninit(B.copy, 1, 40, (np.ones(100, np.float32), d))       # 40 threads write d[:40]
    hs = uninit(B.copy, 1, 128, (d, np.zeros(100, np.float32)))
    assert [(h.count, h.thread) for h in hs] == [(60, (40, 0, 0))]


def test_host_arrays_and_to_device_arrays_are_initialised():
    d = gcuda.to_device(np.ones(100, np.float32))
    assert uninit(B.copy, 1, 128, (d, np.zeros(100, np.float32))) == []
    assert uninit(B.copy, 1, 128, (np.ones(100, np.float32), np.zeros(100, np.float32))) == []


def test_half_written_by_an_unchecked_launch_reports_the_other_half():
    d = gcuda.device_array(64, np.float32)
    gpusim.launch(B.fill_first_half, 1, 64, (d,))                      # no check: its stores are still tracked
    hs = uninit(B.copy, 1, 64, (d, np.zeros(64, np.float32)))
    assert [(h.line, h.count, h.thread) for h in hs] == [(line_of("copy"), 32, (32, 0, 0))]


def test_a_slice_of_an_unwritten_array_is_unwritten():
    d = gcuda.device_array(64, np.float32)
    hs = uninit(B.copy, 1, 32, (d[32:], np.zeros(32, np.float32)))
    assert [(h.count, h.address % 256) for h in hs] == [(32, 0)]      # the slice's own allocation, from its start


def test_a_dtype_view_of_an_unwritten_array_is_unwritten():
    d = gcuda.device_array(64, np.float32)
    hs = uninit(B.copy, 1, 64, (d.view(np.int32), np.zeros(64, np.int32)))
    assert [h.count for h in hs] == [64]


def test_writes_through_a_slice_initialise_only_that_part_of_the_array():
    d = gcuda.device_array(64, np.float32)
    gpusim.launch(B.fill, 1, 64, (d[16:48],))                          # unchecked, through a slice
    hs = uninit(B.copy, 1, 64, (d, np.zeros(64, np.float32)))
    assert [(h.count, h.thread) for h in hs] == [(32, (0, 0, 0))]


def test_writes_through_a_dtype_view_initialise_the_array():
    d = gcuda.device_array(64, np.float32)
    uninit(B.fill, 1, 64, (d.view(np.int32),))
    assert uninit(B.copy, 1, 64, (d, np.zeros(64, np.float32))) == []


def test_a_strided_column_written_leaves_the_other_columns_unwritten():
    d = gcuda.device_array((32, 4), np.float32)
    gpusim.launch(B.fill, 1, 32, (d[:, 0],))
    hs = uninit(B.copy2d, (1, 1), (32, 4), (d, np.zeros((32, 4), np.float32)))
    assert [(h.line, h.count, h.thread) for h in hs] == [(line_of("copy2d"), 96, (0, 1, 0))]


def test_host_write_to_a_slice_initialises_only_that_slice():
    d = gcuda.device_array(64, np.float32)
    d[:10] = 5.0
    hs = uninit(B.copy, 1, 64, (d, np.zeros(64, np.float32)))
    assert [(h.count, h.thread) for h in hs] == [(54, (10, 0, 0))]


def test_a_copy_keeps_the_written_flags_of_its_source():
    d = gcuda.device_array(64, np.float32)
    gpusim.launch(B.fill_first_half, 1, 64, (d,))
    e = gcuda.device_array(64, np.float32)
    e.copy_to_device(d)
    for a in (d.copy(), e):
        assert [h.count for h in uninit(B.copy, 1, 64, (a, np.zeros(64, np.float32)))] == [32]


def test_a_fully_written_array_needs_no_more_tracking():
    from gpusim.sanitizer.device_memory import launch_state
    d = gcuda.device_array(64, np.float32)
    gpusim.launch(B.fill_first_half, 1, 64, (d,))
    assert launch_state(d).sum() == 128                                # the second half's 128 bytes
    gpusim.launch(B.fill, 1, 64, (d[32:],))
    assert launch_state(d) is None and launch_state(d[5:]) is None


@pytest.mark.filterwarnings("ignore::numba.cuda.core.errors.NumbaPerformanceWarning")   # the drop-in's, as Numba's
def test_dropin_launches_track_the_written_half_between_launches():
    d = gcuda.device_array(64, np.float32)
    B_fill = gcuda.jit(B.fill_first_half.py_func)
    B_copy = gcuda.jit(B.copy.py_func)
    B_fill[1, 64](d)
    gcuda.set_check("initcheck")
    try:
        B_copy[1, 64](d, np.zeros(64, np.float32))
    finally:
        gcuda.set_check()
    assert [h.count for h in B_copy.last_result.hazards] == [32]


def test_host_writes_of_elements_rows_columns_and_fancy_indices_mark_exactly_their_bytes():
    from gpusim.sanitizer.device_memory import launch_state
    d = gcuda.device_array((4, 8), np.int32)
    d[1, -1] = 5
    d[2] = 1
    d[:, 0] = 3
    d[np.array([3]), np.array([4])] = 7
    written = launch_state(d).reshape(4, 8, 4).all(axis=2)
    assert np.argwhere(written).tolist() == [[0, 0], [1, 0], [1, 7]] + [[2, j] for j in range(8)] + [[3, 0], [3, 4]]
