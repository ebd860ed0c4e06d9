"""The timing-model recorder (gpusim.timing.record), the warp timeline built from it and
its Chrome trace: recording changes no result, its events add up to the counters, the
stalls it shows are the ones the kernel is known for, and the trace is valid and bounded."""
import json

import numpy as np
import pytest

import gpusim
import programs
from gpusim.report.trace import chrome_trace, write_chrome_trace
from gpusim.timing.engine import TimingOptions
from gpusim.timing.record import TraceWindow
from gpusim.viz import warp_timeline as wt

ALL_CYCLES = 10**9


def launch(name, window=None, size="default", **opts):
    c = programs.get(name).case(size)
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, timing=True, shared_bytes=c.shared_bytes,
                      timing_options=TimingOptions(record=window, **opts))
    return c, r


@pytest.fixture(scope="module")
def vector_add_all_sms():
    """vector_add's 64 blocks on 64 of the H100's SMs, every SM and cycle recorded."""
    return launch("vector_add", TraceWindow(sms=tuple(range(132)), end_cycle=ALL_CYCLES))[1]


@pytest.fixture(scope="module")
def reduce_sm0():
    return launch("reduce_sequential", TraceWindow(end_cycle=ALL_CYCLES), size="tiny")[1]


def test_recording_leaves_every_metric_and_output_identical():
    c0, off = launch("reduce_sequential", size="tiny")
    c1, on = launch("reduce_sequential", TraceWindow(end_cycle=ALL_CYCLES), size="tiny")
    assert "recording" not in off.extra and on.extra["recording"].events > 1000
    assert on.metrics == off.metrics
    for a, b in zip(c0.args, c1.args):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b, equal_nan=True)


def test_issue_events_of_a_fully_recorded_launch_equal_smsp_inst_executed(vector_add_all_sms):
    r = vector_add_all_sms
    rec = r.extra["recording"]
    assert r.metrics["timing__mode"] == "full" and r.metrics["timing__loop_sampled_fraction"] == 1.0
    assert len(rec.issues) == r.metrics["smsp__inst_executed.sum"] == sum(rec.sm_issued.values())
    assert not rec.truncated


def test_recorded_stall_cycles_per_reason_equal_the_stall_counters(vector_add_all_sms):
    r = vector_add_all_sms
    rec = r.extra["recording"]
    total: dict = {}
    for e in rec.stalls:
        total[e[5]] = total.get(e[5], 0.0) + (e[4] - e[3])
    total["selected"] = len(rec.issues)
    for reason, cycles in total.items():
        assert cycles == pytest.approx(r.metrics[f"smsp__pcsamp_warps_issue_stalled_{reason}"], rel=1e-9), reason


def test_a_streaming_kernel_waits_on_memory_as_long_scoreboard_served_by_hbm(vector_add_all_sms):
    r = vector_add_all_sms
    rec = r.extra["recording"]
    t = wt.warp_timeline(r, sm=0)
    stalls = {s: v for s, v in t.totals.items() if s != "selected"}
    assert stalls["long_scoreboard"] > 0.25 * sum(stalls.values())
    # the long-scoreboard waits sit on the instructions that consume the loads' results (the FADD)
    waiting = {rec.opcodes[e[6]] for e in rec.stalls if e[0] == 0 and e[5] == "long_scoreboard"}
    assert any(op.startswith("FADD") for op in waiting)
    loads = [m for m in rec.memory if m[3] == "load"]
    spec = gpusim.api.resolve_gpu("h100")
    assert loads and {m[6] for m in loads} <= {"l2", "hbm"}             # first touch: nothing in the L1
    assert min(m[5] - m[4] for m in loads if m[6] == "hbm") >= spec.l2.hit_latency_cycles
    assert sum(rec.hbm_bytes) == r.metrics["dram__bytes_read.sum"] + r.metrics["dram__bytes_write.sum"]


def test_a_barrier_kernel_shows_barrier_waits_one_per_bar_issued(reduce_sm0):
    rec = reduce_sm0.extra["recording"]
    t = wt.warp_timeline(reduce_sm0)
    bars = sum(1 for e in rec.issues if rec.opcodes[e[4]].startswith("BAR"))
    assert bars > 0 and len(rec.barriers) == bars == len(t.barriers)
    assert t.totals["barrier"] > 0.1 * sum(v for s, v in t.totals.items() if s != "selected")
    assert all(release >= arrive for _, arrive, release in t.barriers)
    assert {m[3] for m in rec.memory} >= {"shared", "load"}


