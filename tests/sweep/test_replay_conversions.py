"""A replay hands the engine the SASS visits an earlier run of the same process converted
(with loop sampling: for the same budget and loop choice), with the converter's counters
advanced as converting did: the point converts nothing and its metrics equal an independent
launch's."""
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
    monkeypatch.setattr(issue_stream.IssueStreams, "convert", lambda self, *a: (calls.append(1), real(self, *a))[1])
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


def test_loop_sampled_replay_converts_nothing_and_equals_an_independent_launch(monkeypatch):
    """With loop sampling on (its budget per warp depends on the blocks timed and the options), a
    second replay of the same budget takes the first's conversions, counters and loop choice."""
    from gpusim.timing.engine import TimingOptions
    size = {"m": 64, "n": 64, "k": 256}                   # 16 blocks, 16 iterations of the k loop
    sampled = TimingOptions(instruction_budget=20_000)
    cache = StreamCache(disk=False)
    calls = []
    real = issue_stream.IssueStreams.convert
    monkeypatch.setattr(issue_stream.IssueStreams, "convert", lambda self, *a: (calls.append(1), real(self, *a))[1])
    runs = []
    for sets, opts in (([], None), (["l2.hit_latency_cycles=400"], sampled), (["hbm.bandwidth_GBps=1500"], sampled)):
        c = programs.get("matmul_tiled").case(size)
        calls.clear()
        r, how = timed_launch(c.kernel, c.grid, c.block, c.args, resolve("h100", sets), c.shared_bytes, opts,
                              cache=cache)
        runs.append((how, len(calls), r.metrics))
    assert runs[1][2]["timing__loop_sampled_fraction"] < 1.0                # iterations were left out
    assert [(how, n > 0) for how, n, _ in runs] == [("recorded", True), ("replayed", True), ("replayed", False)]
    c = programs.get("matmul_tiled").case(size)
    want = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu=resolve("h100", ["hbm.bandwidth_GBps=1500"]),
                         timing=True, shared_bytes=c.shared_bytes, timing_options=sampled).metrics
    assert sorted(k for k in want if repr(want[k]) != repr(runs[2][2].get(k))) == []
