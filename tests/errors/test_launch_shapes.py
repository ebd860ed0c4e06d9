"""Launch shapes CUDA refuses, and launches too large to simulate: a LaunchError naming the value."""
import time

import numpy as np
import pytest

import gpusim
from gpusim.errors import LaunchError

from bad_inputs import noop, static_shared_52k

A = (np.zeros(4, np.float32),)


@pytest.mark.parametrize("grid, block, named", [
    (0, 32, "grid dimension x is 0"),
    (1, -32, "block dimension x is -32"),
    (1, 1025, "block dimension x is 1025"),
    (1, (32, 33), "1056 threads"),
    (1, (1, 1, 65), "block dimension z is 65"),
    ((1, 65536), 32, "grid dimension y is 65536"),
    (2.5, 32, "grid must be an int or a tuple of 1-3 ints, got 2.5"),
    ((2.0, 1), 32, "grid must be an int or a tuple of 1-3 ints, got (2.0, 1)"),
    ("32", 32, "grid must be an int or a tuple of 1-3 ints, got '32'"),
    (1, (2, 2, 2, 2), "1 to 3 dimensions"),
])
def test_bad_launch_shape_names_the_value(grid, block, named):
    with pytest.raises(LaunchError) as e:
        gpusim.launch(noop, grid, block, A)
    assert named in str(e.value) and "noop" in str(e.value)


def test_52_kib_of_static_shared_memory_is_refused_like_ptxas():
    with pytest.raises(LaunchError, match=r"53248 bytes of static shared memory.*49152-byte limit"):
        gpusim.launch(static_shared_52k, 1, 32, (np.zeros(32, np.float32),))


def test_negative_dynamic_shared_memory():
    with pytest.raises(LaunchError, match=r"dynamic shared memory must be >= 0 bytes, got -1"):
        gpusim.launch(noop, 1, 32, A, shared_bytes=-1)


def test_fractional_dynamic_shared_memory():
    with pytest.raises(LaunchError, match=r"shared_bytes .* must be an integer, got 2.5"):
        gpusim.launch(noop, 1, 32, A, shared_bytes=2.5)


def test_largest_legal_grid_is_refused_at_once_with_an_estimate():
    t = time.monotonic()
    with pytest.raises(LaunchError) as e:
        gpusim.launch(noop, 2**31 - 1, 32, A)
    assert time.monotonic() - t < 2.0                       # before compiling anything
    msg = str(e.value)
    assert "2,147,483,647 blocks" in msg and "hours" in msg and "max_warps=None" in msg


def test_zero_max_steps_is_refused():
    with pytest.raises(LaunchError, match=r"max_steps must be a positive integer or None, got 0"):
        gpusim.launch(noop, 1, 32, A, max_steps=0)


def test_timing_options_of_the_wrong_type():
    with pytest.raises(LaunchError, match=r"timing_options must be a gpusim.timing.TimingOptions, got dict"):
        gpusim.launch(noop, 1, 32, A, timing=True, timing_options={"mode": "full"})


def test_timing_of_another_type_is_refused():
    with pytest.raises(LaunchError, match=r"timing must be True, False or a gpusim.timing.TimingOptions, got str 'full'"):
        gpusim.launch(noop, 1, 32, A, timing="full")


def test_timing_given_as_options_records_them():
    """timing=TimingOptions(...) times the launch with those options (it was taken as a bare True,
    its options silently dropped): a recording window comes back."""
    from gpusim.timing import TimingOptions
    from gpusim.timing.record import TraceWindow
    r = gpusim.launch(noop, 1, 32, A, timing=TimingOptions(record=TraceWindow()))
    assert r.extra["recording"].sub_partitions == 4


def test_timing_options_given_twice_are_refused():
    from gpusim.timing import TimingOptions
    with pytest.raises(LaunchError, match=r"pass the options once"):
        gpusim.launch(noop, 1, 32, A, timing=TimingOptions(), timing_options=TimingOptions())


def test_progress_that_is_not_callable():
    with pytest.raises(LaunchError, match=r"progress must be a callable"):
        gpusim.launch(noop, 1, 32, A, progress="yes")
