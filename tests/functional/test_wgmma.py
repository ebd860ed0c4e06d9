"""wgmma.mma_async with its fence/commit/wait executed over warpgroups (gpusim.functional.wgmma_ops,
isa.semantics.wgmma), against the H200 registers recorded by validate/semantics/tensor_probe.py
(validate/data/tensor_wgmma_h200.npz: every numerics form through its recorded descriptor layout)."""
from pathlib import Path

import numpy as np
import pytest

from gpusim.errors import BarrierError
from isa.semantics import mma_layout as L
from isa.semantics import wgmma as W
from mma_kernels import wgmma_kernel
from ptx_harness import metrics, run_ptx
from validate.semantics.tensor_forms import WGMMA_FORMS
from validate.semantics.tensor_numerics import wgmma_image

DATA = np.load(Path(__file__).resolve().parents[2] / "validate" / "data" / "tensor_wgmma_h200.npz")
FORMS = [f for f in WGMMA_FORMS if f"{f.name}:A" in DATA]
BIG = {f.name for f in FORMS if f.n >= 64}


def imms(f) -> str:
    if not f.is_float:
        return ""
    t = ", 1, 1"
    if f.atype in ("f16", "bf16"):
        t += f", {f.trans_b}" if f.a_regs else f", {f.trans_a}, {f.trans_b}"
    return t


def run_form(f, cases, layouts=None, scale_d=None):
    """D registers (cases, 128, nacc) of form `f` on the recorded cases, through the PTX harness."""
    A, B, C = (DATA[f"{f.name}:{k}"][cases] for k in "ABC")
    sd = DATA[f"{f.name}:scale_d"][cases] if scale_d is None else scale_d
    lay = layouts or [tuple(x) for x in DATA[f"{f.name}:layout"]]
    imgs, descs = [], []
    for c in range(len(A)):
        img, da, db = wgmma_image(f, A[c], B[c], *lay)
        imgs.append(img)
        descs.append((da, db, int(sd[c])))
    size = max(len(x) for x in imgs)
    image = np.zeros((len(imgs), size), np.uint8)
    for c, x in enumerate(imgs):
        image[c, :len(x)] = x
    ab, cb = W.ELEM_BITS[f.atype], W.ACC_BITS[f.dtype]
    rc = L.pack(C, L.wgmma_acc_map(f.n, cb), cb)
    ra = L.pack(A, L.wgmma_a_regs_map(f.k, ab), ab) if f.a_regs else np.zeros((len(A), 128, 4), np.uint32)
    text = wgmma_kernel(f.ptx, f.nacc, f.dtype, f.a_regs, imms(f), size)
    (_, _, _, _, rd), x = run_ptx(text, "wg_k", (len(A), 1, 1), (128, 1, 1),
                                  [image, np.array(descs, np.uint64), ra, rc, np.zeros_like(rc)])
    return rd, x


@pytest.mark.parametrize("form", [f for f in FORMS if f.name not in BIG], ids=lambda f: f.name)
def test_first_and_scale_d0_cases_are_bit_exact(form):
    n = len(DATA[f"{form.name}:A"])
    got, _ = run_form(form, [0, n - 1])
    assert np.array_equal(got, DATA[f"{form.name}:D_regs"][[0, n - 1]])


@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.name)
def test_every_recorded_case_is_bit_exact(form):
    n = len(DATA[f"{form.name}:A"])
    got, _ = run_form(form, slice(0, n))
    assert np.array_equal(got, DATA[f"{form.name}:D_regs"])
