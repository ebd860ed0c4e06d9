"""A grid whose blocks' L2 traffic changes along it in stretches longer than a wave runs those
stretches one after another on the GPU (one DRAM-bound, the next held at the SMs' block dispatch
rate), where a sample's timed rounds, spread over the grid, run short stretches of each side by
side: the sampled prediction is at least the phases' bounds added up
(gpusim/timing/sampling/phases.py `phase_floor_cycles`). One property each."""
import numpy as np
import pytest

from gpusim.specs.overrides import resolve
from gpusim.timing.engine import TimingStats
from gpusim.timing.sampling.extrapolation import Extrapolation, SampleShape
from gpusim.timing.sampling.sample_blocks import sampled_blocks

SPEC = resolve("h100", [])
N_SM, SMS, BPS = SPEC.sm_count, 8, 8
NBLOCKS = 64 * 1024                       # 497 rounds of 132 blocks


def extrapolation(heavy) -> Extrapolation:
    """A 4-wave sample of 8 SMs whose timed blocks moved 8 KB each where `heavy(block)`, else nothing."""
    order = list(sampled_blocks(NBLOCKS, 4 * SMS * BPS, N_SM, SMS, BPS))
    stats = TimingStats(1)
    for i, b in enumerate(order):
        stats.block_done(b, float(i), float(i) + 100.0)
        if heavy(b):
            stats.block_traffic(b, 8192.0)
    share = -(-NBLOCKS * SMS // N_SM)
    shape = SampleShape("sampled", NBLOCKS, 8, SMS, share, len(order), BPS, SMS * BPS, 100, None)
    return Extrapolation(SPEC, shape, stats, [], None, None, None)


def dispatch_cycles(rounds: int) -> float:
    return rounds * SPEC.launch.block_dispatch_cycles


ROUNDS = -(-NBLOCKS // N_SM)


def test_a_grid_of_like_blocks_has_no_phases():
    e = extrapolation(lambda b: True)
    assert e._phase_floor_cycles(200_000.0, 150_000.0) == 0.0


def test_long_stretches_of_memory_and_of_empty_blocks_add_up():
    # the first and third quarters of the grid move memory, the second and fourth nothing: the
    # empty half's rounds are dispatch-bound on their own, after the memory half's DRAM time
    quarter = NBLOCKS // 4
    e = extrapolation(lambda b: (b // quarter) % 2 == 0)
    got = e._phase_floor_cycles(70_000.0, 60_000.0)
    assert got == pytest.approx(70_000.0 + dispatch_cycles(ROUNDS // 2), rel=0.02)
    assert got > max(70_000.0, dispatch_cycles(ROUNDS))


def test_memory_and_empty_blocks_within_a_wave_do_not_add_up():
    # heavy and empty blocks alternate every round, well within a wave: the GPU runs them together, and the
    # sample's rounds, some 20 apart, see them at random, not in stretches
    e = extrapolation(lambda b: (b // N_SM) % 2 == 0)
    assert e._phase_floor_cycles(70_000.0, 60_000.0) == 0.0


def test_a_launch_without_l2_traffic_has_no_phase_floor():
    assert extrapolation(lambda b: False)._phase_floor_cycles(0.0, 0.0) == 0.0


def test_the_sample_of_the_bitonic_step_with_the_far_partner_adds_its_empty_phases():
    # held-out 2's bitonic_step_global/far: 2^24 int32 keys, j = 2^22: blocks 0-16,383 and 32,768-49,151
    # compare and swap, the others find their partner below them and do nothing
    e = extrapolation(lambda b: (b // 16384) % 2 == 0)
    floors = 70_265.0, 72_096.0                # the H100 sample's DRAM and L2 floors (cycles)
    empty_rounds = np.count_nonzero((np.arange(ROUNDS) * N_SM // 16384) % 2 == 1)
    assert e._phase_floor_cycles(*floors) == pytest.approx(72_096.0 + dispatch_cycles(empty_rounds), rel=0.03)
