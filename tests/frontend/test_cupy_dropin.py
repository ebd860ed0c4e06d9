"""The CuPy drop-in (`import gpusim.cupy as cp`): RawKernel/RawModule programs give numpy's
results, arguments follow CuPy's rules, a launch's metrics equal the same kernel's through
gpusim.CudaSource, and what is not supported is one GpusimError line naming it."""
import numpy as np
import pytest

import gpusim
import gpusim.cupy as cp
from gpusim.cupy import _state

VECADD = r'''
extern "C" __global__ void vecadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
'''

TEMPLATES = r'''
template <typename T>
__global__ void scale(T* x, T a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a;
}

extern "C" __global__ void reverse_dyn(float* x) {
    extern __shared__ float buf[];
    int t = threadIdx.x;
    buf[t] = x[t];
    __syncthreads();
    x[t] = buf[blockDim.x - 1 - t];
}
'''

# a 32 x 32 tile read by columns: every warp's 32 loads fall in one bank
COLUMN_READ = r'''
extern "C" __global__ void transpose_tile(const float* in, float* out, int n) {
    __shared__ float tile[32][32];
    int x = threadIdx.x, y = threadIdx.y;
    tile[y][x] = in[y * n + x];
    __syncthreads();
    out[y * n + x] = tile[x][y];
}
'''

ADD = cp.RawKernel(VECADD, "vecadd")
MODULE = cp.RawModule(code=TEMPLATES, options=("-std=c++17",), name_expressions=("scale<float>", "scale<double>"))
RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _fresh_config():
    cp.set_gpu("h100")
    cp.set_timing(None)
    cp.set_check()
    _state.STATE.events_recorded = False
    yield
    cp.set_timing(None)
    cp.set_check()
    _state.STATE.events_recorded = False


@pytest.mark.slow                  # the first launch of the file: NVRTC, ptxas, nvdisasm, the fast core's load
def test_cupy_vector_add_equals_numpy_and_keeps_its_result():
    a = cp.asarray(RNG.random(1000, dtype=np.float32))
    b = cp.asarray(RNG.random(1000, dtype=np.float32))
    c = cp.empty_like(a)
    ADD((4,), (256,), (a, b, c, 1000))                  # a Python int: CuPy's int64, fits the int
    assert isinstance(c, cp.ndarray)
    assert np.array_equal(cp.asnumpy(c), cp.asnumpy(a) + cp.asnumpy(b))
    assert ADD.last_result is cp.last_launch()
    assert ADD.last_result.metrics["smsp__inst_executed.sum"] > 0
    assert "gpu__time_duration.sum" not in ADD.last_result.metrics      # no event recorded: not timed
    assert "if (i < n) c[i] = a[i] + b[i];" in cp.report()               # the source view shows the .cu line


@pytest.mark.slow                  # two kernels through ptxas and nvdisasm
def test_templated_rawmodule_runs_each_name_expression():
    x = cp.arange(100, dtype=cp.float32)
    y = cp.arange(100, dtype=cp.float64)
    MODULE.get_function("scale<float>")((1,), (128,), (x, cp.float32(1.5), cp.int32(100)))
    MODULE.get_function("scale<double>")((1,), (128,), (y, 2.5, cp.int32(100)))   # a float for a double
    assert np.array_equal(x.get(), np.arange(100, dtype=np.float32) * np.float32(1.5))
    assert np.array_equal(y.get(), np.arange(100, dtype=np.float64) * 2.5)


def test_an_array_of_another_type_for_a_template_instance_is_refused():
    y = cp.zeros(8, dtype=cp.float64)
    with pytest.raises(gpusim.LaunchError, match=r"kernel scale<float>: argument 0 \(x\), of type float\* .*float64"):
        MODULE.get_function("scale<float>")((1,), (8,), (y, cp.float32(1), cp.int32(8)))


def test_shared_mem_sizes_the_extern_shared_array():
    x = cp.arange(256, dtype=cp.float32)
    MODULE.get_function("reverse_dyn")((1,), (256,), (x,), shared_mem=256 * 4)
    assert np.array_equal(x.get(), np.arange(255, -1, -1, dtype=np.float32))


