"""CUDA C++'s nvcuda::wmma (PTX wmma.load / wmma.mma / wmma.store) on the functional core
(gpusim.functional.wmma_ops, isa.semantics.wmma): products equal numpy on exact inputs, the
numerics equal mma.sync's, and every fragment move makes the memory requests ptxas's SASS makes."""
from collections import Counter

import numpy as np
import pytest

import gpusim
from gpusim.errors import KernelError
from gpusim.frontend.cudasource import compile_cuda
from gpusim.frontend.sass import INSTALL_HINT, have_nvdisasm, have_ptxas, ptxas_info, sass_listing
from isa.semantics import mma_layout as L
from isa.semantics import tensor as T
from isa.semantics import wmma as W

SRC = r"""
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
template <int M, int N, int K, typename T, typename LA, typename LB, typename C>
__global__ void wk(const T* a, const T* b, C* c, int lda, int ldb, int ldc) {
    wmma::fragment<wmma::matrix_a, M, N, K, T, LA> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, T, LB> fb;
    wmma::fragment<wmma::accumulator, M, N, K, C> fc;
    wmma::load_matrix_sync(fc, c, ldc, wmma::mem_row_major);
    wmma::load_matrix_sync(fa, a, lda);
    wmma::load_matrix_sync(fb, b, ldb);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, ldc, wmma::mem_col_major);
}
template <int M, int N, int K, typename LA, typename LB>
__global__ void from_shared(const half* a, const half* b, float* c) {
    __shared__ __align__(128) half sa[32 * 32];
    __shared__ __align__(128) half sb[32 * 32];
    for (int i = threadIdx.x; i < 32 * 32; i += 32) { sa[i] = a[i]; sb[i] = b[i]; }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, M, N, K, half, LA> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, half, LB> fb;
    wmma::fragment<wmma::accumulator, M, N, K, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, sa, 32);
    wmma::load_matrix_sync(fb, sb, 32);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 32, wmma::mem_row_major);
}
__global__ void twice(const half* a, const half* b, float* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    for (int i = 0; i < fa.num_elements; i++) fa.x[i] = fa.x[i] * __float2half(2.0f);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
__global__ void tf32(const float* a, const float* b, float* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 8);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
"""
L_ROW, L_COL = "nvcuda::wmma::row_major", "nvcuda::wmma::col_major"
# (M, N, K, C++ input type, numpy input, C++ accumulator, numpy accumulator, A layout, B layout)
FORMS = [
    (16, 16, 16, "half", np.float16, "float", np.float32, "row", "col"),
    (16, 16, 16, "half", np.float16, "half", np.float16, "col", "row"),
    (32, 8, 16, "half", np.float16, "float", np.float32, "row", "col"),
    (8, 32, 16, "half", np.float16, "float", np.float32, "row", "row"),
    (16, 16, 16, "signed char", np.int8, "int", np.int32, "row", "col"),
]
RNG = np.random.default_rng(11)


def _name(f):
    m, n, k, t, _, c, _, la, lb = f
    return f"wk<{m},{n},{k},{t},{L_ROW if la == 'row' else L_COL},{L_ROW if lb == 'row' else L_COL},{c}>"


def _run(f):
    """Exact small-integer inputs; C loaded row-major from a 32 x 32 buffer, D stored column-major
    into it (ld 32): returns (D, the numpy D, Result)."""
    m, n, k, _, dt, _, ct, la, lb = f
    A, B = RNG.integers(-3, 4, (m, k)).astype(dt), RNG.integers(-3, 4, (k, n)).astype(dt)
    buf = RNG.integers(-3, 4, (32, 32)).astype(ct)
    want = (A.astype(np.float64) @ B + buf[:m, :n]).astype(ct)
    a = A if la == "row" else A.T.copy()
    b = B if lb == "row" else B.T.copy()
    r = gpusim.launch(gpusim.CudaSource(SRC, _name(f)), 1, 32,
                      (a, b, buf, np.int32(a.shape[1]), np.int32(b.shape[1]), np.int32(32)))
    return buf[:n, :m].T, want, r


@pytest.mark.slow
@pytest.mark.parametrize("f", FORMS, ids=_name)
def test_product_of_small_integers_equals_numpy(f):
    got, want, _ = _run(f)
    assert np.array_equal(got, want)


@pytest.mark.slow
@pytest.mark.skipif(not (have_ptxas() and have_nvdisasm()), reason=f"ptxas/nvdisasm not installed: {INSTALL_HINT}")
@pytest.mark.parametrize("f", FORMS, ids=_name)
def test_requests_equal_ptxas_memory_instructions(f):
    _, _, r = _run(f)
    ptx, entry = compile_cuda(SRC, "", _name(f), (), (9, 0))
    ops = Counter(s.opcode.split(".")[0] for s in sass_listing(ptxas_info(ptx, entry, (9, 0)).cubin, entry))
    m = r.metrics
    mma = m.get("sm__inst_executed_pipe_tensor_op_hmma.sum", 0) + m.get("sm__inst_executed_pipe_tensor_op_imma.sum", 0)
    assert (m["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"], m["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"],
            mma) == (ops["LDG"], ops["STG"], ops["HMMA"] + ops["IMMA"])


