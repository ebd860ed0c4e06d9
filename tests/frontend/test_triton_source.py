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
from gpusim.frontend.rejections import _loc_before
from gpusim.frontend.triton_autotune import Config
from gpusim.frontend.tritonsource import TritonSource
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


@triton.jit
def _accumulate(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


_CONFIGS = [triton.Config({"BLOCK_SIZE": b}, num_warps=w) for b, w in ((128, 1), (256, 2), (1024, 4))]
_reset = triton.autotune(configs=_CONFIGS, key=["n"], reset_to_zero=["out_ptr"])(_accumulate)
_pruned = triton.autotune(configs=_CONFIGS, key=["n"], prune_configs_by={
    "early_config_prune": lambda configs, nargs, **kw: [c for c in configs if c.kwargs["BLOCK_SIZE"] >= nargs["n"] // 8]
})(_scale)
_modelled = triton.autotune(configs=_CONFIGS, key=["n"], prune_configs_by={
    "perf_model": lambda **kw: abs(kw["BLOCK_SIZE"] - 256), "top_k": 1})(_scale)
_hooked = triton.autotune(configs=_CONFIGS, key=["n"], pre_hook=lambda kwargs, reset_only=False: None)(_scale)
_cluster = triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 256}, num_ctas=2)], key=["n"])(_scale)
_maxnreg = triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 256}, maxnreg=64)], key=["n"])(_scale)


def _grid(n):
    return lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)


@pytest.mark.slow
def test_autotune_reset_to_zero_zeroes_the_argument_before_each_config():
    x = np.ones(1000, np.float32)
    out = np.full(1, 5.0, np.float32)          # Triton zeroes it before each config: the sum, not 5 + sum
    r = gpusim.launch(_reset, _grid(1000), None, (x, out, 1000), gpu="h100")
    assert out[0] == 1000.0 and len(r.extra["autotune"]["configs"]) == 3


def test_autotune_early_config_prune_runs_only_the_kept_configs():
    n = 3000
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    r = gpusim.launch(_pruned, _grid(n), None, (x, out, n, 2.0), gpu="h100")
    assert [c["constexprs"]["BLOCK_SIZE"] for c in r.extra["autotune"]["configs"]] == [1024]
    assert np.array_equal(out, 2 * x)


@pytest.mark.slow
def test_autotune_perf_model_keeps_its_top_k():
    x = np.arange(500, dtype=np.float32)
    out = np.zeros(500, np.float32)
    r = gpusim.launch(_modelled, _grid(500), None, (x, out, 500, 3.0), gpu="h100")
    assert [c["constexprs"]["BLOCK_SIZE"] for c in r.extra["autotune"]["configs"]] == [256]


@pytest.mark.parametrize("kernel,what", [(_hooked, "pre_hook="), (_cluster, "num_ctas=2")])
def test_autotune_features_gpusim_does_not_do_are_one_line_naming_the_kernel(kernel, what):
    with pytest.raises(UnsupportedKernel) as e:
        gpusim.launch(kernel, _grid(10), None, (np.zeros(10, np.float32), np.zeros(10, np.float32), 10, 1.0))
    assert str(e.value).startswith("kernel _scale: ") and what in str(e.value) and "\n" not in str(e.value)


@pytest.mark.slow
def test_autotune_maxnreg_reaches_the_ptx():
    x = np.arange(300, dtype=np.float32)
    out = np.zeros(300, np.float32)
    gpusim.launch(_maxnreg, _grid(300), None, (x, out, 300, 2.0), gpu="h100")
    src = TritonSource(_scale, (x, out, 300, 2.0), Config({"BLOCK_SIZE": 256}, 4, 3, 64))
    assert ".maxnreg 64" in src.compiled_triton((9, 0))[0] and np.array_equal(out, 2 * x)


@pytest.mark.slow
def test_autotune_with_timing_keeps_the_fastest_predicted_config():
    n = 1 << 16
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    r = gpusim.launch(_tuned, _grid(n), None, (x, out, n, 2.0), gpu="h100", timing=True)
    t = [c["time_ns"] for c in r.extra["autotune"]["configs"]]
    assert r.extra["autotune"]["chosen"] == int(np.argmin(t)) and np.array_equal(out, 2 * x)
    assert r.metrics["gpu__time_duration.sum"] == min(t)


