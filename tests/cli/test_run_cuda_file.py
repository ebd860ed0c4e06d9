"""`gpusim run file.cu`: the PROGRAM in the .py beside it, the .cu lines in the source view."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_run_cu_file_shows_its_lines_and_the_bank_conflicts():
    p = subprocess.run([sys.executable, "-m", "gpusim.cli", "run", "docs/examples/transpose_cuda.cu"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    line14 = next(ln for ln in p.stdout.splitlines() if ln.lstrip().startswith("14 "))
    assert "out[y * n + x] = tile[threadIdx.x][threadIdx.y];" in line14
    assert "63,488!" in line14                           # 64 blocks x 32 warps x 31 extra wavefronts


@pytest.mark.slow
def test_a_cu_file_without_its_python_program_is_a_usage_error(tmp_path):
    cu = tmp_path / "lonely.cu"
    cu.write_text('extern "C" __global__ void k() {}\n')
    p = subprocess.run([sys.executable, "-m", "gpusim.cli", "run", str(cu)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2
    assert "lonely.py beside it" in p.stderr
