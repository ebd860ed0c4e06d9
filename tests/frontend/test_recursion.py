"""Recursive device functions on the drop-in (isa/recursion.py): a per-thread call stack in
local memory, one frame per activation, and an error naming kernel, line and thread when the
nesting passes the depth limit."""
from __future__ import annotations

import numpy as np
import pytest

from gpusim import cuda
from gpusim.errors import KernelError
from isa.recursion import MAX_CALL_DEPTH


@cuda.jit("i8(i8)", device=True)
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


@cuda.jit
def fib_kernel(r, x):
    i = cuda.grid(1)
    r[i] = fib(x[i])


def test_each_lane_recurses_to_its_own_depth_and_gets_its_own_result():
    x = np.arange(32, dtype=np.int64) % 11          # lanes of one warp recurse 0..10 deep
    r = np.zeros_like(x)
    fib_kernel[1, 32](r, x)
    expect = [0, 1]
    for _ in range(9):
        expect.append(expect[-1] + expect[-2])
    assert r.tolist() == [expect[v] for v in x]


@cuda.jit("i8(i8)", device=True)
def steps(n):
    if n == 0:
        return 1
    if n % 2:
        return steps(n - 1) * 3          # two call sites with different continuations:
    return steps(n - 1) + 5              # each return must resume at its own


@cuda.jit
def steps_kernel(r, x):
    i = cuda.grid(1)
    r[i] = steps(x[i])


def test_each_return_resumes_at_its_own_call_site():
    x = np.arange(12, dtype=np.int64)
    r = np.zeros_like(x)
    steps_kernel[1, 12](r, x)
    expect = [1]
    for n in range(1, 12):
        expect.append(expect[-1] * 3 if n % 2 else expect[-1] + 5)
    assert r.tolist() == expect


@cuda.jit("i8(i8)", device=True)
def countdown(n):
    if n == 0:
        return 0
    return 1 + countdown(n - 1)


@cuda.jit
def deep(r, x):
    i = cuda.grid(1)
    r[i] = countdown(x[i])


def test_the_deepest_allowed_recursion_completes():
    x = np.array([MAX_CALL_DEPTH - 1], dtype=np.int64)      # plus the kernel's own call: MAX_CALL_DEPTH frames
    r = np.zeros_like(x)
    deep[1, 1](r, x)
    assert r[0] == MAX_CALL_DEPTH - 1


def test_one_call_too_deep_names_kernel_line_and_thread():
    x = np.zeros(8, dtype=np.int64)
    x[5] = MAX_CALL_DEPTH                                     # lane 5 alone overflows
    with pytest.raises(KernelError, match="call stack overflow") as e:
        deep[1, 8](np.zeros_like(x), x)
    msg = str(e.value)
    assert "deep" in msg and "thread (5, 0, 0)" in msg and "test_recursion.py:" in msg
    assert "return 1 + countdown(n - 1)" in msg


def test_every_activation_allocates_and_frees_its_own_array(monkeypatch):
    from numba.cuda import config
    from numba.cuda.memory_management.nrt import rtsys
    monkeypatch.setattr(config, "CUDA_ENABLE_NRT", True)

    @cuda.jit("f8(i8)", device=True)             # compiled eagerly: needs NRT on
    def _nested_sums(n):
        if n == 0:
            return 0.0
        t = np.empty(n, dtype=np.float64)      # an array per activation, on the device heap
        for i in range(n):
            t[i] = i
        return t.sum() + _nested_sums(n - 1)

    @cuda.jit
    def kernel(r, x):
        i = cuda.grid(1)
        r[i] = _nested_sums(x[i])

    rtsys.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        x = np.arange(8, dtype=np.int64)
        r = np.zeros(8)
        kernel[1, 8](r, x)
        after = rtsys.get_allocation_stats()
    finally:
        rtsys.memsys_disable_stats()
    assert r.tolist() == [float(sum(sum(range(m)) for m in range(1, n + 1))) for n in x]
    assert (after.alloc - before.alloc, after.free - before.free) == (28, 28)     # 0 + 1 + ... + 7 activations