@triton.jit
def _movmatrix(x_ptr, BLOCK_SIZE: tl.constexpr):
    offs = tl.arange(0, BLOCK_SIZE)
    v = tl.load(x_ptr + offs)
    w = tl.inline_asm_elementwise("movmatrix.sync.aligned.m8n8.trans.b16 $0, $1;", "=r,r", [v], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(x_ptr + offs, w)


def test_unimplemented_instruction_from_triton_names_kernel_and_python_line():
    with pytest.raises(UnsupportedKernel) as e:
        gpusim.launch(_movmatrix, (1,), None, (np.zeros(32, np.int32),), constexprs={"BLOCK_SIZE": 32}, num_warps=1)
    msg = str(e.value)
    assert "\n" not in msg and "movmatrix" in msg and "_movmatrix" in msg and "test_triton_source.py:" in msg


def test_unparsable_ptx_names_the_python_line_of_its_last_loc():
    text = '.file 1 "/a/k.py"\n.loc 1 7 3\nld.global.b32 %r1, [%rd1];\n.loc 1 9 1\nbad [%r, {x}];\n'
    assert _loc_before(text, 5) == " at /a/k.py:9" and _loc_before(text, 3) == " at /a/k.py:7"


def test_triton_kernels_are_assembled_by_tritons_own_ptxas(tmp_path):
    """Triton assembles with its bundled ptxas (12.8.93 in Triton 3.5 and 3.6, the measured
    machines' Triton too: docs/toolchain.md), so gpusim's SASS of a Triton GEMM is the SASS of the
    cubin Triton itself built for it: the same instructions in the same order."""
    import re
    import subprocess
    from cuda.pathfinder import find_nvidia_binary_utility
    from gpusim.api import resolve_gpu
    from gpusim.frontend.sass import ptxas_info, ptxas_version, sass_entry
    args = (np.zeros((64, 32), np.float16), np.zeros((32, 64), np.float16), np.zeros((64, 64), np.float32))
    src = TritonSource(_dot, args, Config({"BM": 64, "BN": 64, "BK": 32}, 4, 3))
    ck = src.compile(resolve_gpu("h100"), args)
    assert "release 12.8" in ptxas_version(ck.assembler)
    ours = [i.text for i in sass_entry(ptxas_info(ck.ptx, ck.entry, ck.cc, ptxas=ck.assembler).cubin,
                                       ck.entry).instructions]
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    own = triton.compile(ASTSource(_dot, dict(src.signature), constexprs=dict(src.constants), attrs=dict(src.attrs)),
                         target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 3}).asm["cubin"]
    (tmp_path / "own.cubin").write_bytes(own)
    text = subprocess.run([find_nvidia_binary_utility("nvdisasm"), "-c", str(tmp_path / "own.cubin")],
                          capture_output=True, text=True).stdout
    theirs = [ln.split("*/", 1)[1].strip().rstrip(";").strip() for ln in text.split(".text.")[-1].splitlines()
              if re.match(r"\s*/\*[0-9a-f]{4}\*/\s+[@A-Z]", ln)]
    assert len(ours) > 50 and ours == theirs[:len(ours)]


def test_a_kernel_launched_again_binds_each_launchs_arrays_and_keeps_none():
    """A launch with arguments of the kinds of an earlier one takes a copy of its bound source
    (triton_launch._source): each launch reads and writes its own arrays, a float16 launch after
    float32 ones is specialised for float16, and the kept source holds no launch's array."""
    import gc      # here: only this test watches what the kept sources hold
    import weakref  # here: as above
    from gpusim import triton_launch   # here: the module whose memo this test reads
    kw = dict(constexprs={"BLOCK_SIZE": 256}, num_warps=4, gpu="h100")
    for k in range(3):
        x = np.arange(300, dtype=np.float32) + k
        out = np.zeros(300, np.float32)
        gpusim.launch(_scale, (2,), None, (x, out, 300, 2.0), **kw)
        assert np.array_equal(out, x * np.float32(2.0))
    h = np.arange(300, dtype=np.float16)
    hout = np.zeros(300, np.float16)
    gpusim.launch(_scale, (2,), None, (h, hout, 300, 2.0), **kw)
    assert np.array_equal(hout, (h.astype(np.float32) * 2).astype(np.float16))
    ref = weakref.ref(hout)
    del hout
    gc.collect()
    assert ref() is None, "a kept TritonSource holds a launch's array"
    kept = [s for s in triton_launch._SOURCES.values() if s.fn is _scale]
    assert kept and all(v is None for s in kept for _, ty, v in s.values if ty[0] == "*")