@pytest.mark.slow
def test_f16_numerics_are_mma_sync_m16n8k16_on_each_half_of_b():
    bits = lambda x: x.view(np.uint16).astype(np.uint64)   # noqa: E731
    A = RNG.standard_normal((16, 16)).astype(np.float16)
    B = RNG.standard_normal((16, 16)).astype(np.float16)
    C = np.zeros((16, 16), np.float32)
    form = T.MmaForm("m16n8k16", "f16", "f16", "f32")
    want = np.zeros((16, 16), np.uint64)
    for h in range(2):
        regs = [L.pack(X, L.frag_map("m16n8k16", op, b), b) for X, op, b in
                ((bits(A), "a", 16), (bits(B[:, 8 * h:8 * h + 8]), "b", 16), (np.zeros((16, 8), np.uint64), "c", 32))]
        want[:, 8 * h:8 * h + 8] = L.unpack(T.mma_sync(form, *regs), L.frag_map("m16n8k16", "c", 32), 32, (16, 8))
    c = np.zeros((32, 32), np.float32)
    f = FORMS[0]
    gpusim.launch(gpusim.CudaSource(SRC, _name(f)), 1, 32, (A, B.T.copy(), c, np.int32(16), np.int32(16), np.int32(32)))
    assert np.array_equal(c[:16, :16].T.view(np.uint32), want.astype(np.uint32)) and not np.array_equal(C, want)


@pytest.mark.slow
def test_elementwise_fragment_code_sees_every_copy():
    A = RNG.integers(-3, 4, (16, 16)).astype(np.float16)
    B = RNG.integers(-3, 4, (16, 16)).astype(np.float16)
    c = np.zeros((16, 16), np.float32)
    gpusim.launch(gpusim.CudaSource(SRC, "twice"), 1, 32, (A, B, c))
    assert np.array_equal(c, 2 * (A.astype(np.float32) @ B))


@pytest.mark.slow
def test_tf32_is_two_chained_k4_steps():
    A = RNG.integers(-3, 4, (16, 8)).astype(np.float32)
    B = RNG.integers(-3, 4, (8, 16)).astype(np.float32)
    c = np.zeros((16, 16), np.float32)
    r = gpusim.launch(gpusim.CudaSource(SRC, "tf32"), 1, 32, (A, B, c))
    assert np.array_equal(c, A @ B) and r.metrics["sm__inst_executed_pipe_tensor_op_hmma.sum"] == 4


@pytest.mark.slow
def test_stride_not_a_multiple_of_16_bytes_is_refused_with_the_cu_line():
    a = np.zeros((16, 20), np.float16)
    with pytest.raises(KernelError, match=r"\.cu:11 \(wmma::load_matrix_sync\(fa, a, lda\);\), block \(0, 0, 0\), "
                                          r"thread \(0, 0, 0\): wmma.load.a.*stride 20 elements is 40 bytes"):
        gpusim.launch(gpusim.CudaSource(SRC, _name(FORMS[0])), 1, 32,
                      (a, np.zeros((16, 16), np.float16), np.zeros((32, 32), np.float32), np.int32(20), np.int32(16),
                       np.int32(32)))


def test_fragment_layout_is_mma_m16n8k16_for_m16n16k16():
    a = W.frag_map("m16n16k16", "a", "f16")
    assert np.array_equal(a, L.frag_map("m16n8k16", "a", 16))
    d = W.frag_map("m16n16k16", "d", "f32")
    assert np.array_equal(d[:, 4:], L.frag_map("m16n8k16", "c", 32) + np.array([0, 8]))


def test_f16_a_fragment_declares_eight_registers_holding_four_and_copies():
    m = np.arange(256, dtype=np.uint64).reshape(16, 16)
    regs = W.pack(m, "m16n16k16", "a", "f16")
    assert regs.shape == (32, 8) and np.array_equal(regs[:, 4:], regs[:, :4])
    assert np.array_equal(W.unpack(regs, "m16n16k16", "a", "f16"), m)


SHARED_FORMS = [(16, 16, 16, "col", "row"), (32, 8, 16, "row", "row"), (8, 32, 16, "row", "col")]


def _shared_name(f):
    m, n, k, la, lb = f
    return f"from_shared<{m},{n},{k},{L_ROW if la == 'row' else L_COL},{L_ROW if lb == 'row' else L_COL}>"


@pytest.mark.slow
@pytest.mark.skipif(not (have_ptxas() and have_nvdisasm()), reason=f"ptxas/nvdisasm not installed: {INSTALL_HINT}")
@pytest.mark.parametrize("f", SHARED_FORMS, ids=_shared_name)
def test_loads_from_shared_are_ptxas_ldmatrix_and_equal_numpy(f):
    m, n, k, la, lb = f
    a = RNG.integers(-3, 4, (32, 32)).astype(np.float16)
    b = RNG.integers(-3, 4, (32, 32)).astype(np.float16)
    c = np.zeros((32, 32), np.float32)
    r = gpusim.launch(gpusim.CudaSource(SRC, _shared_name(f)), 1, 32, (a, b, c))
    A = a[:m, :k] if la == "row" else a[:k, :m].T
    B = b[:k, :n] if lb == "row" else b[:n, :k].T
    ptx, entry = compile_cuda(SRC, "", _shared_name(f), (), (9, 0))
    ldsm = sum(s.opcode.startswith("LDSM") for s in sass_listing(ptxas_info(ptx, entry, (9, 0)).cubin, entry))
    assert np.array_equal(c[:m, :n], A.astype(np.float32) @ B)
    assert (r.metrics["smsp__inst_executed_op_ldsm.sum"], r.metrics["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]) \
        == (ldsm, r.metrics["sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"])    # Nsight counts LDSM's there
