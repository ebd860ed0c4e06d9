"""Triton kernels launched on numpy arrays (gpusim/frontend/tritonsource.py, programs/triton_kernels)."""
import numpy as np
import pytest

try:
    import triton
    import triton.language as tl
except ImportError:
    pytest.skip("triton not installed (optional extra: pip install -e '.[triton]')", allow_module_level=True)

import gpusim
from dependency_skips import is_missing_dependency
from gpusim.errors import LaunchError, UnsupportedKernel
from programs.triton_kernels import layer_norm, softmax, vector_add


@triton.jit
def _scale(x_ptr, out_ptr, n, factor, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * factor, mask=m)


@triton.jit
def _bad_arange(x_ptr, BLOCK_SIZE: tl.constexpr):
    offs = tl.arange(0, BLOCK_SIZE)
    tl.store(x_ptr + offs, offs)


@triton.jit
def _dot(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    r, c, k = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(A + r[:, None] * BK + k[None, :])
    b = tl.load(B + k[:, None] * BN + c[None, :])
    tl.store(C + r[:, None] * BN + c[None, :], tl.dot(a, b))


_tuned = triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=2),
                                  triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)], key=["n"])(_scale)


def _run(program, **kw):
    c = program.PROGRAM.case()
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", **c.options, **kw)
    return c, r


def test_vector_add_bit_exact():
    c, _ = _run(vector_add)
    assert np.array_equal(c.args[2], c.expected[2])


@pytest.mark.parametrize("program", [softmax, layer_norm])
def test_reductions_match_numpy(program):
    c, _ = _run(program)
    c.check()          # rtol 1e-5: ex2.approx / tree-sum order (the programs' docstrings)


def test_exact_call_of_the_issue():
    n = 5000
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    gpusim.launch(_scale, (triton.cdiv(n, 1024),), None, (x, out, n, 2.5), constexprs={"BLOCK_SIZE": 1024},
                  num_warps=4, num_stages=3, gpu="h100", timing=False)
    assert np.array_equal(out, x * np.float32(2.5))


def test_int_equal_to_one_is_specialised_away():
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    gpusim.launch(_scale, (1,), None, (x, out, 1, 3.0), constexprs={"BLOCK_SIZE": 16}, num_warps=1, gpu="h100")
    assert out.tolist() == [0.0, 0.0, 0.0, 0.0]          # only element 0 stored (0 * 3)
    x[0] = 2.0
    gpusim.launch(_scale, (1,), None, (x, out, 1, 3.0), constexprs={"BLOCK_SIZE": 16}, num_warps=1, gpu="h100")
    assert out.tolist() == [6.0, 0.0, 0.0, 0.0]


@pytest.mark.slow
def test_timed_launch_has_time_and_counters():
    _, r = _run(vector_add, timing=True)
    assert np.isfinite(r.metrics["gpu__time_duration.sum"]) and r.metrics["gpu__time_duration.sum"] > 0
    assert r.metrics["smsp__inst_executed.sum"] > 0


def test_compile_error_names_kernel_and_line():
    with pytest.raises(UnsupportedKernel, match=r"kernel _bad_arange: .*test_triton_source.py:\d+: .*power of 2"):
        gpusim.launch(_bad_arange, (1,), None, (np.zeros(8, np.int32),), constexprs={"BLOCK_SIZE": 6})


def test_tl_dot_runs_as_wgmma_and_equals_numpy():
    # small integers in f16: every product and partial sum is exact, so the f32 result is too
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (64, 32)).astype(np.float16)
    b = rng.integers(-4, 5, (32, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    r = gpusim.launch(_dot, (1,), None, (a, b, c), constexprs={"BM": 64, "BN": 64, "BK": 32}, num_warps=4, gpu="h100")
    assert np.array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
    assert r.metrics["sm__inst_executed_pipe_tensor_op_gmma.sum"] > 0


def test_autotune_runs_every_config_and_keeps_first_without_timing():
    n = 3000
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    r = gpusim.launch(_tuned, lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),), None, (x, out, n, 2.0),
                      gpu="h100")
    assert np.array_equal(out, 2 * x)
    tuned = r.extra["autotune"]
    assert [c["constexprs"]["BLOCK_SIZE"] for c in tuned["configs"]] == [256, 1024] and tuned["chosen"] == 0


def test_constexprs_for_a_numba_kernel_refused():
    from programs.vector_add import vector_add as numba_add
    with pytest.raises(LaunchError, match="for Triton kernels"):
        gpusim.launch(numba_add, (1,), (32,), (np.zeros(1), np.zeros(1), np.zeros(1)), num_warps=4)


def test_optional_extra_skip_is_not_a_missing_dependency():
    assert not is_missing_dependency("triton not installed (optional extra: pip install -e '.[triton]')")
    assert is_missing_dependency("triton not installed")
