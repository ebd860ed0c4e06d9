"""Every notebook's code cells run against the current API (matplotlib off-screen)."""
import json
from pathlib import Path

import matplotlib
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_code_runs(path):
    matplotlib.use("Agg")
    nb = json.loads(path.read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    exec(compile(code, str(path), "exec"), {})


def test_there_is_at_least_one_notebook():
    assert NOTEBOOKS
