"""Telling a skip for a missing dependency from any other skip (tests/conftest.py, and the
numba-cuda shard, whose tests skip inside a subprocess)."""
from __future__ import annotations

import os
import re

# pytest.importorskip ("could not import"), ImportError texts, this suite's own reasons ("... not
# installed"), and numba's unittest decorators ("requires cffi", "requires SciPy").
MISSING = re.compile(r"could not import|no module named|not installed|^requires? [\w.-]+$|missing dependency",
                     re.IGNORECASE)
# A dependency that pyproject.toml installs only with an optional extra (`.[triton]`, about 900 MB):
# a test that skips for its absence says "optional extra" and is not a failure under
# GPUSIM_REQUIRE_INSTALLED, since CI installs the `test` extra, not every optional one.
OPTIONAL = re.compile(r"optional extra", re.IGNORECASE)


def require_installed() -> bool:
    """Whether a skip for a missing dependency is a failure (`.ci/run` sets GPUSIM_REQUIRE_INSTALLED=1)."""
    return os.environ.get("GPUSIM_REQUIRE_INSTALLED", "") not in ("", "0")


def is_missing_dependency(reason: str) -> bool:
    return bool(MISSING.search(reason.strip())) and not OPTIONAL.search(reason)


def skip_reason(report) -> str:
    """The reason of a skipped pytest report ("Skipped: " stripped), or ""."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr or "")
