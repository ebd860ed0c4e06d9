"""Loop sampling keeps K consecutive iterations of each activation, from a place that moves round
after round of blocks (`issue_stream.kept_offset`): blocks that read the same data from a loop
then read, round after round, the parts the whole loops read, instead of all re-reading the
loop's first K iterations' data from the L2."""
import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim.specs.overrides import resolve
from gpusim.timing.engine import TimingOptions
from gpusim.timing.issue_stream import kept_offset


def test_the_first_round_keeps_the_first_iterations():
    assert kept_offset(0, 128, 15) == 0


def test_later_rounds_keep_iterations_from_all_over_the_loop():
    count, keep = 128, 15
    starts = [kept_offset(r, count, keep) for r in range(80)]
    assert all(0 <= o <= count - 1 - keep for o in starts)
    covered = {o + j for o in starts for j in range(keep)}
    assert covered == set(range(count - 1))          # the last iteration is kept by every activation


@cuda.jit
def walk(a, out, iters):
    t = cuda.threadIdx.x
    acc = 0.0
    for k in range(iters):             # every block walks all of `a`, 1 MB, three times the L2
        acc += a[k * 128 + t]
    out[cuda.blockIdx.x * 128 + t] = acc


@pytest.mark.slow
def test_loop_sampling_keeps_the_dram_reads_of_blocks_walking_one_array():
    # one SM, one block at a time (150 KB of shared memory each): each block is a round of its own
    iters, blocks = 2048, 16
    a = np.ones(iters * 128, np.float32)
    spec = resolve("h100", ["sm_count=1", "l2.size_bytes=327680"])

    def run(budget):
        r = gpusim.launch(walk, blocks, 128, (a, np.zeros(blocks * 128, np.float32), np.int32(iters)), gpu=spec,
                          timing=True, shared_bytes=150000,
                          timing_options=TimingOptions(mode="full", instruction_budget=budget))
        return r.metrics

    whole, sampled = run(None), run(100_000)
    assert sampled["timing__loop_sampled_fraction"] < 0.1
    # every block misses the whole array (16 x 1 MB); kept at the start of every block's loop, the
    # sampled iterations read 1 MB in all (the first block's part, then hits): -94% and -75% of the time
    assert sampled["dram__bytes_read.sum"] == pytest.approx(whole["dram__bytes_read.sum"], rel=0.1)
    assert sampled["gpu__time_duration.sum"] == pytest.approx(whole["gpu__time_duration.sum"], rel=0.05)
