"""wgmma.mma_async with its fence/commit/wait executed over warpgroups (gpusim.functional.wgmma_ops,
isa.semantics.wgmma), against the H200 registers recorded by validate/semantics/tensor_probe.py
(validate/data/tensor_wgmma_h200.npz: every numerics form through its recorded descriptor layout)."""
from pathlib import Path

import numpy as np
import pytest

from gpusim.errors import BarrierError
from isa.errors import UnsupportedInstruction
from isa.semantics import mma_layout as L
from isa.semantics import wgmma as W
from mma_kernels import wgmma_kernel
from ptx_harness import metrics, run_ptx
from validate.semantics.tensor_forms import WGMMA_FORMS
from validate.semantics.tensor_numerics import _stage_layouts as stage_layouts
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


def _form(name):
    return next(f for f in FORMS if f.name == name)


def test_gmma_counter_counts_one_per_warp():
    _, x = run_form(_form("w_f16_f32_n8"), slice(0, 3))
    assert metrics(x)["sm__inst_executed_pipe_tensor_op_gmma.sum"] == 3 * 4


def test_both_inputs_negated_by_imm_scale_give_the_recorded_result():
    f = _form("w_f16_f32_n8")
    text = wgmma_kernel(f.ptx, f.nacc, f.dtype, False, ", -1, -1, 0, 0", 16384)
    A, B, C = (DATA[f"{f.name}:{k}"][:2] for k in "ABC")
    lay = [tuple(v) for v in DATA[f"{f.name}:layout"]]
    image = np.zeros((2, 16384), np.uint8)
    descs = []
    for c in range(2):
        img, da, db = wgmma_image(f, A[c], B[c], *lay)
        image[c, :len(img)] = img
        descs.append((da, db, 1))
    rc = L.pack(C, L.wgmma_acc_map(f.n, 32), 32)
    (_, _, _, _, rd), _ = run_ptx(text, "wg_k", (2, 1, 1), (128, 1, 1),
                                  [image, np.array(descs, np.uint64), np.zeros((2, 128, 4), np.uint32), rc,
                                   np.zeros_like(rc)])
    assert np.array_equal(rd, DATA[f"{f.name}:D_regs"][:2])


def test_block_of_three_warps_is_refused_with_the_line():
    f = _form("w_f16_f32_n8")
    text = wgmma_kernel(f.ptx, f.nacc, f.dtype, False, imms(f), 16384)
    z = np.zeros((1, 16384), np.uint8)
    d = np.zeros((1, 3), np.uint64)
    with pytest.raises(BarrierError, match="warpgroup.*3 warps"):
        run_ptx(text, "wg_k", (1, 1, 1), (96, 1, 1), [z, d, np.zeros((96, 4), np.uint32),
                                                        np.zeros((96, 4), np.uint32), np.zeros((96, 4), np.uint32)])


LAYOUT_FORMS = sorted({k.split(":")[1] for k in DATA.files if k.startswith("layout:")})


@pytest.mark.slow
@pytest.mark.parametrize("name", LAYOUT_FORMS)
def test_every_layout_stage_candidate_reads_what_the_gpu_read(name):
    """The probe's layout stage fed each form's exact case through 8 (swizzle, LBO meaning)
    descriptor candidates; gpusim decodes every one, right or wrong, as the H200 did."""
    f = _form(name)
    D = DATA[f"layout:{name}:D_regs"]
    lays = stage_layouts(f, ("128B", "lbo_k"))
    got = []
    for lay in lays:
        A, B, C = (DATA[f"layout:{name}:{k}"][None] for k in "ABC")
        img, da, db = wgmma_image(f, A[0], B[0], *lay)
        image = np.zeros((1, 65536), np.uint8)
        image[0, :len(img)] = img
        cb = W.ACC_BITS[f.dtype]
        rc = L.pack(C, L.wgmma_acc_map(f.n, cb), cb)
        text = wgmma_kernel(f.ptx, f.nacc, f.dtype, False, imms(f), 65536)
        (_, _, _, _, rd), _ = run_ptx(text, "wg_k", (1, 1, 1), (128, 1, 1),
                                      [image, np.array([(da, db, 1)], np.uint64), np.zeros((1, 128, 4), np.uint32),
                                       rc, np.zeros_like(rc)])
        got.append(rd[0])
    assert np.array_equal(np.stack(got), D)


def test_warpgroup_with_an_exited_warp_is_refused():
    f = _form("w_f16_f32_n8")
    text = wgmma_kernel(f.ptx, f.nacc, f.dtype, False, imms(f), 16384)
    text = text.replace("mov.u32 %tx, %tid.x;\n", "mov.u32 %tx, %tid.x;\nsetp.ge.u32 %q, %tx, 96;\n@%q ret;\n")
    z = np.zeros((1, 128, 4), np.uint32)
    with pytest.raises(BarrierError, match="warp 3 of its warpgroup has exited"):
        run_ptx(text, "wg_k", (1, 1, 1), (128, 1, 1), [np.zeros((1, 16384), np.uint8), np.zeros((1, 3), np.uint64),
                                                         z, z, z.copy()])


def test_fast_core_runs_wgmma_through_the_reference_op():
    f = _form("w_bf16_f32_n8")
    A, B, C = (DATA[f"{f.name}:{k}"][:1] for k in "ABC")
    img, da, db = wgmma_image(f, A[0], B[0], *[tuple(v) for v in DATA[f"{f.name}:layout"]])
    image = np.zeros((1, 16384), np.uint8)
    image[0, :len(img)] = img
    rc = L.pack(C, L.wgmma_acc_map(f.n, 32), 32)
    (_, _, _, _, rd), _ = run_ptx(wgmma_kernel(f.ptx, f.nacc, f.dtype, False, imms(f), 16384), "wg_k", (1, 1, 1),
                                  (128, 1, 1), [image, np.array([(da, db, 1)], np.uint64),
                                                np.zeros((1, 128, 4), np.uint32), rc, np.zeros_like(rc)], core="fast")
    assert np.array_equal(rd, DATA[f"{f.name}:D_regs"][:1])


def test_sparse_form_is_refused_with_its_name():
    f = _form("w_f16_f32_n8")
    text = wgmma_kernel(f.ptx.replace("mma_async", "mma_async.sp"), f.nacc, f.dtype, False, imms(f), 16384)
    z = np.zeros((1, 128, 4), np.uint32)
    with pytest.raises(UnsupportedInstruction, match="wgmma.*sparse"):
        run_ptx(text, "wg_k", (1, 1, 1), (128, 1, 1), [np.zeros((1, 16384), np.uint8), np.zeros((1, 3), np.uint64),
                                                         z, z, z.copy()])
