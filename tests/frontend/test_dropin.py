"""`from gpusim import cuda` as a drop-in for numba.cuda: typing, device functions,
launch configuration, device arrays."""
from __future__ import annotations

import numpy as np
import pytest

import gpusim.api
from gpusim import cuda
from gpusim.frontend.args import marshal
from gpusim.frontend.compile import compile_kernel


@cuda.jit
def add_tid(a):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < a.size:
        a[i] += cuda.threadIdx.x


@cuda.jit(device=True)
def poly(x, y):
    return x * x + 2 * y


@cuda.jit(device=True)
def fib(k):
    if k < 2:
        return k
    return fib(k - 1) + fib(k - 2)


@cuda.jit("float32(float32)", device=True)
def halve(x):
    return x / 2


@cuda.jit
def uses_devices(out, x, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = poly(x[i], x[(i + 1) % n]) + fib(i % 8) + halve(x[i])


@cuda.jit("void(float32[:], int32)")
def with_signature(out, n):
    sm = cuda.shared.array(32, dtype=cuda.float32)
    i = cuda.grid(1)
    sm[cuda.threadIdx.x] = i
    cuda.syncthreads()
    if i < n:
        out[i] = sm[31 - cuda.threadIdx.x]


class FakeResult:
    pass


@pytest.fixture
def launches(monkeypatch):
    """Replace gpusim.api.launch; record each call's arguments."""
    calls = []

    def fake_launch(kernel, grid, block, args, gpu="h100", timing=False, shared_bytes=0, **options):
        calls.append(dict(kernel=kernel, grid=grid, block=block, args=args, gpu=gpu, shared_bytes=shared_bytes))
        return FakeResult()

    monkeypatch.setattr(gpusim.api, "launch", fake_launch)
    yield calls
    cuda.set_gpu("h100")


def test_dropin_kernel_using_threadidx_compiles():
    ck = compile_kernel(add_tid, (np.zeros(64, np.int32),))
    assert ck.pyfunc is add_tid.py_func and ck.name == "add_tid"
    assert ck.entry in ck.ptx and "%tid.x" in ck.ptx and ".loc" in ck.ptx


def test_dropin_device_functions_compile_inlined_and_recursive():
    x = np.ones(8, np.float32)
    ck = compile_kernel(uses_devices, (np.zeros(8, np.float32), x, 8))
    assert ".func" in ck.ptx                     # the recursive fib cannot be inlined
    assert "inlined_at" in ck.ptx               # poly/halve were, with their own line info
    assert "call" in ck.ptx


def test_explicit_signature_types_the_arguments():
    ck = compile_kernel(with_signature, (np.zeros(64, np.float32), 64))
    assert [str(t) for t in ck.argtypes] == ["array(float32, 1d, A)", "int32"]


def test_explicit_signature_converts_a_python_int_to_the_declared_int32(fake_mem):
    args = (np.zeros(64, np.float32), 64)
    ck = compile_kernel(with_signature, args)
    m = marshal(ck, args, fake_mem)
    last = ck.kernel.params[-1]
    assert last.type == "u32" and m.params[last.name] == (64).to_bytes(4, "little")


def test_explicit_signatures_refuse_other_dtypes():
    listed = cuda.jit(["void(float32[:], int32)", "void(int32[:], int32)"])(with_signature.py_func)
    with pytest.raises(gpusim.UnsupportedKernel, match="No matching definition"):
        compile_kernel(listed, (np.zeros(64, np.float64), 64))


def test_single_signature_is_specialized_and_takes_any_argument_types_as_numba_does():
    ck = compile_kernel(with_signature, (np.zeros(64, np.float64), 64))
    assert with_signature.specialized and [str(t) for t in ck.argtypes] == ["array(float32, 1d, A)", "int32"]


def test_launch_passes_grid_block_and_default_shared(launches):
    a = np.zeros(64, np.int32)
    assert add_tid[2, 32](a) is None
    (call,) = launches
    assert (call["kernel"], call["grid"], call["block"]) == (add_tid, (2, 1, 1), (32, 1, 1))   # normalized as Numba does
    assert (call["shared_bytes"], call["gpu"]) == (0, "h100")
    assert call["args"][0] is a
    assert isinstance(add_tid.last_result, FakeResult)


def test_launch_with_stream_and_dynamic_shared_on_chosen_gpu(launches):
    cuda.set_gpu("h200")
    add_tid[(2, 2), (8, 4), cuda.stream(), 128](np.zeros(4, np.int32))
    assert (launches[0]["grid"], launches[0]["block"], launches[0]["shared_bytes"], launches[0]["gpu"]) == \
        ((2, 2, 1), (8, 4, 1), 128, "h200")


def test_set_gpu_rejects_unknown_preset():
    with pytest.raises(gpusim.ConfigError, match="unknown GPU preset"):
        cuda.set_gpu("rtx9999")


def test_kernel_without_configuration_is_a_value_error_and_device_function_launch_a_runtime_error():
    with pytest.raises(ValueError, match="launch configuration"):
        add_tid(np.zeros(4))
    with pytest.raises(RuntimeError, match="device function"):
        poly[1, 1](1.0, 2.0)
    with pytest.raises(ValueError, match="griddim and blockdim"):
        add_tid[1]


def test_to_device_copy_to_host_round_trip():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = cuda.to_device(x)
    x[0, 0] = 99                                  # the device copy is independent
    assert (d.shape, d.dtype, d.size, d.ndim) == ((3, 4), np.float32, 12, 2)
    back = d.copy_to_host()
    assert back[0, 0] == 0 and back.tolist()[1] == [4, 5, 6, 7]
    out = np.empty_like(x)
    assert d.copy_to_host(out) is out and out[2, 3] == 11
    assert np.asarray(d)[1, 1] == 5 and d[1, 1] == 5 and d[1].shape == (4,)


def test_device_array_constructors():
    assert cuda.device_array((2, 3), np.int16).copy_to_host().tolist() == [[0] * 3] * 2
    f = cuda.device_array_like(np.asfortranarray(np.ones((2, 3))))
    assert f.is_f_contiguous() and not f.is_c_contiguous()
    assert isinstance(cuda.pinned_array(4), np.ndarray)


def test_device_array_types_like_its_host_array():
    d = cuda.to_device(np.zeros((4, 4), np.float64))
    ck = compile_kernel(add_tid, (cuda.to_device(np.zeros(8, np.int32)),))
    assert str(ck.argtypes[0]) == "array(int32, 1d, C)"
    assert str(d._numba_type_) == "array(float64, 2d, C)"


def test_device_array_is_updated_in_place_and_shared_when_passed_twice(fake_mem):
    d = cuda.to_device(np.zeros(4, np.float32))
    ck = compile_kernel(two_arrays, (d, d))
    m = marshal(ck, (d, d), fake_mem)
    assert len(fake_mem.buffers) == 1                  # one allocation, as on a device
    (addr,) = fake_mem.buffers
    fake_mem.device(addr, np.float32, (4,))[...] = [1, 2, 3, 4]
    m.copy_back(fake_mem)
    assert d.copy_to_host().tolist() == [1, 2, 3, 4]


def two_arrays(a, b):
    a[0] = b[1]


def test_device_description_follows_the_chosen_preset(launches):
    cuda.set_gpu("a100")
    dev = cuda.get_current_device()
    assert dev.compute_capability == (8, 0) and "A100" in dev.name
    assert cuda.is_available() is True and cuda.synchronize() is None


def test_host_only_api_says_so():
    with pytest.raises(AttributeError, match="host/driver API"):
        cuda.open_ipc_array(0, (4,), np.float32)


def make_scaler(factor, helper):
    @cuda.jit
    def scaler(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = helper(a[i]) * factor
    return scaler


def test_closure_captured_device_function_and_constants_key_the_cache():
    from gpusim.frontend.compile import cache_stats
    a = np.zeros(8, np.float32)
    k2, k3, k2_again = make_scaler(2.0, poly_one), make_scaler(3.0, poly_one), make_scaler(2.0, poly_one)
    p2 = compile_kernel(k2, (a,)).ptx
    p3 = compile_kernel(k3, (a,)).ptx
    assert compile_kernel(k2_again, (a,)).ptx == p2        # same code, same captured values: a hit
    assert p2 != p3
    stats = cache_stats()
    assert (stats.compiles, stats.memory_hits) == (2, 1)


@cuda.jit(device=True)
def poly_one(x):
    return poly(x, x)


def test_an_intrinsic_can_compile_a_dropin_device_function_as_a_subroutine():
    import numpy as np
    from numba.cuda import types
    from numba.cuda.extending import intrinsic
    from gpusim import cuda

    twice = cuda.jit(device=True)(lambda x: 2 * x)
    sig = types.int32(types.int32)

    @intrinsic
    def call_twice(typingctx, v):
        def codegen(context, builder, signature, args):
            cres = context.compile_subroutine(builder, twice, sig, caching=False)   # keys on twice.__code__
            return context.call_internal(builder, cres.fndesc, sig, args)
        return sig, codegen

    @cuda.jit
    def kernel(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] = call_twice(x[i])

    x = np.arange(5, dtype=np.int32)
    kernel[1, 32](x)
    assert x.tolist() == [0, 2, 4, 6, 8]
