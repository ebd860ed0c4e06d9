"""The Triton tensor-core programs (programs/triton_kernels: matmul, flash_attention) on both
tensor-core paths, and the record/compare scripts' conventions (validate/triton_record.py)."""
import numpy as np
import pytest

try:
    import triton  # noqa: F401
except ImportError:
    pytest.skip("triton not installed (optional extra: pip install -e '.[triton]')", allow_module_level=True)

import gpusim
from gpusim.errors import UnsupportedKernel
from gpusim.frontend.triton_autotune import Config
from gpusim.frontend.tritonsource import TritonSource
from programs.triton_kernels import flash_attention, matmul
from validate.triton_compare import _ulps
from validate.triton_record import CASES, load_case, ptx_arguments, specialisation

HMMA, GMMA = "sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__inst_executed_pipe_tensor_op_gmma.sum"


def _run(program, size, gpu, **kw):
    c = program.PROGRAM.case(size)
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu=gpu, **c.options, **kw)
    return c, r


@pytest.mark.slow
@pytest.mark.parametrize("size,gpu,counter", [("default", "h100", GMMA), ("default", "a100", HMMA),
                                              ("bf16", "h100", GMMA), ("fp8_e4m3", "h100", GMMA),
                                              ("fp8_e5m2", "a100", HMMA)])
def test_matmul_within_its_bound_on_the_preset_tensor_path(size, gpu, counter):
    c, r = _run(matmul, size, gpu)
    c.check()               # within 2^-20 (fp8 on sm_90: K/32 * 2^-13) of sum|a||b| of the exact product
    other = HMMA if counter == GMMA else GMMA
    assert r.metrics[counter] > 0 and r.metrics.get(other, 0) == 0


@pytest.mark.slow
def test_fp8_e4m3_for_sm80_is_one_line_naming_the_kernel():
    c = matmul.PROGRAM.case("fp8_e4m3")
    with pytest.raises(UnsupportedKernel) as e:
        gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="a100", **c.options)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("kernel matmul_kernel: ") and "matmul.py:" in msg and "fp8e4nv" in msg


@pytest.mark.slow
@pytest.mark.parametrize("size,gpu", [("default", "h100"), ("causal", "a100"), ("masked", "h100")])
def test_flash_attention_matches_float64_softmax(size, gpu):
    c, _ = _run(flash_attention, size, gpu)
    c.check()               # atol/rtol 4e-3 (f16 P and output, ex2.approx)


def test_causal_reference_ignores_later_keys():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 8, 4)) for _ in range(3))
    k2, v2 = k.copy(), v.copy()
    k2[:, 5:], v2[:, 5:] = 100.0, -100.0          # keys and values after query 4 changed
    a = flash_attention.reference(q, k, v, 0.5, True)
    b = flash_attention.reference(q, k2, v2, 0.5, True)
    assert np.array_equal(a[:, :5], b[:, :5]) and not np.allclose(a[:, 5:], b[:, 5:])


@pytest.mark.slow
def test_matmul_timed_counts_wgmma_and_has_a_time():
    _, r = _run(matmul, "default", "h100", timing=True)
    assert r.metrics["gpu__time_duration.sum"] > 0 and r.metrics[GMMA] > 0


@pytest.mark.parametrize("module,size", CASES)
def test_record_script_specialises_as_gpusim_does(module, size):
    # the GPU record's PTX-path arguments follow gpusim's TritonSource (ints equal to 1 constexpr, ...)
    c = load_case(module, size)
    sig, consts, attrs = specialisation(c)
    src = TritonSource(c.kernel, c.args, Config(c.options["constexprs"], c.options["num_warps"],
                                                c.options.get("num_stages", 3)))
    assert sig == src.signature and consts == src.constants and attrs == src.attrs
    want = [next(k for k, a in enumerate(c.args) if a is v) if isinstance(v, np.ndarray) else v
            for _, _, v in src.values]
    assert [a[1] if a[0] == "array" else a[2] for a in ptx_arguments(c, sig)] == want


def test_ulp_distance_of_neighbouring_and_signed_values():
    a = np.array([1.0, -1.0, 0.0, np.nan], np.float32)
    b = np.array([np.nextafter(np.float32(1), np.float32(2)), -1.0, -0.0, np.nan], np.float32)
    assert _ulps(a, b) == 1
    assert _ulps(np.array([np.float16(-0.5)]), np.array([np.float16(0.5)])) == 2 * 0x3800
