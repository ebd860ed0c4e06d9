"""Reads waiting in an L2 slice's queue (gpusim/timing/memory/l2_queue.py): another SM's read of
the same sectors joins one still queued; one property each (test spec: _memory_spec, with
`l2.join_queued_reads` on: the presets leave it off)."""
from _memory_spec import SPEC, replace
from gpusim.timing.memory.l2 import L2Cache

LINE = 1000
JOINING = replace(l2={"join_queued_reads": True})


def _backlogged(spec=JOINING):
    """An L2 whose slice of LINE is busy for a while from t = 0 (reads of other lines there),
    and LINE itself warm in the L2."""
    l2 = L2Cache(spec)
    l2.read(0.0, [LINE * 4, LINE * 4 + 1])                          # warm: a miss at t = 0, back long before 10,000
    home_slice = l2.slices.locate(LINE)[2]
    others = [line for line in range(LINE + 1, LINE + 20_000) if l2.slices.locate(line)[2] == home_slice][:400]
    for line in others:                                             # 400 lines x 4 sectors queued from t = 10,000
        l2.read(10_000.0, [line * 4 + k for k in range(4)], sm=7)
    l2.reset_counters()
    return l2


def test_another_sms_read_of_queued_sectors_takes_its_time_and_no_lookup():
    l2 = _backlogged()
    first = l2.read(10_000.0, [LINE * 4, LINE * 4 + 1], sm=0)       # waits behind the 400 lines
    second = l2.read(10_001.0, [LINE * 4, LINE * 4 + 1], sm=1)
    c = l2.counters()
    assert (second, c["lts__t_sectors_op_read.sum"], c["gpusim__l2_queued_read_sectors.sum"]) == (first, 2.0, 2.0)


def test_the_same_sms_second_read_is_looked_up_again():
    l2 = _backlogged()
    first = l2.read(10_000.0, [LINE * 4, LINE * 4 + 1], sm=0)
    second = l2.read(10_001.0, [LINE * 4, LINE * 4 + 1], sm=0)      # a cp.async reading a sector twice
    assert second > first and l2.counters()["lts__t_sectors_op_read.sum"] == 4.0


def test_a_read_of_more_sectors_than_the_queued_one_is_looked_up():
    l2 = _backlogged()
    l2.read(10_000.0, [LINE * 4], sm=0)
    l2.read(10_001.0, [LINE * 4, LINE * 4 + 1], sm=1)
    assert l2.counters()["gpusim__l2_queued_read_sectors.sum"] == 0.0


def test_a_read_after_the_queued_one_started_is_looked_up():
    l2 = _backlogged()
    first = l2.read(10_000.0, [LINE * 4, LINE * 4 + 1], sm=0)
    l2.read(first, [LINE * 4, LINE * 4 + 1], sm=1)                  # arrives when the first is done: nothing waits
    assert l2.counters()["lts__t_sectors_op_read.sum"] == 4.0


def test_joining_is_off_when_the_spec_says_so():
    l2 = _backlogged(SPEC)
    l2.read(10_000.0, [LINE * 4, LINE * 4 + 1], sm=0)
    l2.read(10_001.0, [LINE * 4, LINE * 4 + 1], sm=1)
    assert l2.counters()["lts__t_sectors_op_read.sum"] == 4.0
