"""Stores of one warp that reach the L2 as one write (`issue_stream.combine_stores`): consecutive
stores of a visit to one sector leave together, unless a load of that sector comes between them
(H200: digit_histogram_local's read-increment-write of a local array writes 1.5x its L1 store
sectors to the L2, the far partition's copy and no merging)."""
import numpy as np
from numba import cuda, int32

import gpusim
from gpusim.timing import TimingOptions
from gpusim.timing.issue_stream import combine_stores

FULL = TimingOptions(mode="full")


def _store(sectors, mask=0xF):
    return (np.asarray(sectors, np.uint64), np.full(len(sectors), mask, np.uint32))


def test_a_second_store_to_a_sector_merges_into_the_first():
    mem = {0: _store([10, 11]), 1: _store([11, 12], 0xF0)}
    combine_stores([0, 1], mem)
    assert mem[1][2].tolist() == [False, True]          # sector 11 rides with store 0
    assert int(mem[0][1][1]) == 0xFF                      # with both stores' bytes


def test_a_load_of_the_sector_between_two_stores_sends_both():
    mem = {0: _store([10, 11]), 1: np.asarray([11], np.uint64), 2: _store([11, 12], 0xF0)}
    combine_stores([0, 1, 2], mem)
    assert len(mem[2]) == 2                               # no `send` mask: every sector leaves
    assert int(mem[0][1][1]) == 0xF                       # store 0 keeps only its own bytes


def test_a_load_of_another_sector_does_not_end_the_merge():
    mem = {0: _store([10]), 1: np.asarray([99], np.uint64), 2: _store([10], 0xF0)}
    combine_stores([0, 1, 2], mem)
    assert mem[2][2].tolist() == [False]


def local_counts(x, out):
    i = cuda.grid(1)
    counts = cuda.local.array(16, int32)
    for b in range(16):
        counts[b] = 0
    v = x[i]
    for k in range(8):
        counts[(v >> (4 * k)) & 15] += 1                  # a run-time index: local memory
    best = 0
    for b in range(16):
        best = max(best, counts[b])
    out[i] = best


def test_read_increment_write_of_a_local_array_writes_every_store_sector_to_the_l2():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2**31 - 1, 64 * 256, dtype=np.int32)
    r = gpusim.launch(local_counts, 64, 256, (x, np.zeros_like(x)), gpu="h200", timing=True, timing_options=FULL)
    m = r.metrics
    l1 = m["l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"] + m["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]
    assert m["lts__t_sectors_op_write.sum"] / l1 > 1.3         # 1.5 with the far copies; merged across loads: 0.6
