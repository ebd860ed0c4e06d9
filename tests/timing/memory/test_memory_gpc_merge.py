"""Reads merged within a GPC (gpusim/timing/memory/gpc_merge.py): another SM of the same GPC reading
sectors its GPC read a little earlier is served by that lookup; one property each (test spec:
_memory_spec with two GPCs of 66 SMs, a 5,000-cycle window and four reads a lookup; the spec's
default has merging off)."""
from _memory_spec import SPEC, replace
from gpusim.timing.memory.l2 import L2Cache

LINE = 1000
SECTORS = [LINE * 4, LINE * 4 + 1]
MERGING = replace(noc={"gpcs": 2, "gpc_merge_window_cycles": 5000.0, "gpc_merge_requests": 4})


def _first(spec=MERGING):
    """An L2 that SM 0 (GPC 0) read SECTORS from at t = 0 (a miss), with its counters reset."""
    l2 = L2Cache(spec)
    ready = l2.read(0.0, SECTORS, sm=0)
    l2.reset_counters()
    return l2, ready


def test_another_sm_of_the_gpc_takes_the_earlier_reads_data_and_no_lookup():
    l2, ready = _first()
    second = l2.read(100.0, SECTORS, sm=1)
    c = l2.counters()
    assert (second, c["lts__t_sectors_op_read.sum"], c["gpusim__gpc_merged_read_sectors.sum"]) == (ready, 0.0, 2.0)


def test_a_merged_read_after_the_data_came_is_back_a_pipeline_later():
    l2, ready = _first()
    t = ready + 1000.0
    assert l2.read(t, SECTORS, sm=1) == t + l2.pipeline_latency_cycles


def test_an_sm_of_another_gpc_is_looked_up():
    l2, _ = _first()
    l2.read(100.0, SECTORS, sm=66)
    assert l2.counters()["lts__t_sectors_op_read.sum"] == 2.0


def test_the_same_sms_second_read_is_looked_up():
    l2, _ = _first()
    l2.read(100.0, SECTORS, sm=0)
    assert l2.counters()["lts__t_sectors_op_read.sum"] == 2.0


def test_a_read_past_the_window_is_looked_up():
    l2, ready = _first()
    l2.read(ready + 5001.0, SECTORS, sm=1)
    assert l2.counters()["lts__t_sectors_op_read.sum"] == 2.0


def test_one_lookup_serves_four_reads_and_the_fifth_is_looked_up():
    l2, _ = _first()
    for sm in (1, 2, 3):
        l2.read(100.0, SECTORS, sm=sm)
    assert l2.counters()["lts__t_sectors_op_read.sum"] == 0.0
    l2.read(100.0, SECTORS, sm=4)
    assert l2.counters()["lts__t_sectors_op_read.sum"] == 2.0


def test_fewer_reads_a_lookup_look_more_up():
    l2, _ = _first(replace(noc={"gpcs": 2, "gpc_merge_window_cycles": 5000.0, "gpc_merge_requests": 2}))
    for sm in (1, 2, 3):
        l2.read(100.0, SECTORS, sm=sm)
    assert l2.counters()["lts__t_sectors_op_read.sum"] == 2.0          # SM 1 merged; SM 2 looked up; SM 3 merged


def test_a_read_of_a_sector_its_gpc_did_not_read_is_looked_up():
    l2, _ = _first()
    l2.read(100.0, SECTORS + [LINE * 4 + 2], sm=1)
    assert l2.counters()["lts__t_sectors_op_read.sum"] == 3.0


def test_writes_never_merge():
    l2, _ = _first()
    l2.write(100.0, SECTORS)
    assert l2.counters()["lts__t_sectors_op_write.sum"] == 2.0


def test_merging_is_off_when_the_window_is_zero():
    l2, _ = _first(SPEC)
    l2.read(100.0, SECTORS, sm=1)
    assert l2.counters()["lts__t_sectors_op_read.sum"] == 2.0
