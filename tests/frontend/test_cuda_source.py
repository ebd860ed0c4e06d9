"""CUDA C++ kernels through NVRTC (gpusim.CudaSource) and PTX files (gpusim.PtxSource): outputs equal
numpy, scalars are checked against the parameter's type, errors name the kernel and the .cu line."""
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim.frontend.cudasource import compile_cuda

CU = Path(__file__).with_name("data") / "kernels.cu"
RNG = np.random.default_rng(7)


def _f32(n):
    return RNG.random(n).astype(np.float32)


@pytest.mark.slow
def test_extern_c_vector_add_equals_numpy_and_names_the_cu_file():
    a, b, c = _f32(1000), _f32(1000), np.zeros(1000, np.float32)
    r = gpusim.launch(gpusim.CudaSource(CU, "vecadd"), 8, 128, (a, b, c, np.int32(1000)))
    assert np.array_equal(c, a + b)
    assert r.source_file == str(CU.resolve())
    assert r.lines[3].text.strip() == "if (i < n) c[i] = a[i] + b[i];"


@pytest.mark.slow
def test_cpp_saxpy_takes_numpy_scalars_of_its_parameter_types():     # --fmad=false: a*x+y not fused
    x, y = _f32(1000), _f32(1000)
    want = np.float32(2.5) * x + y
    gpusim.launch(gpusim.CudaSource(CU.read_text(), "saxpy", options=("-std=c++17", "--fmad=false")), 8, 128,
                  (np.float32(2.5), x, y, np.uint32(1000)), shared_bytes=0, gpu="h100", timing=False)
    assert np.array_equal(y, want)


@pytest.mark.slow
def test_template_reduction_with_syncthreads_times_and_sums():
    x, out = _f32(1000), np.zeros(8, np.float32)
    r = gpusim.launch(gpusim.CudaSource(CU, "block_sum<float, 128>"), 8, 128, (x, out, np.int32(1000)), timing=True)
    want = np.array([x[i * 128:(i + 1) * 128].sum(dtype=np.float32) for i in range(8)])
    assert np.allclose(out, want, rtol=1e-5)
    assert r.metrics["gpu__time_duration.sum"] > 0
    assert r.lines[19].warp_instructions == 8 * 4 * 7          # __syncthreads() in the loop: 7 rounds x 4 warps


def test_dynamic_shared_memory_from_shared_bytes():
    x = np.arange(256, dtype=np.float32)
    gpusim.launch(gpusim.CudaSource(CU, "reverse_dyn"), 2, 128, (x, np.int32(256)), shared_bytes=512)
    assert np.array_equal(x, np.concatenate([np.arange(127, -1, -1), np.arange(255, 127, -1)]).astype(np.float32))


@pytest.mark.parametrize("value, got", [(1000.0, "float 1000.0"), (np.int64(1000), "numpy.int64")])
def test_a_scalar_of_another_type_is_refused_naming_kernel_parameter_and_value(value, got):
    a = _f32(10)
    with pytest.raises(gpusim.LaunchError, match=rf"kernel vecadd: argument 3 \(n\), of type int \(\.u32\), got {got}"):
        gpusim.launch(gpusim.CudaSource(CU, "vecadd"), 1, 32, (a, a, a, value))


def test_an_array_of_another_element_type_is_refused():
    a = np.ones(10)
    with pytest.raises(gpusim.LaunchError, match=r"argument 0 \(a\), of type const float\* .* float64 array"):
        gpusim.launch(gpusim.CudaSource(CU, "vecadd"), 1, 32, (a, a, a, np.int32(10)))


def test_compile_error_is_one_line_naming_kernel_and_cu_line():
    src = 'extern "C" __global__ void broken(float* x) {\n    x[0] = undefined_name;\n}\n'
    with pytest.raises(gpusim.UnsupportedKernel) as e:
        gpusim.launch(gpusim.CudaSource(src, "broken"), 1, 32, (np.zeros(1, np.float32),))
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("kernel broken: ") and ".cu:2: " in msg
    assert 'identifier "undefined_name" is undefined' in msg


def test_unknown_kernel_name_is_refused():
    with pytest.raises(gpusim.UnsupportedKernel, match="defines no kernel nothere"):
        gpusim.launch(gpusim.CudaSource(CU, "nothere"), 1, 32, ())


