"""Device arrays captured as globals or closure variables (gpusim/frontend/captured.py):
the kernel reaches the array's memory, not a copy frozen at compile time."""
from __future__ import annotations

import numpy as np

from gpusim import cuda

table = cuda.to_device(np.arange(8, dtype=np.float32))


@cuda.jit
def read_table(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = table[i] * 2


def test_captured_global_is_read_at_launch_time_not_compile_time():
    out = cuda.device_array(8, np.float32)
    read_table[1, 8](out)
    table.copy_to_device(np.full(8, 5, np.float32))      # same memory, new contents
    read_table[1, 8](out)
    table.copy_to_device(np.arange(8, dtype=np.float32))
    assert out.copy_to_host()[3] == 10.0


def test_write_through_a_closure_capture_reaches_the_host_copy():
    acc = cuda.to_device(np.zeros(4, np.int32))

    @cuda.jit
    def bump():
        i = cuda.grid(1)
        if i < 4:
            acc[i] = acc[i] + i + 1

    bump[1, 4]()
    bump[1, 4]()
    assert acc.copy_to_host()[3] == 8


def test_array_passed_and_captured_is_one_memory():
    shared_arr = cuda.to_device(np.zeros(4, np.int32))

    @cuda.jit
    def both(a):
        i = cuda.grid(1)
        if i < 4:
            a[i] = 10 + i
        cuda.syncthreads()
        if i == 0:
            shared_arr[3] = shared_arr[1] + 100     # sees the argument's store: the same bytes

    both[1, 4](shared_arr)
    assert shared_arr.copy_to_host()[3] == 111


def test_two_different_captured_arrays_do_not_share_compiled_code():
    outs = []
    for v in (1.0, 2.0):
        g = cuda.to_device(np.full(2, v, np.float64))

        @cuda.jit
        def k(out):
            out[0] = g[1]                   # noqa: B023 (which g a kernel captures is the point)
        out = cuda.device_array(1, np.float64)
        k[1, 1](out)
        outs.append(out.copy_to_host()[0])
    assert outs == [1.0, 2.0]


def test_captured_strided_view_reads_its_own_elements():
    base = cuda.to_device(np.arange(12, dtype=np.int64).reshape(3, 4))
    col = base[:, 2]                                   # strided view: 2, 6, 10

    @cuda.jit
    def k(out):
        i = cuda.grid(1)
        if i < 3:
            out[i] = col[i]
    out = cuda.device_array(3, np.int64)
    k[1, 3](out)
    assert out.copy_to_host()[2] == 10
