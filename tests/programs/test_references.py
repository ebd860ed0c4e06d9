"""The program library: every kernel agrees with its numpy reference (run under
Numba's CUDA simulator, in subprocesses), compiles to PTX at its default size, and
honours the ProgramSpec contract. One property per test."""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import programs

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _cudasim_check  # noqa: E402  (SMALL only: importing it sets no environment)

HELPER = HERE / "_cudasim_check.py"
NAMES = list(programs.PROGRAMS)
REQUIRED = {
    "vector_add", "saxpy", "reduce_interleaved_divergent", "reduce_interleaved_strided",
    "reduce_sequential", "reduce_first_add", "reduce_warp_shuffle", "transpose_naive",
    "transpose_shared", "transpose_padded", "matmul_naive", "matmul_tiled",
    "histogram_global", "histogram_shared", "stencil_1d", "softmax_rows",
    "divergence_demo", "bank_conflict_demo",
}
SIM_TIMEOUT_S = 240

BROKEN_PROGRAM = textwrap.dedent('''
    """A deliberately wrong kernel: computes a - b against the reference a + b."""
    import numpy as np
    from numba import cuda
    from programs.base import Case, ProgramSpec

    @cuda.jit
    def broken_add(a, b, c):
        i = cuda.grid(1)
        if i < c.size:
            c[i] = a[i] - b[i]

    def build(rng, n):
        a = rng.uniform(1, 2, n).astype(np.float32)
        b = rng.uniform(1, 2, n).astype(np.float32)
        c = np.full(n, np.nan, np.float32)
        return Case("broken_add", broken_add, ((n + 255) // 256,), (256,), (a, b, c), {2: a + b})

    PROGRAM = ProgramSpec("broken_add", "wrong on purpose", build, sizes={"default": {"n": 300}})
''')


@pytest.fixture(scope="module")
def cudasim_results(tmp_path_factory) -> dict[str, dict]:
    """Run every program (and one broken user file) under the CUDA simulator, split
    over a few parallel subprocesses; name -> the helper's JSON result."""
    broken = tmp_path_factory.mktemp("user") / "broken_add.py"
    broken.write_text(BROKEN_PROGRAM)
    targets = NAMES + [str(broken)]
    workers = max(1, min(4, os.cpu_count() or 1))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONWARNINGS="ignore")
    procs = [subprocess.Popen([sys.executable, str(HELPER), *targets[w::workers]],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for w in range(workers)]
    results = {}
    for p in procs:
        out, err = p.communicate(timeout=SIM_TIMEOUT_S)
        for line in out.splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                results[row["name"]] = row | {"stderr": err[-2000:]}
    results["broken_add"] = results.pop(str(broken), None)
    return results


def test_library_has_the_required_programs_and_at_least_17():
    assert REQUIRED <= set(NAMES), f"missing: {sorted(REQUIRED - set(NAMES))}"
    assert len(NAMES) >= 17


def test_programs_are_sorted_by_name():
    assert NAMES == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_kernel_matches_reference_under_cudasim(cudasim_results, name):
    row = cudasim_results.get(name)
    assert row is not None, f"{name}: the simulator subprocess printed no result"
    assert row["ok"], f"{name}: {row['error']}\n{row['stderr']}"


def test_harness_reports_a_wrong_kernel(cudasim_results):
    row = cudasim_results["broken_add"]
    assert row is not None and not row["ok"]
    assert "differs from the numpy reference" in row["error"]


def test_every_program_has_a_shrunk_simulator_size():
    assert set(_cudasim_check.SMALL) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_shrunk_size_has_two_blocks(name):
    case = programs.get(name).case(_cudasim_check.SMALL[name])
    assert int(np.prod(case.grid)) >= 2


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
                    reason="compile_ptx needs the real CUDA target, not the simulator")
@pytest.mark.parametrize("name", NAMES)
def test_kernel_compiles_to_ptx_at_default_size(name):
    import numba
    from numba import cuda
    case = programs.get(name).case("default")
    argtypes = tuple(numba.typeof(a) for a in case.args)
    ptx, _ = cuda.compile_ptx(case.kernel.py_func, argtypes, cc=(9, 0))
    assert ".entry" in ptx


@pytest.mark.parametrize("name", NAMES)
def test_default_size_is_simulator_sized(name):
    """'default' runs in a Python simulator in a few seconds: 2k to 2^18 threads (the teaching
    families, transpose and reduction, need the top of that range for their lesson to show)."""
    case = programs.get(name).case("default")
    threads = int(np.prod(case.grid) * np.prod(case.block))
    assert 2048 <= threads <= 1 << 18, threads


@pytest.mark.parametrize("name", NAMES)
def test_spec_has_a_default_a_large_and_a_third_named_size(name):
    spec = programs.get(name)
    assert {"default", "large"} <= set(spec.sizes) and len(spec.sizes) >= 3
    assert spec.description and spec.tags


@pytest.mark.parametrize("name", NAMES)
def test_expected_outputs_match_argument_shapes_and_dtypes(name):
    case = programs.get(name).case("default")
    assert case.expected, name
    for idx, want in case.expected.items():
        arg = case.args[idx]
        assert isinstance(arg, np.ndarray)
        assert (arg.shape, arg.dtype) == (want.shape, want.dtype), idx


@pytest.mark.parametrize("name", NAMES)
def test_unlaunched_outputs_fail_the_check(name):
    """The check is not vacuous: outputs as built (sentinels or zeros) differ from
    the reference, so a kernel that writes nothing fails."""
    case = programs.get(name).case(_cudasim_check.SMALL[name])
    with pytest.raises(AssertionError, match=name):
        case.check()


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_gives_same_inputs(name):
    spec = programs.get(name)
    a, b = spec.case("default", seed=3), spec.case("default", seed=3)
    for x, y in zip(a.args, b.args):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name", NAMES)
def test_module_has_a_docstring_naming_the_program(name):
    module = importlib.import_module(f"programs.{name}")
    assert module.__doc__ and module.__doc__.startswith(name)


def test_get_unknown_name_lists_available_programs():
    with pytest.raises(KeyError, match="vector_add"):
        programs.get("no_such_program")


def test_load_file_returns_the_program_it_defines(tmp_path):
    path = tmp_path / "broken_add.py"
    path.write_text(BROKEN_PROGRAM)
    spec = programs.load_file(path)
    assert spec.name == "broken_add"
    assert spec.case().grid == (2,)


def test_load_file_without_program_raises(tmp_path):
    path = tmp_path / "nothing.py"
    path.write_text("X = 1\n")
    with pytest.raises(TypeError, match="PROGRAM"):
        programs.load_file(path)
