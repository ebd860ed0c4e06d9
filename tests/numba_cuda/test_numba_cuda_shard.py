"""numba-cuda's cudapy tests on the drop-in, CI shard: the modules of `ci_shard.toml` run through
the harness (subprocess per module) and their pass rate stays at or above the committed floor,
with no crash inside gpusim and no test skipped for a missing module (pyproject's test extras
install them all: cffi for test_cffi). The full suite is `python benchmarks/numba_cuda_suite.py`."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import harness
from dependency_skips import is_missing_dependency

HERE = Path(__file__).resolve().parent
SHARD = tomllib.loads((HERE / "ci_shard.toml").read_text())


def test_not_applicable_entries_name_existing_tests_with_a_reason():
    na = harness.load_not_applicable()
    modules = set(harness.all_modules())
    unknown = [k for k in na if k.split(".")[0] not in modules]
    assert not unknown, f"not_applicable.toml names modules numba-cuda does not ship: {unknown}"
    assert all(len(r) >= 20 for r in na.values())


@pytest.mark.timeout(600)
def test_shard_pass_rate_holds_the_floor():
    suite = harness.run_suite(SHARD["modules"], jobs=2, module_timeout_s=240, test_timeout_s=60)
    total = suite["total"]
    failed = "\n".join(harness.failures(suite))
    assert total["crashes"] == 0, f"crashes inside gpusim:\n{failed}"
    missing = [s for s in harness.skips(suite) if is_missing_dependency(s.partition(": ")[2])]
    assert not missing, "numba-cuda tests skipped for a module the test extras do not install:\n" + "\n".join(missing)
    assert total["passed"] + total["failed"] >= SHARD["min_applicable"], harness.table(suite)
    assert total["pass_rate"] >= SHARD["floor"], \
        f"pass rate {total['pass_rate']:.3f} below the floor {SHARD['floor']}; failures:\n{failed}"
