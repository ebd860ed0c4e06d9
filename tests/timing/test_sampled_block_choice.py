"""Which blocks a sampled launch times (`sampling.extrapolation.sampled_blocks`): the simulated
SMs' blocks of a round move from round to round (`round_offset`), so a 2-D grid whose rows are
a multiple of the SM count is not sampled at the same columns in every row."""
import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim.specs.overrides import resolve
from gpusim.timing.engine import TimingOptions
from gpusim.timing.sampling.sample_blocks import place_in_round, sampled_blocks


def test_a_round_sample_is_sms_consecutive_places_of_its_round_in_increasing_order():
    order = sampled_blocks(4096, 256, 132, 8, 8)
    assert all(a < b for a, b in zip(order, order[1:]))              # the trace takes them in order
    assert list(order[:8]) == list(range(8))                         # the first round as dealt round-robin
    assert sorted(set(np.asarray(order) % 132)) != list(range(8))    # not the same 8 places every round
    full_rounds = np.asarray(order[:31 * 8])                          # the last round has 4 blocks
    places = place_in_round(full_rounds, 132, 8, 4096).reshape(-1, 8)   # 8 a round, each place once
    assert (np.sort(places, axis=1) == np.arange(8)).all()


def test_a_sample_that_skips_rounds_gives_every_simulated_sm_a_whole_round():
    # 4,096 blocks on 132 SMs end in a round of 4: a sample of 8 rounds for 8 SMs that took it
    # timed 60 blocks, leaving four of the SMs a slot idle in its last wave
    order = np.asarray(sampled_blocks(4096, 64, 132, 8, 2))
    assert len(order) == 64 and order.max() < 31 * 132                   # the round of 4 is not one of them
    assert np.bincount(order // 132, minlength=31)[np.unique(order // 132)].tolist() == [8] * 8


def test_a_sample_of_every_round_keeps_the_grid_s_last_round():
    order = sampled_blocks(4096, 252, 132, 8, 2)                          # the simulated SMs' whole share
    assert list(order[-4:]) == [4092, 4093, 4094, 4095]


@cuda.jit
def spin2d(reps, out):
    b = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x
    i = b * cuda.blockDim.x + cuda.threadIdx.x
    a = np.float32(i)
    for _ in range(reps[b]):
        a = a * np.float32(0.999) + np.float32(1.0)
    out[i] = a


def _launch(mode):
    gx, gy = 64, 16                       # rows of 64 blocks, 32 SMs: a fixed place would be the same columns
    reps = np.tile(4 + 4 * np.arange(gx), gy).astype(np.int32)      # work grows along a row
    r = gpusim.launch(spin2d, (gx, gy), 128, (reps, np.zeros(gx * gy * 128, np.float32)),
                      gpu=resolve("h100", ["sm_count=32"]), timing=True,
                      timing_options=TimingOptions(mode=mode, functional="sampled", instruction_budget=None))
    return r.metrics["sm__cycles_elapsed.max"]


@pytest.mark.slow
def test_a_2d_grid_with_work_along_its_rows_is_sampled_at_every_column():
    # the first 8 of every 32 blocks (columns 0-7 and 32-39 of every row) gave 0.67x the full
    # simulation (17,903 against 26,737 cycles); moving places 0.96x
    ratio = _launch("sampled") / _launch("full")
    assert 0.9 < ratio < 1.1, ratio