def test_timeline_rows_are_warp_slots_grouped_by_sub_partition(reduce_sm0):
    t = wt.warp_timeline(reduce_sm0)
    assert len(t.rows) == 8 and [sp for sp, _ in t.rows] == sorted(sp for sp, _ in t.rows)     # 256 threads: 8 warps
    assert t.totals["selected"] == reduce_sm0.extra["recording"].sm_issued[0]
    fig = wt.plot(t)
    assert fig.axes[0].get_ylim()[0] == pytest.approx(7.5)


def test_a_window_clips_every_event_to_it():
    _, r = launch("reduce_sequential", TraceWindow(start_cycle=1800, end_cycle=2300), size="tiny")
    rec = r.extra["recording"]
    assert rec.issues and all(1800 <= e[3] < 2300 for e in rec.issues)
    assert rec.stalls and all(1800 <= e[3] < e[4] <= 2300 for e in rec.stalls)
    assert len(rec.counter_cycles) == 2 and rec.counter_cycles[0] == 1800      # 256-cycle counter bins


def check_chrome_trace(doc) -> int:
    """The trace-event rules Perfetto and chrome://tracing rely on; returns the event count."""
    events = doc["traceEvents"]
    need = {"X": {"name", "ph", "ts", "dur", "pid", "tid"}, "C": {"name", "ph", "ts", "pid", "args"},
            "M": {"name", "ph", "pid", "args"}, "i": {"name", "ph", "ts", "pid", "tid", "s"},
            "b": {"name", "ph", "ts", "pid", "id", "cat"}, "e": {"name", "ph", "ts", "pid", "id", "cat"}}
    last: dict = {}
    opened: dict = {}
    for e in events:
        assert need[e["ph"]] <= set(e), e
        if e["ph"] == "M":
            continue
        key = (e["pid"], e["tid"])
        assert e["ts"] >= last.get(key, -1.0), e                       # monotone per thread
        last[key] = e["ts"]
        if e["ph"] == "X":
            assert e["dur"] > 0
        if e["ph"] == "b":
            opened[(e["cat"], e["id"])] = e["ts"]
        if e["ph"] == "e":
            assert e["ts"] > opened.pop((e["cat"], e["id"]))
        if e["ph"] == "C":
            assert all(isinstance(v, float) and v >= 0 for v in e["args"].values())
    assert not opened
    by_thread: dict = {}                                                 # slices of a warp never overlap
    for e in events:
        if e["ph"] == "X":
            by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        for (a0, b0), (a1, _) in zip(spans, spans[1:]):
            assert a1 >= b0 - 1e-9
    return len(events)


def test_chrome_trace_is_valid_json_with_named_processes_and_threads(tmp_path, reduce_sm0):
    path = write_chrome_trace(reduce_sm0, tmp_path / "t.json")
    doc = json.loads(path.read_text())
    check_chrome_trace(doc)
    names = {(e["name"], e["args"]["name"]) for e in doc["traceEvents"] if e["ph"] == "M" and "name" in e["args"]}
    assert ("process_name", "SM 0") in names and ("thread_name", "SMSP3 warp 1") in names
    phases = {e["ph"] for e in doc["traceEvents"]}
    assert phases == {"M", "X", "i", "b", "e", "C"}
    issues = [e for e in doc["traceEvents"] if e.get("cat") == "issue"]
    assert len(issues) == reduce_sm0.extra["recording"].sm_issued[0]
    assert all(e["dur"] == 1 for e in issues)                          # one cycle each (the trace's unit)


def test_a_big_launch_gives_a_trace_bounded_by_the_event_cap():
    c = programs.get("vector_add").case({"n": 1 << 22})                 # 16,384 blocks, sampled
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, timing=True,
                      timing_options=TimingOptions(functional="sampled", record=TraceWindow(max_events=3000)))
    rec = r.extra["recording"]
    assert rec.events == 3000 and rec.truncated
    doc = chrome_trace(rec)
    n = check_chrome_trace(doc)
    assert n <= 2 * 3000 + 2 * len(rec.counter_cycles) + 2 * len(rec.barriers) + 2 * 64 + 10


def test_cli_run_trace_writes_a_trace_of_the_chosen_window(tmp_path):
    from gpusim.cli import main
    out = tmp_path / "va.json"
    assert main(["run", "vector_add", "--trace", str(out), "--trace-cycles", "100:900", "--trace-sm", "1"]) == 0
    doc = json.loads(out.read_text())
    check_chrome_trace(doc)
    od = doc["otherData"]
    assert (od["sms"], od["start_cycle"], od["end_cycle"]) == ([1], 100, 900)
    assert all(100 <= e["ts"] < 900 for e in doc["traceEvents"] if e.get("cat") == "issue")
