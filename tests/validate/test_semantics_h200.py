"""Integer, bit, compare, carry-chain and atomic semantics reproduce an NVIDIA H200 bit for bit:
each PTX instruction form of data/measurements/semantics_h200.npz (inline asm on the H200, see
validate/semantics/measure.py and the JSON sidecar for provenance), run through `isa`'s semantics
on the recorded inputs, gives exactly the recorded outputs. No GPU needed."""
import json

import numpy as np
import pytest

from validate.semantics.compare import compare_form, forms
from validate.datadir import DATA_DIR

DATA = DATA_DIR / "semantics_h200.npz"
H200 = np.load(DATA)
FORMS = forms(H200)


def test_data_holds_the_289_forms_its_sidecar_counts():
    meta = json.loads(DATA.with_suffix(".json").read_text())
    assert meta["gpu"] == "NVIDIA H200"
    assert len(FORMS) == meta["forms"] == 289
    assert sum(H200["out:" + f].size for f in FORMS) == meta["inputs_kept"]


@pytest.mark.parametrize("form", FORMS, ids=FORMS)
def test_form_matches_h200(form):
    x, y = H200["in:" + form], H200["out:" + form]
    assert x.shape[1] == y.shape[0] >= 256
    mismatch = compare_form(form, x, y)
    assert mismatch is None, str(mismatch)
