"""Loop sampling's steady-state rate (`sampling/loop_rate.py`): every simulated SM's windows
together, unless an SM's own windows say it is slower or faster beyond their noise."""
from types import SimpleNamespace

import pytest

from gpusim.timing.sampling.loop_rate import loop_rates


def _sm(*rates, cycles=1000.0):
    return SimpleNamespace(loop_windows=[(r * cycles, cycles) for r in rates])


def test_an_sm_whose_few_windows_scatter_takes_every_sm_s_rate():
    sms = [_sm(1.8, 1.9, 1.7), _sm(1.4, 1.9, 1.4), _sm(1.7, 1.8, 1.75)]   # the second: 1.57 a cycle, noisy
    pooled = sum(sum(w[0] for w in s.loop_windows) for s in sms) / sum(sum(w[1] for w in s.loop_windows) for s in sms)
    assert loop_rates(sms) == [pytest.approx(pooled)] * 3


def test_an_sm_steadily_slower_than_the_others_keeps_its_own_rate():
    sms = [_sm(2.0, 2.01, 1.99), _sm(1.8, 1.81, 1.79), _sm(2.0, 2.0, 2.01)]
    assert loop_rates(sms)[1] == pytest.approx(1.8)


def test_an_sm_with_one_window_takes_its_own_and_one_with_none_every_sm_s():
    rates = loop_rates([_sm(2.0), _sm()])
    assert rates == [pytest.approx(2.0), pytest.approx(2.0)]
    assert loop_rates([_sm(), _sm()]) == [None, None]
