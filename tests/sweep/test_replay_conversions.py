"""A replay hands the engine the SASS visits an earlier run of the same process converted
(loop sampling off), with the converter's counters advanced as converting did: the point
converts nothing and its metrics equal an independent launch's."""
import gpusim
import programs
from gpusim.specs import resolve
from gpusim.sweep.replay import timed_launch
from gpusim.sweep.streams import StreamCache
from gpusim.timing import issue_stream


def test_second_replay_converts_nothing_and_equals_an_independent_launch(monkeypatch):
    cache = StreamCache(disk=False)
    calls = []
    real = issue_stream.IssueStreams.convert
    monkeypatch.setattr(issue_stream.IssueStreams, "convert", lambda self, v: (calls.append(1), real(self, v))[1])
    got = {}
    for sets in ([], ["l2.hit_latency_cycles=400"], ["hbm.bandwidth_GBps=1500"]):
        c = programs.get("reduce_sequential").case("tiny")
        calls.clear()
        r, how = timed_launch(c.kernel, c.grid, c.block, c.args, resolve("h100", sets), c.shared_bytes, cache=cache)
        got[how] = got.get(how, []) + [(len(calls), r)]
    assert got["recorded"][0][0] > 0                       # the recording converted its blocks ...
    assert [n for n, _ in got["replayed"]] == [0, 0]       # ... which both replays took as they were
    c = programs.get("reduce_sequential").case("tiny")
    want = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu=resolve("h100", ["hbm.bandwidth_GBps=1500"]),
                         timing=True, shared_bytes=c.shared_bytes).metrics
    last = got["replayed"][-1][1].metrics
    assert sorted(k for k in want if repr(want[k]) != repr(last.get(k))) == []
