"""Suite-wide rules.

`GPUSIM_REQUIRE_INSTALLED=1` (set by `.ci/run`): a test that skips because something it needs
is missing (a Python module, ptxas/nvdisasm, NVRTC and its headers, g++, Debian's chromium)
fails instead, naming what was missing. CI builds a fresh virtual environment from
`pyproject.toml` alone, so such a skip means the project's own files do not install everything
the suite uses. Skips for other reasons (a CUDA driver present, not a git checkout) stay skips.
Tests that skip for a missing dependency say so with one of the phrases of
`dependency_skips.MISSING`.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
from pathlib import Path

import pytest

from dependency_skips import is_missing_dependency, require_installed, skip_reason


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and require_installed()):
        return
    if hasattr(report, "wasxfail"):
        return
    reason = skip_reason(report)
    if is_missing_dependency(reason):
        report.outcome = "failed"
        report.longrepr = (f"GPUSIM_REQUIRE_INSTALLED is set and this test skipped for a missing dependency: "
                           f"{reason}. Name it in pyproject.toml (or .ci/run for a system package).")


# ----------------------------------------------------------------------------- tiers
# The fast tier is `python -m pytest -m "not slow"` (under 2 minutes on 2 cores). A test is in the
# slow tier when it sits in one of SLOW_PATHS (kinds of test that are slow by nature), carries
# @pytest.mark.slow, took SLOW_S or more in the committed full run `tests/durations.json`, or sits in
# a file where some test's setup took SLOW_SETUP_S or more (a module fixture the whole file shares:
# leaving its first test out would only move the cost to the next). Refresh the file with
# `python -m pytest -q --record-durations tests/durations.json`; a test it does not list yet counts
# as fast until then.
DURATIONS = Path(__file__).resolve().parent / "durations.json"
SLOW_S = 0.5
SLOW_SETUP_S = 1.0
SLOW_PATHS = (
    "tests/validate/",                          # model against committed measurements: whole suites predicted
    "tests/notebooks/",                         # notebooks executed
    "tests/numba_cuda/test_numba_cuda_shard.py",  # numba-cuda's own tests in subprocesses
    "tests/differential/",                      # the Hypothesis kernel grammar
    "tests/report/test_html_report.py",         # a real headless browser
)
RECORD_MIN_S = 0.1                               # shorter tests are not written to the file


def pytest_addoption(parser):
    parser.addoption("--record-durations", metavar="PATH", default=None,
                     help="write each test's setup+call+teardown seconds (those >= 0.1 s) to PATH as JSON")


def recorded_durations() -> tuple[dict[str, float], dict[str, float]]:
    """(seconds of each test, seconds of each test's setup) from tests/durations.json."""
    try:
        doc = json.loads(DURATIONS.read_text())
    except FileNotFoundError:
        return {}, {}
    return doc["seconds"], doc.get("setup_seconds", {})


def slow_files(setup_seconds: dict[str, float]) -> set[str]:
    return {nodeid.split("::", 1)[0] for nodeid, s in setup_seconds.items() if s >= SLOW_SETUP_S}


def pytest_collection_modifyitems(config, items):
    seconds, setup = recorded_durations()
    files = slow_files(setup)
    for item in items:
        nodeid = item.nodeid
        if (nodeid.startswith(SLOW_PATHS) or seconds.get(nodeid, 0.0) >= SLOW_S
                or nodeid.split("::", 1)[0] in files):
            item.add_marker(pytest.mark.slow)
    longest_files_first(items, seconds)


def longest_files_first(items: list, seconds: dict[str, float]) -> None:
    """Order `items` file by file, the files of the most recorded seconds first (each file's tests in
    their order; files the record does not list last, in collection order). pytest-xdist's
    `--dist loadfile` hands whole files to the workers in this order, so the longest files start
    first and the short ones fill in after, where in path order the longest (tests/validate/) came
    last and one worker ran them alone while the other waited (CI at 9364f84: its last 3% of tests
    took about 9 of its 33 minutes)."""
    total: dict[str, float] = {}
    for item in items:
        f = item.nodeid.split("::", 1)[0]
        total[f] = total.get(f, 0.0) + seconds.get(item.nodeid, 0.0)
    rank = {f: k for k, f in enumerate(sorted(total, key=lambda f: -total[f]))}   # (stable: ties keep their order)
    items.sort(key=lambda item: rank[item.nodeid.split("::", 1)[0]])


_spent: dict[str, float] = {}
_setup: dict[str, float] = {}


def pytest_runtest_logreport(report):
    _spent[report.nodeid] = _spent.get(report.nodeid, 0.0) + report.duration
    if report.when == "setup":
        _setup[report.nodeid] = report.duration


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("--record-durations")
    if not path or not _spent or hasattr(session.config, "workerinput"):   # xdist: the controller writes it
        return
    seconds = {k: round(v, 3) for k, v in sorted(_spent.items()) if v >= RECORD_MIN_S}
    doc = {"command": "python -m pytest -q --record-durations " + path,
           "recorded": datetime.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
           "python": platform.python_version(), "total_s": round(sum(_spent.values()), 1),
           "slow_threshold_s": SLOW_S, "slow_setup_threshold_s": SLOW_SETUP_S, "seconds": seconds,
           "setup_seconds": {k: round(v, 3) for k, v in sorted(_setup.items()) if v >= RECORD_MIN_S}}
    Path(path).write_text(json.dumps(doc, indent=0) + "\n")
