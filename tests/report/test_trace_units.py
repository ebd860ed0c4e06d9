"""The Chrome trace in whole SM cycles: what Perfetto's JSON importer makes of it
(`ts`/`dur` read as microseconds and converted to integer nanoseconds: an integer times
1000, a float rounded, in older versions truncated) keeps every slice of a warp apart.
Perfetto's trace processor cannot run here (its binary is downloaded on first use), so
this test applies its conversion to the file (src/trace_processor/importers/json)."""
from __future__ import annotations

import json
import math

import pytest

import gpusim
import programs
from gpusim.report.trace import write_chrome_trace
from gpusim.timing.engine import TimingOptions
from gpusim.timing.record import TraceWindow


def perfetto_ns(v, truncate: bool = False) -> int:
    """Perfetto's CoerceToTs for a JSON number (microseconds -> integer ns)."""
    if isinstance(v, int):
        return v * 1000
    return int(v * 1000) if truncate else int(math.floor(v * 1000 + 0.5))


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    c = programs.get("reduce_sequential").case("default")
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, timing=True, shared_bytes=c.shared_bytes,
                      timing_options=TimingOptions(record=TraceWindow()))        # the CLI's --trace default
    path = write_chrome_trace(r, tmp_path_factory.mktemp("t") / "trace.json")
    return json.loads(path.read_text())


@pytest.mark.parametrize("truncate", [False, True])
def test_no_two_slices_of_a_warp_overlap_after_perfettos_rounding(doc, truncate):
    spans: dict = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            a = perfetto_ns(e["ts"], truncate)
            spans.setdefault((e["pid"], e["tid"]), []).append((a, a + perfetto_ns(e["dur"], truncate)))
    assert sum(len(v) for v in spans.values()) > 10_000
    for s in spans.values():
        s.sort()
        assert all(b0 <= a1 for (_, b0), (a1, _) in zip(s, s[1:]))
        assert all(b > a for a, b in s)                       # no slice rounds to nothing


def test_times_are_whole_cycles_and_the_unit_is_stated(doc):
    timed = [e for e in doc["traceEvents"] if "ts" in e]
    assert all(isinstance(e["ts"], int) for e in timed)
    assert all(isinstance(e["dur"], int) and e["dur"] >= 1 for e in timed if e["ph"] == "X")
    od = doc["otherData"]
    assert od["time_unit"] == "cycle" and "1 us on the time axis is 1 SM cycle" in od["time_axis"]
    assert "displayTimeUnit" not in doc                       # some Perfetto versions read "ns" as the ts unit
    issue = next(e for e in doc["traceEvents"] if e.get("cat") == "issue")
    assert issue["dur"] == 1


def test_window_cycles_are_the_trace_times(doc):
    od = doc["otherData"]
    issues = [e["ts"] for e in doc["traceEvents"] if e.get("cat") == "issue"]
    assert od["start_cycle"] <= min(issues) and max(issues) < od["end_cycle"]
