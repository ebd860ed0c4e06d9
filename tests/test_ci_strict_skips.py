"""With GPUSIM_REQUIRE_INSTALLED=1 (as `.ci/run` sets it), a test that skips for a missing module
fails; a skip for any other reason stays a skip; without the variable both are skips."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.slow              # two inner pytest runs, about 3 s each

INNER = '''
import pytest
def test_needs_a_module_that_is_not_there():
    pytest.importorskip("gpusim_no_such_module")
def test_numba_style_decorator_reason():
    pytest.skip("requires cffi")
def test_skips_for_another_reason():
    pytest.skip("a CUDA driver answers Numba's device queries on this machine")
'''


def run_inner(tmp_path: Path, strict: bool) -> str:
    for name in ("conftest.py", "dependency_skips.py"):
        shutil.copy(HERE / name, tmp_path / name)
    (tmp_path / "test_inner.py").write_text(INNER)
    env = {k: v for k, v in os.environ.items() if k != "GPUSIM_REQUIRE_INSTALLED"}
    if strict:
        env["GPUSIM_REQUIRE_INSTALLED"] = "1"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return proc.stdout.strip().splitlines()[-1]


def test_strict_mode_fails_the_two_missing_dependency_skips_and_keeps_the_other(tmp_path):
    assert run_inner(tmp_path, strict=True).startswith("2 failed, 1 skipped")


def test_without_strict_mode_all_three_skip(tmp_path):
    assert run_inner(tmp_path, strict=False).startswith("3 skipped")
