"""gpusim.functional.relevance: which tensor-core results a prediction-only run may leave out."""
from __future__ import annotations

import numpy as np
import pytest

import gpusim
from gpusim.functional.relevance import value_free
from isa.parser import parse
from mma_kernels import gemm_kernel, mma_kernel
from gpusim.timing.engine import TimingOptions
from ptx_harness import metrics, run_ptx

MMA = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


def _kernel(text: str, entry: str):
    return parse(text).kernel(entry)


def _mma_index(k) -> int:
    return next(i for i, ins in enumerate(k.instructions) if ins.opcode == "mma")


def test_a_gemm_whose_results_are_only_stored_needs_no_mma_value():
    k = _kernel(gemm_kernel(), "gemm")
    assert _mma_index(k) in value_free(k)


def test_an_mma_result_used_as_an_address_is_needed():
    text = mma_kernel(MMA, 4, 2, 4, "f32").replace(
        "st.global.f32 [%rd_d+0], %d0;\n",
        ".reg .b32 %ix;\n.reg .b64 %ox;\ncvt.rzi.u32.f32 %ix, %d0;\nand.b32 %ix, %ix, 3;\n"
        "mul.wide.u32 %ox, %ix, 4;\nadd.s64 %rd_d, %rd_d, %ox;\nst.global.f32 [%rd_d+0], %d0;\n")
    k = _kernel(text, "mma_k")
    assert _mma_index(k) not in value_free(k)


def test_an_mma_result_deciding_a_guard_is_needed():
    text = mma_kernel(MMA, 4, 2, 4, "f32").replace(
        "st.global.f32 [%rd_d+4], %d1;\n",
        ".reg .pred %q;\nsetp.gt.f32 %q, %d0, 0f00000000;\n@%q st.global.f32 [%rd_d+4], %d1;\n")
    k = _kernel(text, "mma_k")
    assert _mma_index(k) not in value_free(k)


def test_a_stored_result_is_needed_when_a_reload_decides_an_address():
    text = mma_kernel(MMA, 4, 2, 4, "f32").replace(
        "ret;\n",
        ".reg .b32 %re;\n.reg .b64 %oe;\nld.global.u32 %re, [%rd_d+0];\nand.b32 %re, %re, 3;\n"
        "mul.wide.u32 %oe, %re, 4;\nadd.s64 %oe, %rd_a, %oe;\nst.global.u32 [%oe], %re;\nret;\n")
    k = _kernel(text, "mma_k")
    assert _mma_index(k) not in value_free(k)


def test_leaving_the_values_out_changes_no_counter():
    """The executor with the analysis' set: same counters, and D left unwritten (zeros)."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((32, 32)).astype(np.float16)
    B = rng.standard_normal((32, 32)).astype(np.float16)
    args = [A, np.ascontiguousarray(B.T), np.zeros((32, 32), np.float32), np.uint32(32), np.uint32(32)]
    (_, _, full), x_full = run_ptx(gemm_kernel(), "gemm", (2, 1, 1), (128, 1, 1), args)
    free = value_free(_kernel(gemm_kernel(), "gemm"))
    (_, _, skipped), x_free = run_ptx(gemm_kernel(), "gemm", (2, 1, 1), (128, 1, 1), args, value_free=free)
    assert np.abs(full).sum() > 0 and not skipped.any()
    assert metrics(x_full) == metrics(x_free)


@pytest.mark.slow
def test_a_prediction_only_tensor_gemm_is_timed_as_the_launch_with_outputs():
    """A sampled 512 x 512 x 64 mma.sync GEMM (512 blocks): with outputs=False its mma results are
    not computed, and every metric equals the launch's with outputs."""
    rng = np.random.default_rng(4)
    m = n = 512
    k = 64
    A = rng.standard_normal((m, k)).astype(np.float16)
    Bt = rng.standard_normal((n, k)).astype(np.float16)
    src = gpusim.PtxSource(gemm_kernel(), "gemm")
    runs = []
    for outputs in (True, False):
        D = np.zeros((m, n), np.float32)
        r = gpusim.launch(src, (m * n // 128 // 4, 1, 1), (128, 1, 1), (A, Bt, D, np.uint32(k), np.uint32(n)),
                          gpu="h100", timing=True, outputs=outputs,
                          timing_options=TimingOptions(functional="sampled"))
        runs.append({key: v for key, v in r.metrics.items()
                     if isinstance(v, (int, float)) and not key.startswith("timing__outputs")})
    assert runs[0]["gpu__time_duration.sum"] > 0 and runs[0] == runs[1]