def test_dynamic_shared_memory_above_48_kib_needs_the_kernel_attribute():
    k = MODULE.get_function("reverse_dyn")
    x = cp.arange(32, dtype=cp.float32)
    with pytest.raises(gpusim.LaunchError, match="raise kernel.max_dynamic_shared_size_bytes to 65536"):
        k((1,), (32,), (x,), shared_mem=65536)
    k.max_dynamic_shared_size_bytes = 65536
    k((1,), (32,), (x,), shared_mem=65536)
    assert x[0] == 31.0


@pytest.mark.parametrize("value, got, want", [
    (2.5, "float 2.5", r"np\.float32\(2\.5\) \(CuPy passes a Python float as a float64"),
    (np.float64(2.5), "numpy.float64", "np.float32"),
    (2, "int 2", r"np\.float32\(2\) \(CuPy passes a Python int as an int64"),
])
def test_a_scalar_of_another_type_is_refused_naming_kernel_parameter_and_value(value, got, want):
    x = cp.zeros(8, dtype=cp.float32)
    with pytest.raises(gpusim.LaunchError, match=rf"kernel scale<float>: argument 1 \(a\), of type float "
                                                 rf"\(\.f32\), got {got}.*{want}"):
        MODULE.get_function("scale<float>")((1,), (8,), (x, value, cp.int32(8)))


def test_a_python_int_too_wide_for_an_int_is_refused():
    a = cp.zeros(4, dtype=cp.float32)
    with pytest.raises(gpusim.LaunchError, match=r"argument 3 \(n\), of type int \(\.u32\), got int 4294967296: "
                                                 r"pass a value that fits 32 bits"):
        ADD((1,), (32,), (a, a, a, 1 << 32))


def test_a_host_numpy_array_is_no_device_pointer():
    a = cp.zeros(4, dtype=cp.float32)
    with pytest.raises(gpusim.LaunchError, match=r"argument 1 \(b\) is a numpy.ndarray of shape \(4,\): only numpy "
                                                 "arrays of size one pass by value"):
        ADD((1,), (32,), (a, np.zeros(4, np.float32), a, 4))


@pytest.mark.parametrize("use, name", [
    (lambda x: cp.ElementwiseKernel("float32 x", "float32 y", "y = x", "copy"), "cupy.ElementwiseKernel"),
    (lambda x: cp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "sum"), "cupy.ReductionKernel"),
    (lambda x: cp.fuse()(lambda v: v + 1), "cupy.fuse"),
    (lambda x: cp.fft.fft(x), "cupy.fft.fft"),
    (lambda x: cp.cuda.cublas.sgemm(), "cupy.cuda.cublas.sgemm"),
    (lambda x: cp.dot(x, x), "cupy.dot"),
    (lambda x: x @ x, r"cupy.ndarray.__matmul__ \(@\)"),
    (lambda x: cp.linalg.solve(x, x), "cupy.linalg.solve"),
])
def test_an_unsupported_api_is_one_gpusim_error_line_naming_it(use, name):
    x = cp.ones((4, 4), dtype=cp.float32)
    with pytest.raises(gpusim.GpusimError, match=f"^{name} is not supported by gpusim.cupy: ") as e:
        use(x)
    assert not isinstance(e.value, AttributeError) and "\n" not in str(e.value)


def test_cooperative_groups_are_refused_with_the_reason():
    with pytest.raises(gpusim.UnsupportedKernel, match=r"enable_cooperative_groups=True\) is not supported .*"
                                                       r"relocatable device code"):
        cp.RawKernel(VECADD, "vecadd", enable_cooperative_groups=True)


@pytest.mark.slow
def test_bank_conflicts_equal_the_same_kernel_through_cuda_source():
    k = cp.RawKernel(COLUMN_READ, "transpose_tile")
    a = cp.asarray(RNG.random((32, 32), dtype=np.float32))
    out = cp.zeros_like(a)
    k((1,), (32, 32), (a, out, cp.int32(32)))
    host_in, host_out = a.get(), np.zeros((32, 32), np.float32)
    ref = gpusim.launch(gpusim.CudaSource(COLUMN_READ, "transpose_tile", options=("-ftz=true",)), 1, (32, 32),
                        (host_in, host_out, np.int32(32)), gpu="h100")
    name = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
    assert k.last_result.metrics[name] == ref.metrics[name] == 32 * 31      # 32 warps, 31 replays each
    assert np.array_equal(out.get(), host_in.T)