def test_an_unimplemented_instruction_in_inline_asm_is_refused_with_its_name_and_cu_line():
    src = ('extern "C" __global__ void k(unsigned* d, const unsigned* a) {\n'
           '    unsigned r;\n'
           '    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(a[threadIdx.x]));\n'
           '    d[threadIdx.x] = r;\n}\n')
    with pytest.raises(gpusim.UnsupportedKernel, match=r"'movmatrix\.sync\.aligned\.m8n8\.trans\.b16.*kernel k.*\.cu:3"):
        gpusim.launch(gpusim.CudaSource(src, "k"), 1, 32, (np.zeros(32, np.uint32), np.zeros(32, np.uint32)))


@pytest.mark.slow
def test_ptx_file_from_nvrtc_runs_with_pointer_and_scalar_parameters(tmp_path):
    ptx, entry = compile_cuda(CU.read_text(), str(CU), "saxpy", ("--fmad=false",), (9, 0))
    path = tmp_path / "saxpy.ptx"
    path.write_text(ptx)
    x, y = _f32(300), _f32(300)
    want = np.float32(3) * x + y
    src = gpusim.PtxSource(path, "saxpy")                # the unmangled name finds the mangled entry
    assert src.entry == entry != "saxpy"
    r = gpusim.launch(src, 3, 128, (np.float32(3), x, y, np.uint32(300)))
    assert np.array_equal(y, want)
    assert r.source_file == str(CU)                      # .loc/.file lines point into the .cu
    with pytest.raises(gpusim.LaunchError, match=rf"kernel saxpy: argument 0 \({entry}_param_0\), of type \.f32, "
                                                 r"got numpy\.float64"):
        gpusim.launch(src, 3, 128, (np.float64(3), x, y, np.uint32(300)))


def test_ptx_for_a_newer_architecture_is_refused():
    ptx, _ = compile_cuda(CU.read_text(), str(CU), "vecadd", (), (9, 0))
    a = _f32(4)
    with pytest.raises(gpusim.UnsupportedKernel, match="targets sm_90.*is sm_80"):
        gpusim.launch(gpusim.PtxSource(ptx, "vecadd"), 1, 32, (a, a, a, np.int32(4)), gpu="a100")


@cuda.jit
def transpose_tile_numba(inp, out, n):
    tile = cuda.shared.array((32, 32), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x, y = cuda.blockIdx.x * 32 + tx, cuda.blockIdx.y * 32 + ty
    tile[ty, tx] = inp[y * n + x]
    cuda.syncthreads()
    x, y = cuda.blockIdx.y * 32 + tx, cuda.blockIdx.x * 32 + ty
    out[y * n + x] = tile[tx, ty]


@pytest.mark.slow
def test_transpose_bank_conflicts_match_the_numba_kernel():
    n = 64
    inp = _f32(n * n)
    out_c, out_n = np.zeros_like(inp), np.zeros_like(inp)
    rc = gpusim.launch(gpusim.CudaSource(CU, "transpose_tile<32>"), (2, 2), (32, 32), (inp, out_c, np.int32(n)))
    rn = gpusim.launch(transpose_tile_numba, (2, 2), (32, 32), (inp, out_n, np.int32(n)))
    assert np.array_equal(out_c, inp.reshape(n, n).T.ravel()) and np.array_equal(out_n, out_c)
    key = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
    assert rc.metrics[key] == rn.metrics[key] == 4 * 32 * 31       # 32-way conflicts: 31 extra wavefronts per warp
    st = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
    assert rc.metrics[st] == rn.metrics[st] == 0


def test_mma_sync_in_inline_asm_runs_on_the_tensor_core_model():
    # A and B all 1.0 (f16 pairs 0x3C00): every element of D is the sum of 16 products, 16.0
    src = ('extern "C" __global__ void k(float* d, const unsigned* a) {\n'
           '    float c0 = 0, c1 = 0, c2 = 0, c3 = 0;\n'
           '    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, '
           '{%8,%9}, {%0,%1,%2,%3};" : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3) : "r"(a[0]), "r"(a[1]), "r"(a[2]), '
           '"r"(a[3]), "r"(a[4]), "r"(a[5]));\n'
           '    d[4 * threadIdx.x] = c0; d[4 * threadIdx.x + 1] = c1; d[4 * threadIdx.x + 2] = c2;\n'
           '    d[4 * threadIdx.x + 3] = c3;\n}\n')
    d = np.zeros(128, np.float32)
    r = gpusim.launch(gpusim.CudaSource(src, "k"), 1, 32, (d, np.full(8, 0x3C003C00, np.uint32)))
    assert (d == 16.0).all() and r.metrics["sm__inst_executed_pipe_tensor_op_hmma.sum"] == 1
