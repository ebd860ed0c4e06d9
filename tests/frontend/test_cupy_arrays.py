"""The host side of the CuPy drop-in: arrays on numpy with CuPy's methods and results, the
simulated device as cupy.cuda answers for it, cupy.random's subset, and RawModule's
refusals that need no launch."""
import numpy as np
import pytest

import gpusim
import gpusim.cupy as cp


@pytest.fixture(autouse=True)
def _h100():
    cp.set_gpu("h100")
    yield
    cp.set_gpu("h100")


def test_asarray_copies_a_host_array_and_get_returns_a_numpy_copy():
    host = np.arange(6, dtype=np.float32)
    d = cp.asarray(host)
    host[0] = 99
    assert type(d) is cp.ndarray and d[0] == 0                      # a copy, as a transfer to the device
    back = d.get()
    assert type(back) is np.ndarray and np.array_equal(back, np.arange(6, dtype=np.float32))
    back[1] = 7
    assert d[1] == 1 and cp.asarray(d) is d


def test_set_copies_a_host_array_of_the_same_shape_and_dtype():
    d = cp.zeros(3, dtype=cp.int32)
    d.set(np.array([4, 5, 6], np.int32))
    assert cp.asnumpy(d).tolist() == [4, 5, 6]
    with pytest.raises(TypeError, match="int32 array cannot be set to float64 array"):
        d.set(np.zeros(3))


def test_numpy_functions_and_operators_give_cupy_arrays():
    x = cp.arange(12, dtype=cp.float32).reshape(3, 4)
    for r in (x + 1, x.T, cp.sqrt(x), cp.concatenate([x, x]), cp.where(x > 3, x, 0), cp.sum(x, axis=0),
              cp.linspace(0, 1, 5), x.max()):
        assert type(r) is cp.ndarray
    assert float(cp.linalg.norm(x)) == pytest.approx(np.linalg.norm(np.arange(12)))


def test_views_share_the_allocation_and_point_into_it():
    x = cp.zeros((4, 8), dtype=cp.float64)
    assert x[1].data.ptr == x.data.ptr + 8 * 8 and x[1].data.mem is x.data.mem
    y = cp.zeros(1, dtype=cp.float64)
    assert abs(y.data.ptr - x.data.ptr) >= x.nbytes                 # another allocation, elsewhere
    assert x.data.ptr % 512 == 0 and y.data.ptr % 512 == 0


def test_an_array_made_on_a_memory_pointer_views_that_memory():
    raw = cp.arange(8, dtype=cp.uint8)
    f = cp.ndarray((2,), cp.float32, memptr=raw.data)
    f[0] = 1.0
    assert cp.asnumpy(raw[:4]).tolist() == [0, 0, 128, 63]            # 1.0f, little-endian


def test_the_device_answers_for_the_preset():
    assert cp.cuda.Device().compute_capability == "90"
    props = cp.cuda.runtime.getDeviceProperties(0)
    assert props["name"] == b"NVIDIA H100 SXM5 80GB" and props["multiProcessorCount"] == 132
    cp.set_gpu("a100")
    assert cp.cuda.Device(0).compute_capability == "80" and cp.cuda.runtime.getDeviceProperties(0)["major"] == 8
    with pytest.raises(gpusim.LaunchError, match="one device, 0"):
        cp.cuda.Device(1)


def test_an_unknown_preset_is_refused():
    with pytest.raises(gpusim.ConfigError):
        cp.set_gpu("h900")


def test_random_draws_the_requested_dtype_and_repeats_after_seed():
    cp.random.seed(5)
    a = cp.random.rand(4, dtype=cp.float32)
    cp.random.seed(5)
    b = cp.random.rand(4, dtype=cp.float32)
    assert type(a) is cp.ndarray and a.dtype == np.float32 and np.array_equal(a.get(), b.get())
    g = cp.random.default_rng(1).standard_normal(3, dtype=cp.float32)
    assert g.dtype == np.float32 and g.shape == (3,)
    assert cp.random.randint(0, 3, size=100).max() <= 2


def test_a_name_neither_cupy_nor_numpy_has_is_an_attribute_error():
    with pytest.raises(AttributeError, match="'gpusim.cupy' has no attribute 'no_such_thing'"):
        cp.no_such_thing  # noqa: B018


@pytest.mark.parametrize("make, match", [
    (lambda: cp.RawKernel("", "k", backend="nvcc"), r"backend='nvcc'\) is not supported .* NVRTC only"),
    (lambda: cp.RawKernel("", "k", jitify=True), r"jitify=True\) is not supported"),
    (lambda: cp.RawModule(path="kernels.cubin"), r"a \.cubin or \.fatbin holds machine code for a real GPU"),
    (lambda: cp.RawModule(), "one of the two"),
])
def test_raw_kernels_refuse_what_gpusim_cannot_compile(make, match):
    with pytest.raises(gpusim.UnsupportedKernel, match=match):
        make()


def test_a_kernel_the_module_does_not_define_is_named_with_the_module_kernels():
    mod = cp.RawModule(code='extern "C" __global__ void only(float* x) { x[0] = 1.0f; }')
    with pytest.raises(gpusim.UnsupportedKernel, match=r"kernel other: the module defines no kernel other "
                                                       r"\(its kernels: only\)"):
        mod.get_function("other").compile()
