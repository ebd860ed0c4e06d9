"""Tensor-core results recorded on an H100/H200 by validate/semantics/tensor_probe.py
(data/measurements/tensor_mma_<gpu>.npz, tensor_wgmma_<gpu>.npz): the fragment layouts reproduce the
exact small-integer case, integer forms are exact, and the fitted block-FMA model
(isa.semantics.mma_numerics.hopper_model, docs/tensor_numerics.md) reproduces every crafted test
bit for bit and every element of every random case (the counts below are measured)."""

import numpy as np
import pytest

from isa.semantics import mma_layout as L
from isa.semantics import mma_numerics as M
from validate.semantics import tensor_fit as TF
from validate.semantics.tensor_forms import MMA_FORMS, WGMMA_FORMS
from validate.semantics.tensor_numerics import bits_of, exact_value, expected_layout_d
from validate.datadir import DATA_DIR

DATA = DATA_DIR
MMA_FILES = sorted(DATA.glob("tensor_mma_*.npz"))
WG_FILES = sorted(DATA.glob("tensor_wgmma_*.npz"))
FLOAT_MMA = [f for f in MMA_FORMS if f.ctype in ("f32", "f16") and f.atype != "f64"]
FLOAT_WG8 = [f for f in WGMMA_FORMS if f.n == 8 and f.dtype != "s32"]
#: elements of the random cases (r_ml, r_wide, r_bits, r_cancel) the fitted model gets bit-exact
#: on the H200 (validate/semantics/tensor_fit.py prints the same): all of them, per form
RANDOM_EXACT = {f.name: 9216 for f in FLOAT_MMA} | {f.name: 10240 for f in FLOAT_WG8}


def _load(files):
    if not files:
        pytest.skip("probe data not yet recorded")
    return [np.load(f) for f in files]


@pytest.mark.parametrize("form", MMA_FORMS, ids=[f.name for f in MMA_FORMS])
def test_mma_layout_case_is_exact(form):
    for d in _load(MMA_FILES):
        m, n, _ = form.mnk
        cb = bits_of(form.ctype)
        got = L.unpack(d[f"{form.name}:D_regs"][0], L.frag_map(form.shape, "c", cb), cb, (m, n))
        want = expected_layout_d(d[f"{form.name}:A"][0], d[f"{form.name}:B"][0], d[f"{form.name}:C"][0],
                                 form.atype, form.btype, form.ctype)
        assert np.array_equal(exact_value(got, form.ctype), want)


@pytest.mark.parametrize("form", [f for f in MMA_FORMS if f.ctype == "s32"], ids=lambda f: f.name)
def test_integer_mma_matches_every_recorded_case(form):
    for d in _load(MMA_FILES):
        m, n, _ = form.mnk
        got = L.unpack(d[f"{form.name}:D_regs"], L.frag_map(form.shape, "c", 32), 32, (m, n))
        A, B, C = d[f"{form.name}:A"], d[f"{form.name}:B"], d[f"{form.name}:C"]
        for c in range(A.shape[0]):
            assert np.array_equal(got[c], M.mma_int(A[c], B[c], C[c], form.atype, form.btype, form.satfinite))


def _crafted(files, form, rows=None):
    for d in _load(files):
        n, bad = TF.crafted_mismatches(d, form, TF.model_of(form), rows)
        assert n > 0 and not bad, f"{len(bad)} of {n} differ, first: {bad[:5]}"


@pytest.mark.parametrize("form", FLOAT_MMA, ids=lambda f: f.name)
def test_mma_crafted_tests_match_the_block_fma_model(form):
    _crafted(MMA_FILES, form)


@pytest.mark.parametrize("form", FLOAT_WG8, ids=lambda f: f.name)
def test_wgmma_crafted_tests_match_the_block_fma_model(form):
    """Every row: the test, negated, halved, ..., C alone (tensor_inputs.ROW_TRANSFORMS)."""
    _crafted(WG_FILES, form)


@pytest.mark.parametrize("form", FLOAT_MMA + FLOAT_WG8, ids=lambda f: f.name)
def test_random_inputs_are_bit_exact(form):
    files = MMA_FILES if form in FLOAT_MMA else WG_FILES
    for d in _load(files):
        tot, ok, bad = TF.element_counts(d, form, TF.model_of(form))
        assert (sum(ok.values()), sum(tot.values())) == (RANDOM_EXACT[form.name],) * 2, bad[:5]
