"""Kernels that can never finish stop within seconds with one line naming the kernel, the
source line, the block and the thread (NoProgress: no budget read from the arguments, which
stopped correct kernels with long data-dependent loops); the limits a caller sets
(max_steps, time_limit_s, --max-steps, --time-limit) stop the rest."""
import time

import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim.errors import NoProgress, StepBudgetExceeded, TimeLimitExceeded

from bad_inputs import one_line
from bad_inputs import spin_everyone, spin_lock_in_a_warp, spin_one_thread


def stopped(kernel, grid, block, args, limit_s, cls=NoProgress, **kw):
    t = time.monotonic()
    with pytest.raises(cls) as e:
        gpusim.launch(kernel, grid, block, args, **kw)
    took = time.monotonic() - t
    assert took < limit_s, f"took {took:.1f} s"
    msg = str(e.value)
    assert "\n" not in msg
    return msg, e.value


def test_one_spinning_thread_stops_in_seconds_naming_kernel_line_block_and_thread():
    msg, e = stopped(spin_one_thread, 1, 32, (np.zeros(1, np.int64),), 10)
    assert msg.startswith("kernel can never finish in kernel spin_one_thread, at ")
    assert "bad_inputs.py:25 (while out[0] == 0:), block (0, 0, 0), thread (0, 0, 0)" in msg
    assert "1 warp (1 thread) at bad_inputs.py:25 came back to the top of their loop exactly as they left it" in msg
    assert (e.kernel, e.block, e.thread) == ("spin_one_thread", (0, 0, 0), (0, 0, 0))


def test_one_spinning_thread_stops_in_timing_mode_too():
    msg, _ = stopped(spin_one_thread, 1, 32, (np.zeros(1, np.int64),), 15, timing=True)
    assert "while out[0] == 0:" in msg and "can never finish" in msg


def test_64_blocks_of_256_spinning_stop_naming_all_their_warps():
    msg, _ = stopped(spin_everyone, 64, 256, (np.zeros(64 * 256, np.int64),), 20)
    assert "512 warps (16,384 threads) at bad_inputs.py:43" in msg


def test_an_intra_warp_spin_lock_names_the_lock_and_the_reconvergence_stack():
    msg, e = stopped(spin_lock_in_a_warp, 1, 32, (np.zeros(1, np.int32), np.zeros(32, np.int32)), 40)
    assert "bad_inputs.py:33 (if cuda.atomic.cas(lock, 0, 0, 1) == 0:)" in msg and e.thread == (1, 0, 0)
    assert "1 warp (31 threads)" in msg and "lock byte 0) = 1" in msg
    assert "if they wait for other threads of their own warp (further down its reconvergence stack)" in msg


def wait_for_nobody(flag, out):
    t = cuda.threadIdx.x
    if t == 40:
        while cuda.atomic.add(flag, 0, 0) == 0:      # nobody ever sets it
            pass
    out[t] = t


def test_waiting_for_a_flag_nobody_sets_names_the_flag_and_the_finished_warps():
    msg, e = stopped(wait_for_nobody, 1, 128, (np.zeros(1, np.int32), np.zeros(128, np.int32)), 20)
    assert e.thread == (40, 0, 0) and "global memory (wait_for_nobody.flag byte 0) = 0" in msg
    assert "(3 warps finished)" in msg


def wait_for_a_later_batch(flag, out):
    if cuda.blockIdx.x == 0 and cuda.threadIdx.x == 0:
        while cuda.atomic.add(flag, 0, 0) == 0:
            pass
    if cuda.blockIdx.x == cuda.gridDim.x - 1 and cuda.threadIdx.x == 0:
        cuda.atomic.exch(flag, 0, 1)


def test_a_block_waiting_for_a_block_outside_its_batch_is_told_what_runs_together():
    # 64 blocks of 1,024 threads: gpusim runs 32 at a time; block 63 never runs before block 0 ends
    msg, _ = stopped(wait_for_a_later_batch, 64, 1024, (np.zeros(1, np.int32), np.zeros(1, np.int32)), 60)
    assert "if they wait for a later block: gpusim runs blocks (0, 0, 0)..(31, 0, 0) together" in msg


