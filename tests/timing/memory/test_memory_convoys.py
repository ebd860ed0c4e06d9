"""Convoys (gpusim/timing/sampling/warming.py): while the DRAM is congested the blocks of a wave
that share lines run together, so a line is fetched once a wave; otherwise they drift apart and
only the residency window decides. One property per test."""
import math

import pytest

from _memory_spec import SPEC
from gpusim.timing.memory import HBM
from gpusim.timing.sampling.warming import COLD, IN_FLIGHT, SharedFootprint


def _walked():
    """A matmul's B strip: 1000 lines walked in order by 128 blocks each (gap 1/128 of the grid),
    far more than the L2 holds, waves of 8% of the grid."""
    return SharedFootprint([0], [1000], [128_000.0], capacity_lines=10.0, regular=[True], wave_share=0.08)


def test_a_walk_beyond_the_l2_gets_no_hits_without_a_convoy():
    assert _walked().probability(500, 0.5) == 0.0


def test_in_a_convoy_a_walked_line_is_fetched_once_a_wave():
    assert _walked().probability(500, 0.5, convoy=True) == pytest.approx(1 - (1 / 128) / 0.08)


def test_a_convoy_line_is_on_its_way_not_held():
    fp = _walked()
    states = {fp.warm_state(line, 0.5, convoy=True) for line in range(1000)}
    assert states == {COLD, IN_FLIGHT}


def test_in_a_convoy_a_line_touched_at_random_goes_to_the_first_of_the_waves_touches():
    fp = SharedFootprint([0], [1000], [16_000.0], capacity_lines=10.0, wave_share=0.25)   # m = 16, at random
    x = 15 * 0.25                                      # the wave's other touches of a line (Poisson mean)
    assert fp.probability(500, 0.6, convoy=True) == pytest.approx(1 - (1 - math.exp(-x)) / x, abs=0.01)


def test_the_dram_is_not_congested_by_reads_one_at_a_time():
    h = HBM(SPEC)
    for k in range(200):
        h.read_burst(k * 10_000.0, k * 97)
    assert not h.congested


def test_the_dram_is_congested_when_its_reads_wait_as_long_as_its_latency():
    h = HBM(SPEC)
    for k in range(20_000):                            # all at once: the channels' queues grow
        h.read_burst(0.0, k)
    assert h.congested
