"""docs/examples/cupy_rawkernels.py is a CuPy program whose one changed line is its import,
and it runs under gpusim with its numpy equality checks passing."""
import ast
import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "cupy_rawkernels.py"


def test_the_example_differs_from_a_cupy_program_only_in_its_import():
    text = EXAMPLE.read_text()
    tree = ast.parse(text)
    body = tree.body[1:] if isinstance(tree.body[0], ast.Expr) else tree.body      # past the docstring
    code_lines = text.splitlines()[body[0].lineno - 1:]
    assert [ln for ln in code_lines if "gpusim" in ln] == ["import gpusim.cupy as cp  # was: import cupy as cp"]


@pytest.mark.slow
def test_the_example_runs_and_equals_numpy(capsys):
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all("equal to numpy" in ln for ln in out)