def count_forever(c):
    while cuda.atomic.add(c, 0, 1) >= 0:
        pass


def test_a_counter_loop_ending_only_by_wrap_around_is_reported_in_seconds():
    # on a GPU it ends after 2^31 atomic additions, when the int32 counter wraps around
    msg, e = stopped(count_forever, 1, 32, (np.zeros(1, np.int32),), 20)
    assert msg.startswith("kernel cannot finish in reasonable time in kernel count_forever")
    assert "when a 32-bit value wraps around (it advances by 32 per iteration)" in msg and e.thread == (0, 0, 0)


def never_equal(start, stop, out):
    i = start[0]
    while i != stop[0]:                              # an even counter never equals 7
        out[1] = i                                   # a side effect: LLVM keeps the loop as written
        i += 2
    out[0] = i


def test_a_loop_whose_exit_the_counter_steps_over_is_reported():
    msg, _ = stopped(never_equal, 1, 1, (np.array([0]), np.array([7]), np.zeros(2, np.int64)), 15)
    assert msg.startswith("kernel can never finish in kernel never_equal")
    assert "never changes its way (it advances by 2 per iteration)" in msg


def count_to(n, out):
    s = 0
    for k in range(n[0]):
        s += k
    out[0] = s


def test_max_steps_stops_a_long_kernel_naming_its_line():
    msg, e = stopped(count_to, 1, 1, (np.array([10**6]), np.zeros(1, np.int64)), 10, StepBudgetExceeded,
                     max_steps=500)
    assert type(e) is StepBudgetExceeded and "kernel did not finish within max_steps" in msg
    assert "501 steps (501 warp-steps) in one batch (block (0, 0, 0)) reached the step budget you set (500 steps" in msg


def test_timing_mode_honours_max_steps():
    msg, _ = stopped(count_to, 1, 1, (np.array([10**6]), np.zeros(1, np.int64)), 15, StepBudgetExceeded,
                     max_steps=500, timing=True)
    assert "reached the step budget you set (500 steps" in msg


def test_time_limit_stops_a_long_kernel_naming_its_line():
    msg, e = stopped(count_to, 1, 1, (np.array([10**7]), np.zeros(1, np.int64)), 15, TimeLimitExceeded,
                     time_limit_s=1.0)
    assert "the time limit you set (1 s: time_limit_s, --time-limit) passed after" in msg and e.block == (0, 0, 0)


def test_a_bad_time_limit_is_refused():
    with pytest.raises(gpusim.errors.LaunchError, match="time_limit_s must be a positive number"):
        gpusim.launch(count_to, 1, 1, (np.array([1]), np.zeros(1, np.int64)), time_limit_s=0)


def test_run_max_steps_stops_a_long_file_with_exit_10(run_cli, tmp_path):
    path = tmp_path / "spin.py"
    path.write_text(LONG_FILE)
    code, _, err = run_cli("run", str(path), "--functional", "--max-steps", "300")
    line = one_line(err)
    assert code == 10 and "kernel did not finish within max_steps in kernel counter" in line and "spin.py:9" in line


def test_run_time_limit_stops_a_long_file_with_exit_10(run_cli, tmp_path):
    path = tmp_path / "spin.py"
    path.write_text(LONG_FILE)
    code, _, err = run_cli("run", str(path), "--functional", "--time-limit", "0.5")
    assert code == 10 and "time limit you set (0.5 s" in one_line(err)


def test_run_reports_a_kernel_that_cannot_finish_with_exit_10(run_cli, tmp_path):
    path = tmp_path / "spin.py"
    path.write_text(LONG_FILE.replace("for k in range(a[0]):", "while a[0] > 0:").replace("+= k", "+= 1"))
    code, _, err = run_cli("run", str(path), "--functional")
    assert code == 10 and "kernel can never finish in kernel counter" in one_line(err)


LONG_FILE = '''
import numpy as np
from numba import cuda
from programs.base import Case, ProgramSpec


@cuda.jit
def counter(a):
    for k in range(a[0]):
        a[1] += k


def build(rng, n):
    return Case("counter", counter, (1,), (1,), (np.array([n, 0], np.int64),), {})


PROGRAM = ProgramSpec("counter", "a long loop", build, sizes={"default": {"n": 10**8}})
'''
