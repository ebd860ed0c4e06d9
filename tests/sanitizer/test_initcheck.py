"""initcheck: reads of shared memory never stored by the block and of device arrays never
written; host-copied arrays and written device arrays are clean."""
import numpy as np

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
