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
