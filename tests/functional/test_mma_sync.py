"""mma.sync.aligned executed over warps (gpusim.functional.tensor_ops, isa.semantics.tensor),
against the H200 registers recorded by validate/semantics/tensor_probe.py."""

import numpy as np
import pytest

from gpusim.errors import BarrierError
from isa.errors import UnsupportedInstruction
from isa.semantics import mma_layout as L
from isa.semantics import mma_numerics as M
from isa.semantics import tensor as T
from mma_kernels import gemm_kernel, mma_kernel
from ptx_harness import metrics, run_ptx
from validate.semantics.tensor_forms import MMA_FORMS
from validate.datadir import DATA_DIR

DATA = np.load(DATA_DIR / "tensor_mma_h200.npz")
FORMS = [f for f in MMA_FORMS if f.atype != "f64"]


def run_form(f, cases, core="reference"):
    form = T.MmaForm(f.shape, f.atype, f.btype, f.ctype, f.satfinite)
    na, nb, nc = form.nregs()
    ab, cb = T.ELEM_BITS[f.atype], T.ELEM_BITS[f.ctype]
    A, B, C = (DATA[f"{f.name}:{k}"][cases] for k in "ABC")
    ra = L.pack(A, L.frag_map(f.shape, "a", ab), ab)
    rb = L.pack(B, L.frag_map(f.shape, "b", ab), ab)
    rc = L.pack(C, L.frag_map(f.shape, "c", cb), cb)
    (_, _, _, rd), x = run_ptx(mma_kernel(f.ptx, na, nb, nc, f.ctype), "mma_k", (len(rc), 1, 1), (32, 1, 1),
                               [ra, rb, rc, np.zeros_like(rc)], core=core)
    return rd, x


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.name)
def test_first_recorded_cases_are_bit_exact(form):
    got, _ = run_form(form, slice(0, 3))
    assert np.array_equal(got, DATA[f"{form.name}:D_regs"][:3])


def test_tensor_pipe_counters_count_warp_instructions():
    f16 = next(f for f in FORMS if f.name == "f16_f32_m16n8k16")
    s8 = next(f for f in FORMS if f.name == "s8s8_s32_m16n8k32")
    _, x = run_form(f16, slice(0, 3))
    _, y = run_form(s8, slice(0, 2))
    assert (metrics(x)["sm__inst_executed_pipe_tensor_op_hmma.sum"],
            metrics(y)["sm__inst_executed_pipe_tensor_op_imma.sum"]) == (3, 2)


def test_fast_core_runs_mma_through_the_reference_op():
    f = next(f for f in FORMS if f.name == "bf16_f32_m16n8k8")
    got, _ = run_form(f, slice(0, 2), core="fast")
    assert np.array_equal(got, DATA[f"{f.name}:D_regs"][:2])


def test_partial_warp_is_refused_with_the_line():
    text = mma_kernel("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 4, 2, 4, "f32")
    z = np.zeros((1, 32, 4), np.uint32)
    with pytest.raises(BarrierError, match="partial warp.*mma.sync"):
        run_ptx(text, "mma_k", (1, 1, 1), (16, 1, 1), [z, z[..., :2].copy(), z, z])


@pytest.mark.parametrize("op", ["mma.sync.aligned.m16n8k16.row.row.f32.f16.f16.f32",
                                "mma.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32"])
def test_unimplemented_variant_is_refused_by_name(op):
    with pytest.raises(UnsupportedInstruction, match=op.replace(".", r"\.") + ".*PTX line"):
        run_ptx(mma_kernel(op, 4, 2, 4, "f32"), "mma_k", (1, 1, 1), (32, 1, 1), [np.zeros((1, 32, 4), np.uint32)] * 4)


@pytest.mark.slow
@pytest.mark.parametrize("form", [f for f in FORMS if f.ctype == "s32"], ids=lambda f: f.name)
def test_integer_forms_match_every_recorded_case(form):
    got, _ = run_form(form, slice(None), core="fast")         # the same mma op as the reference core's
    assert np.array_equal(got, DATA[f"{form.name}:D_regs"])


@pytest.mark.slow
@pytest.mark.parametrize("form", [f for f in FORMS if f.ctype != "s32"], ids=lambda f: f.name)
def test_float_forms_match_every_recorded_case(form):
    got, _ = run_form(form, slice(None), core="fast")
    assert np.array_equal(got, DATA[f"{form.name}:D_regs"])


@pytest.mark.slow
def test_gemm_kernel_of_several_warps_equals_the_model_chained_over_k():
    """Eight warps in two blocks through the batched numerics: D of a 32 x 32 x 32 f16 GEMM (one
    16 x 8 tile per warp, 2 mma.sync each) equals the scalar reference applied along K."""
    rng = np.random.default_rng(2)
    A = rng.standard_normal((32, 32)).astype(np.float16)
    B = rng.standard_normal((32, 32)).astype(np.float16)
    (_, _, D), x = run_ptx(gemm_kernel(), "gemm", (2, 1, 1), (128, 1, 1),
                           [A, np.ascontiguousarray(B.T), np.zeros((32, 32), np.float32), np.uint32(32), np.uint32(32)])
    model = T.model_for(T.MmaForm("m16n8k16", "f16", "f16", "f32"))
    acc = np.zeros((32, 32), np.uint64)
    for k in range(0, 32, 16):
        acc = M.mma(A[:, k:k + 16].view(np.uint16), B[k:k + 16].view(np.uint16), acc, "f16", "f16", "f32", model)
    assert np.array_equal(D.view(np.uint32), acc.astype(np.uint32))
    assert metrics(x)["sm__inst_executed_pipe_tensor_op_hmma.sum"] == 8 * 2
