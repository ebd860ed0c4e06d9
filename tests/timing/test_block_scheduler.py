"""The block scheduler (block_scheduler.py), on stand-in SMs whose blocks last a fixed time: one property per test."""
import math

from gpusim.timing.block_scheduler import BlockScheduler
from gpusim.timing.functional_streams import consecutive_runs

DURATION = 100.0        # cycles a stand-in SM's block lasts
DISPATCH = 10.0         # block_dispatch_cycles


class StandInSM:
    """What the scheduler asks of an SM: add_cta, has_work, advance, next_time; blocks end DURATION after start."""

    def __init__(self, sm_id: int):
        self.id = sm_id
        self.on_cta_done = None
        self.resident: dict[int, float] = {}
        self.starts: list[tuple[int, float]] = []

    def add_cta(self, block, streams, t):
        self.resident[block] = t + DURATION
        self.starts.append((block, t))

    def has_work(self):
        return bool(self.resident)

    def next_time(self):
        return min(self.resident.values(), default=math.inf)

    def advance(self, until):
        for block, end in sorted(self.resident.items(), key=lambda x: x[1]):
            if end <= until:
                del self.resident[block]
                self.on_cta_done(self, block, end)


class StandInTrace:
    def __init__(self):
        self.ready, self.sought = set(), []

    def seek(self, block, n):
        self.sought.append((block, n))

    def block(self, b):
        return None


def _run(order, n_sms=2, bps=2):
    trace = StandInTrace()
    s = BlockScheduler(order, bps, DISPATCH, trace, quantum_cycles=64)
    sms = [StandInSM(i) for i in range(n_sms)]
    for sm in sms:
        sm.on_cta_done = s.cta_done
    s.run(sms)
    return s, sms, trace


def test_the_first_wave_is_dealt_round_robin_one_dispatch_interval_apart_on_an_sm():
    _, sms, _ = _run(range(4))
    assert sms[0].starts == [(0, 0.0), (2, DISPATCH)] and sms[1].starts == [(1, 0.0), (3, DISPATCH)]


def test_an_sm_whose_block_ends_gets_the_next_block_at_that_cycle():
    _, sms, _ = _run(range(5))
    assert sms[0].starts[2] == (4, DURATION)          # block 0 ended at 100 on SM 0


def test_every_timed_block_is_handed_out_once_and_counted_done():
    s, sms, _ = _run(range(23))
    assert sorted(b for sm in sms for b, _ in sm.starts) == list(range(23)) and s.done_blocks == 23


def test_a_sampled_run_further_into_the_grid_is_sought_once_at_its_first_block():
    order = [0, 1, 2, 3, 40, 41, 90]
    assert consecutive_runs(order) == {0: 4, 40: 2, 90: 1}
    _, _, trace = _run(order)
    assert trace.sought == [(0, 4), (40, 2), (90, 1)]
