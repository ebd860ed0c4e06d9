"""The lesson notebooks: each runs top to bottom in a fresh `python3` Jupyter kernel (nbclient,
matplotlib off-screen), and none is committed with outputs or execution counts.

Each notebook asserts its own lesson's claims (a padded tile has no bank conflicts, a ring
all-reduce sends 2(n-1)/n of the data, ...), so a cell error here means either the API changed
or the simulator no longer shows what the lesson teaches.
"""
from pathlib import Path

import nbclient
import nbformat
import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT_S = 120          # a lesson runs in well under a minute on a 2-core machine


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom(path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")          # the kernel inherits it: figures render off-screen
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT_S, allow_errors=False,
                                     resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()                                 # CellExecutionError names the cell and its traceback


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{path.name}: code cells {dirty} have outputs or execution counts; clear them before committing"


def test_there_are_lessons():
    assert len(NOTEBOOKS) >= 7, [p.name for p in NOTEBOOKS]
