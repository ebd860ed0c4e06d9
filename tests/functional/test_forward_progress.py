"""Kernels that finish on a GPU finish here: loops whose trip counts come from the data run to
the end however long (no budget derived from the arguments stops them), and warps that wait for
other warps or blocks of their batch through memory get to run the warps they wait for
(scheduler.next_group: Volta's forward progress between warps and resident blocks)."""
import math

import numpy as np
import pytest
from numba import cuda

import gpusim

# ---------------------------------------------------------------- data-dependent loops


def csr_row_per_thread(indptr, indices, data, x, y):
    row = cuda.grid(1)
    if row < y.size:
        s = 0.0
        for k in range(indptr[row], indptr[row + 1]):
            s += data[k] * x[indices[k]]
        y[row] = s


def power_law_csr(rows: int, longest: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    lens = np.minimum((rng.pareto(1.1, rows) * 3).astype(np.int64) + 1, longest)
    lens[rows // 3] = longest
    indptr = np.zeros(rows + 1, np.int32)
    indptr[1:] = np.cumsum(lens)
    nnz = int(indptr[-1])
    return indptr, rng.integers(0, rows, nnz).astype(np.int32), rng.random(nnz).astype(np.float32)


@pytest.mark.slow
def test_a_power_law_csr_spmv_with_a_row_of_60000_entries_finishes_with_the_right_result():
    # the size-derived budget gave this launch 10,176 steps (8 per nonzero a thread); the longest
    # row alone takes 15,000 (its loop unrolled 4 times)
    rows = 4096
    indptr, indices, data = power_law_csr(rows, 60_000)
    x = np.random.default_rng(1).random(rows).astype(np.float32)
    y = np.zeros(rows, np.float32)
    gpusim.launch(csr_row_per_thread, rows // 256, 256, (indptr, indices, data, x, y))
    want = np.array([np.dot(data[indptr[r]:indptr[r + 1]].astype(np.float64), x[indices[indptr[r]:indptr[r + 1]]])
                     for r in range(rows)])
    np.testing.assert_allclose(y, want, rtol=2e-4)


def attention_rows(q, k, v, out, scale):
    """One query row per thread: online softmax over every key (a FlashAttention forward pass)."""
    i = cuda.grid(1)
    if i >= q.shape[0]:
        return
    m = -1e30
    norm = 0.0
    acc = cuda.local.array(16, np.float64)
    for d in range(16):
        acc[d] = 0.0
    for j in range(k.shape[0]):
        s = 0.0
        for d in range(16):
            s += q[i, d] * k[j, d]
        s *= scale
        m_new = max(m, s)
        corr = math.exp(m - m_new)
        p = math.exp(s - m_new)
        norm = norm * corr + p
        for d in range(16):
            acc[d] = acc[d] * corr + p * v[j, d]
        m = m_new
    for d in range(16):
        out[i, d] = acc[d] / norm


@pytest.mark.slow
def test_an_attention_block_of_64_query_rows_over_256_keys_finishes_with_the_right_result():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((n, 16)).astype(np.float32) for n in (64, 256, 256))
    out = np.zeros((64, 16), np.float32)
    gpusim.launch(attention_rows, 1, 64, (q, k, v, out, np.float32(0.25)))
    s = (q @ k.T) * 0.25
    p = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, (p / p.sum(axis=1, keepdims=True)) @ v, rtol=1e-4, atol=1e-5)


def count_to(n, out):
    i = cuda.grid(1)
    s = 0
    k = 0
    while k < n[i]:
        s += k ^ i
        k += 1
    out[i] = s


@pytest.mark.slow
def test_a_loop_of_300_thousand_iterations_finishes():
    # one warp, 1.2 M steps: past the size-derived budgets of before (10,008 steps for this launch)
    n = np.ones(32, np.int64)
    n[7] = 300_000
    out = np.zeros(32, np.int64)
    gpusim.launch(count_to, 1, 32, (n, out))
    assert out[7] == sum(k ^ 7 for k in range(300_000))


@pytest.mark.slow
def test_512_warps_looping_12000_times_each_finish():
    # 3,000 steps of 512 warps: 1.5 M warp-steps, past the 1.28 M the size-derived budget allowed
    n = np.full(64 * 256, 12_000, np.int64)
    out = np.zeros(64 * 256, np.int64)
    gpusim.launch(count_to, 64, 256, (n, out))
    i = np.arange(64 * 256)
    assert out[5] == sum(k ^ 5 for k in range(12_000)) and (out[:8] == [sum(k ^ int(t) for k in range(12_000))
                                                                        for t in i[:8]]).all()


@pytest.mark.slow
def test_a_loop_of_50000_iterations_finishes_in_timing_mode_too():
    # 12,500 steps: past the 10,008 the size-derived budget gave it
    n = np.ones(32, np.int64)
    n[3] = 50_000
    out = np.zeros(32, np.int64)
    r = gpusim.launch(count_to, 1, 32, (n, out), timing=True)
    assert out[3] == sum(k ^ 3 for k in range(50_000)) and r.metrics["gpu__time_duration.sum"] > 0


# ---------------------------------------------------------------- waiting for other warps and blocks


def flag_from_next_warp(flag, out):
    t = cuda.threadIdx.x
    if t == 0:
        while cuda.atomic.add(flag, 0, 0) == 0:
            pass
        out[0] = out[1] + 1                  # sees what warp 1 stored before raising the flag
    if t == 32:
        out[1] = 41
        cuda.threadfence()
        cuda.atomic.exch(flag, 0, 1)


@pytest.mark.parametrize("timing", [False, True])
def test_a_thread_spinning_on_a_flag_another_warp_sets_finishes(timing):
    # the spinning warp's loop comes first in the code: the lowest-block-first order alone never
    # ran the setter, and the error blamed "another thread of the same warp"
    out = np.zeros(2, np.int32)
    gpusim.launch(flag_from_next_warp, 1, 64, (np.zeros(1, np.int32), out), timing=timing)
    assert out.tolist() == [42, 41]


def flag_after_a_barrier(flag, out):
    t = cuda.threadIdx.x
    if cuda.blockIdx.x == 0:
        if t == 0:
            while cuda.atomic.add(flag, 0, 0) == 0:
                pass
            out[0] = out[1] + 1
    else:
        if t == 5:
            out[1] = 6
        cuda.syncthreads()                  # released while block 0 still spins
        if t == 0:
            cuda.threadfence()
            cuda.atomic.exch(flag, 0, 1)


def test_a_block_waits_for_another_block_that_passes_a_barrier_first():
    out = np.zeros(2, np.int32)
    gpusim.launch(flag_after_a_barrier, 2, 128, (np.zeros(1, np.int32), out))
    assert out.tolist() == [7, 6]


def chained_blocks(flags, vals, out):
    """Each block waits for the one before it (a decoupled look-back scan, one element a block)."""
    b = cuda.blockIdx.x
    if cuda.threadIdx.x == 0:
        prev = 0
        if b > 0:
            while cuda.atomic.add(flags, b - 1, 0) == 0:
                pass
            prev = out[b - 1]
        out[b] = prev + vals[b]
        cuda.threadfence()
        cuda.atomic.exch(flags, b, 1)


def test_a_chain_of_blocks_each_waiting_for_the_previous_one_computes_the_prefix_sum():
    vals = np.arange(1, 17, dtype=np.int64)
    out = np.zeros(16, np.int64)
    gpusim.launch(chained_blocks, 16, 32, (np.zeros(16, np.int32), vals, out))
    assert out.tolist() == np.cumsum(vals).tolist()


def locked_increment(lock, count):
    if cuda.threadIdx.x % 32 == 0:          # one thread a warp takes the lock
        while cuda.atomic.cas(lock, 0, 0, 1) != 0:
            pass
        count[0] = count[0] + 1             # a plain read-modify-write, made safe by the lock
        cuda.threadfence()
        cuda.atomic.exch(lock, 0, 0)


def test_a_spin_lock_taken_by_one_thread_of_each_of_16_warps_counts_every_warp():
    count = np.zeros(1, np.int64)
    gpusim.launch(locked_increment, 2, 256, (np.zeros(1, np.int32), count))
    assert count[0] == 16


def count_until_wrap(c, out):
    n = 0
    while cuda.atomic.add(c, 0, 1) >= 0:     # int32: ends when the counter wraps around
        n += 1
    out[cuda.threadIdx.x] = n


def test_a_loop_ending_by_wrap_around_after_little_work_runs_to_its_end():
    # one thread, 6,000 below the largest int32: the watchdog sees the wrap-around coming (the
    # loop outlives its first 2,048 steps) and lets the 4,000 iterations left run
    out = np.zeros(1, np.int64)
    c = np.array([2**31 - 1 - 6000], np.int32)
    gpusim.launch(count_until_wrap, 1, 1, (c, out))
    assert out[0] == 6001 and c[0] == -(2**31) + 1
