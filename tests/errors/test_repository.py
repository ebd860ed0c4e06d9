"""Nothing stray in the repository: no wheels, build outputs or caches among the tracked files."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STRAY = re.compile(r"(\.whl|\.egg|\.pyc|\.pyo|\.so|\.o|\.tar\.gz|\.tgz|\.zip|\.cubin|\.tmp)$|(^|/)(__pycache__|"
                   r"\.pytest_cache|build|dist|[^/]+\.egg-info)/")


def tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def test_no_build_artifacts_are_tracked():
    files = tracked()
    assert len(files) > 100
    assert [f for f in files if STRAY.search(f)] == []


def test_gitignore_keeps_wheels_out():
    assert "*.whl" in (ROOT / ".gitignore").read_text().split()
