"""A launch on several worker processes (gpusim/functional/parallel.py): identical to one
core where blocks do not communicate, one core with the reason where they may."""
from __future__ import annotations

import os

import numpy as np
import pytest
from numba import cuda

import gpusim
import programs
from gpusim.errors import LaunchError, MemoryAccessError


def launch(name, size, workers, **kw):
    c = programs.get(name).case(size, seed=5)
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes, workers=workers, **kw)
    return r, [np.array(a, copy=True) for a in c.args if isinstance(a, np.ndarray)]


def test_two_workers_give_one_cores_outputs_and_counters():
    (r1, a1), (r2, a2) = (launch("transpose_shared", "small", w, batch_lanes=512) for w in (1, 2))
    assert r2.extra["workers"][0] == 2 and r1.extra["workers"][0] == 1
    assert [a.tobytes() for a in a2] == [a.tobytes() for a in a1]
    assert r2.metrics == r1.metrics
    assert all(np.array_equal(r1.table[k], r2.table[k]) for k in r1.table)


def test_first_parallel_launch_warms_the_parent_and_later_ones_equal_it():
    # the kernel's first parallel launch runs batch 0 in the parent (so the workers inherit what it
    # loads); the next launch forks at once: both equal one core, bytes and counters
    c = programs.get("reduce_sequential").case("default", seed=3)
    prepared = gpusim.prepare(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes)
    prepared.decoded.warm_pid = None
    runs = [launch("reduce_sequential", "default", w, batch_lanes=512) for w in (1, 2, 2)]
    assert [r.extra["workers"][0] for r, _ in runs] == [1, 2, 2]
    assert prepared.decoded.warm_pid == os.getpid()
    for r, a in runs[1:]:
        assert [x.tobytes() for x in a] == [x.tobytes() for x in runs[0][1]] and r.metrics == runs[0][0].metrics


def test_global_atomics_keep_the_launch_on_one_core_with_the_reason():
    r, _ = launch("histogram_global", "default", 2, batch_lanes=512)
    n, why = r.extra["workers"]
    assert n == 1 and "atom.global" in why


def test_a_sanitizer_keeps_the_launch_on_one_core():
    r, _ = launch("vector_add", "default", 2, batch_lanes=512, check="racecheck")
    assert r.extra["workers"] == (1, "a sanitizer tool follows accesses across blocks")


@cuda.jit
def fault_in_block(a, bad_block):
    i = cuda.grid(1)
    if cuda.blockIdx.x == bad_block[0] or cuda.blockIdx.x == bad_block[1]:
        a[i + 1_000_000] = 1.0
    else:
        a[i] = 2.0


def test_a_fault_is_the_one_one_core_reports_first():
    def err(workers):
        with pytest.raises(MemoryAccessError) as e:
            gpusim.launch(fault_in_block, 8, 64, (np.zeros(512, np.float32), np.array([6, 3], np.int32)),
                          batch_lanes=64, workers=workers)
        return str(e.value)
    one = err(1)
    assert "block (3, 0, 0)" in one
    assert err(2) == one


def test_workers_must_be_a_positive_integer():
    with pytest.raises(LaunchError, match="workers must be a positive integer"):
        launch("vector_add", "default", 0)


def test_gpusim_workers_environment_variable_is_checked(monkeypatch):
    monkeypatch.setenv("GPUSIM_WORKERS", "many")
    with pytest.raises(LaunchError, match="GPUSIM_WORKERS must be a positive integer"):
        launch("vector_add", "default", None)
