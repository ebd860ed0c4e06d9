"""The committed hardware measurements (data/measurements/<gpu>.json, written on the GPU machine by
`python -m validate measure`) are complete and current: provenance says what was measured and
how to reproduce it; every program of programs/ was run at >= 2 sizes (default included) with
its outputs equal to the numpy reference; every microbenchmark is there; every metric is a
finite number; and each record's parameters are still the program's sizes. No GPU needed."""
import json
import math
import re

import pytest

import programs
from validate.heldout import HELDOUT
from validate.microbench import MICROBENCHMARKS
from validate.datadir import DATA_DIR

DATA = DATA_DIR
FILES = sorted(p for p in DATA.glob("*.json") if re.fullmatch(r"[a-z]+\d+[a-z]*\.json", p.name))   # h200.json, h100.json
PROVENANCE = ("gpu_name", "driver", "cuda_version", "numba", "numba_cuda", "numpy", "python",
              "sm_clock_policy", "sm_clock_mhz_observed", "date", "command", "host")
RECORD = ("name", "size", "params", "kernel", "grid", "block", "shared_bytes", "check", "metrics", "event_time_us")


def load(path):
    return json.loads(path.read_text())


def test_a_measured_data_file_is_committed():
    assert FILES, f"no measured data in {DATA} (run `python -m validate measure` on a GPU machine)"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_provenance_is_complete(path):
    prov = load(path)["provenance"]
    missing = [k for k in PROVENANCE if prov.get(k) in (None, "", [])]
    assert not missing, f"{path.name}: provenance lacks {missing}"
    assert prov["command"].startswith("python -m validate measure")
    assert "--clock-control none" in prov["sm_clock_policy"]
    assert 500 < prov["sm_clock_mhz_observed"] < 2500


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_record_has_the_schema_fields(path):
    for rec in load(path)["kernels"]:
        missing = [k for k in RECORD if k not in rec]
        assert not missing, f"{path.name}: {rec.get('name')} lacks {missing}"
        assert sum(k in rec for k in ("program", "microbenchmark", "heldout")) == 1, rec["name"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_program_passed_at_two_sizes_or_more(path):
    passed: dict[str, set] = {}
    for rec in load(path)["kernels"]:
        if "program" in rec and rec["check"] == "passed" and rec.get("check_ncu", "passed") == "passed":
            passed.setdefault(rec["program"], set()).add(rec["size"])
    short = {p: sorted(passed.get(p, ())) for p in programs.PROGRAMS
             if len(passed.get(p, ())) < 2 or "default" not in passed.get(p, ())}
    assert not short, f"{path.name}: programs without 2 passing sizes (default among them): {short}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_microbenchmark_is_measured(path):
    seen: dict[str, set] = {}
    for rec in load(path)["kernels"]:
        if "microbenchmark" in rec and rec["check"] == "passed":
            seen.setdefault(rec["microbenchmark"], set()).add(rec["size"])
    missing = {m: sorted(set(spec.sizes) - seen.get(m, set())) for m, spec in MICROBENCHMARKS.items()
               if set(spec.sizes) - seen.get(m, set())}
    assert not missing, f"{path.name}: microbenchmark sizes not measured or not passing: {missing}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_metrics_are_finite_numbers_with_a_duration(path):
    for rec in load(path)["kernels"]:
        m = rec["metrics"]
        assert m.get("gpu__time_duration.sum", 0) > 0, f"{rec['name']}: no gpu__time_duration.sum"
        bad = {k: v for k, v in m.items() if not isinstance(v, (int, float)) or not math.isfinite(v)}
        assert not bad, f"{rec['name']}: non-finite metrics {bad}"
        assert rec["event_time_us"] is None or math.isfinite(rec["event_time_us"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_recorded_params_are_the_current_sizes(path):
    """A program or microbenchmark whose sizes changed since the measurement makes the data stale."""
    stale = []
    for rec in load(path)["kernels"]:
        spec = (programs.PROGRAMS.get(rec["program"]) if "program" in rec else HELDOUT.get(rec["heldout"])
                if "heldout" in rec else MICROBENCHMARKS.get(rec["microbenchmark"]))
        if spec is None or spec.sizes.get(rec["size"]) != rec["params"]:
            stale.append(rec["name"])
    assert not stale, f"{path.name}: records whose params differ from the current sizes: {stale}"
