"""Kernels that never finish stop at the step budget within seconds, functional and timing,
with the kernel, the source line the warps were at, and which blocks and threads."""
import time

import numpy as np
import pytest

import gpusim
from gpusim.errors import StepBudgetExceeded
from gpusim.functional.budget import STEPS_BASE, default_step_budget

from bad_inputs import one_line
from bad_inputs import spin_everyone, spin_lock_in_a_warp, spin_one_thread


def stopped(kernel, grid, block, args, limit_s, **kw):
    t = time.monotonic()
    with pytest.raises(StepBudgetExceeded) as e:
        gpusim.launch(kernel, grid, block, args, **kw)
    took = time.monotonic() - t
    assert took < limit_s, f"took {took:.1f} s"
    return str(e.value)


def test_one_spinning_thread_stops_in_seconds_naming_line_and_thread():
    msg = stopped(spin_one_thread, 1, 32, (np.zeros(1, np.int64),), 5)
    assert "kernel spin_one_thread" in msg and "bad_inputs.py:25 (while out[0] == 0:)" in msg
    assert "1 warp (1 thread), first block (0, 0, 0) thread (0, 0, 0)" in msg and "budget 10008" in msg


def test_one_spinning_thread_stops_in_timing_mode_too():
    msg = stopped(spin_one_thread, 1, 32, (np.zeros(1, np.int64),), 8, timing=True)
    assert "while out[0] == 0:" in msg and "budget 10008" in msg


def test_intra_warp_spin_lock_stops_naming_the_cas_line():
    msg = stopped(spin_lock_in_a_warp, 1, 32, (np.zeros(1, np.int32), np.zeros(32, np.int32)), 25)
    assert "bad_inputs.py:33 (if cuda.atomic.cas(lock, 0, 0, 1) == 0:)" in msg
    assert "1 warp (31 threads), first block (0, 0, 0) thread (1, 0, 0)" in msg


def test_64_blocks_of_256_spinning_stop_naming_all_their_warps():
    msg = stopped(spin_everyone, 64, 256, (np.zeros(64 * 256, np.int64),), 15)
    assert "512 warps (16384 threads)" in msg and "blocks (0, 0, 0)..(63, 0, 0)" in msg


def test_64_blocks_of_256_spinning_stop_in_timing_mode_too():
    msg = stopped(spin_everyone, 64, 256, (np.zeros(64 * 256, np.int64),), 20, timing=True)
    assert "512 warps (16384 threads)" in msg and "1281024 warp-steps" in msg


def test_timing_mode_honours_max_steps():
    msg = stopped(spin_one_thread, 1, 32, (np.zeros(1, np.int64),), 5, timing=True, max_steps=500)
    assert "501 steps (501 warp-steps) in one batch (block (0, 0, 0); budget 500 steps or 64000 warp-steps)" in msg


def test_run_max_steps_stops_a_spinning_file_with_exit_10(run_cli, tmp_path):
    path = tmp_path / "spin.py"
    path.write_text(SPIN_FILE)
    code, _, err = run_cli("run", str(path), "--max-steps", "300")
    line = one_line(err)
    assert code == 10 and "kernel did not finish in kernel spinner" in line and "spin.py:9" in line
    assert "budget 300" in line


def test_default_budget_scales_with_what_a_loop_may_legitimately_walk():
    small = default_step_budget((np.zeros(1),), 32)
    grid_stride = default_step_budget((np.zeros(1 << 20),), 1024)      # 1024 elements per thread
    matrix = default_step_budget((np.zeros((4096, 4096), np.float32),), 4096 * 4096)   # a row per thread
    assert (small, grid_stride, matrix) == (STEPS_BASE + 8, STEPS_BASE + 8 * 1024, STEPS_BASE + 8 * 4096)


SPIN_FILE = '''
import numpy as np
from numba import cuda
from programs.base import Case, ProgramSpec


@cuda.jit
def spinner(a):
    while a[0] == 0:
        a[1] += 1


def build(rng, n):
    return Case("spinner", spinner, (1,), (32,), (np.zeros(n, np.int64),), {})


PROGRAM = ProgramSpec("spinner", "never ends", build, sizes={"default": {"n": 2}})
'''