def test_a_view_points_into_its_allocation():
    x = cp.arange(64, dtype=cp.float32)
    MODULE.get_function("scale<float>")((1,), (32,), (x[32:], cp.float32(-1), cp.int32(32)))
    want = np.concatenate([np.arange(32), -np.arange(32, 64)]).astype(np.float32)
    assert np.array_equal(x.get(), want)
    assert x[32:].data.ptr == x.data.ptr + 32 * 4


def test_data_ptr_passed_as_an_int_is_that_pointer():
    x = cp.arange(8, dtype=cp.float32)
    MODULE.get_function("scale<float>")((1,), (32,), (x.data.ptr + 16, cp.float32(10), cp.int32(4)))
    assert np.array_equal(x.get(), np.array([0, 1, 2, 3, 40, 50, 60, 70], np.float32))


def test_kernels_flush_float_denormals_as_cupy_compiles_with_ftz():
    x = cp.asarray(np.array([1e-40, 1.0], np.float32))          # 1e-40 is a float32 denormal
    MODULE.get_function("scale<float>")((1,), (32,), (x, cp.float32(1), cp.int32(2)))
    assert x.get().tolist() == [0.0, 1.0]


@pytest.mark.slow
def test_events_read_the_predicted_kernel_time_timed_once_an_event_is_recorded():
    a = cp.ones(4096, dtype=cp.float32)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    ADD((16,), (256,), (a, a, a, 4096))
    end.record()
    end.synchronize()
    ns = ADD.last_result.metrics["gpu__time_duration.sum"]
    assert ns > 0 and cp.cuda.get_elapsed_time(start, end) == pytest.approx(ns / 1e6)


def test_an_event_interval_over_an_untimed_launch_is_refused():
    cp.set_timing(False)
    a = cp.ones(32, dtype=cp.float32)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    ADD((1,), (32,), (a, a, a, 32))
    end.record()
    with pytest.raises(gpusim.GpusimError, match=r"gpusim.cupy.set_timing\(True\)"):
        cp.cuda.get_elapsed_time(start, end)


def test_a_raw_kernel_launches_through_gpusim_launch_with_its_options():
    a = cp.arange(32, dtype=cp.float32)
    r = gpusim.launch(ADD, 1, 32, (a, a, a, np.int32(32)), gpu="h200", check="racecheck")
    assert np.array_equal(a.get(), 2 * np.arange(32, dtype=np.float32)) and r.hazards == []


@pytest.mark.slow                  # a kernel of its own through ptxas and nvdisasm
def test_printf_prints_when_the_kernel_completes(capsys):
    k = cp.RawKernel(r'extern "C" __global__ void hello(int n) { if (threadIdx.x == 0) printf("n=%d\n", n); }',
                     "hello")
    k((2,), (32,), (cp.int32(7),))
    assert capsys.readouterr().out == "n=7\nn=7\n"


def test_reductions_and_elements_are_0d_arrays_with_get():
    x = cp.arange(10, dtype=cp.float32)
    assert isinstance(x.sum(), cp.ndarray) and x.sum().get() == np.float32(45)
    assert x[3].shape == () and x[3].get() == np.float32(3)
    assert repr(x[:2]) == "array([0., 1.], dtype=float32)"


@pytest.mark.slow                  # a kernel of its own through ptxas and nvdisasm
def test_a_ptx_file_loads_as_a_raw_module(tmp_path):
    from gpusim.frontend.cudasource import compile_cuda
    ptx, _ = compile_cuda(VECADD, "", "vecadd", (), (9, 0))
    (tmp_path / "vecadd.ptx").write_text(ptx)
    a = cp.arange(64, dtype=cp.float32)
    cp.RawModule(path=str(tmp_path / "vecadd.ptx")).get_function("vecadd")((1,), (64,), (a, a, a, 64))
    assert np.array_equal(a.get(), 2 * np.arange(64, dtype=np.float32))
