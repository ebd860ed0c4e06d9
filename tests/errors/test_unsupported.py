"""Numba features gpusim cannot run: an UnsupportedKernel (a GpusimError) naming what and where."""
import numpy as np
import pytest

import gpusim
import isa.errors
from gpusim.errors import GpusimError, PtxSyntaxError, UnsupportedCall, UnsupportedInstruction, UnsupportedKernel, \
    from_isa

from bad_inputs import grid_sync, recursive, stream_in_kernel


def test_grid_sync_under_the_timing_model_is_refused_as_not_modelled():
    with pytest.raises(UnsupportedKernel) as e:
        gpusim.launch(grid_sync, 1, 32, (np.zeros(32, np.int64),), timing=True)
    msg = str(e.value)
    assert "timing model does not model a grid barrier" in msg and isinstance(e.value, GpusimError)


def test_grid_sync_runs_functionally():
    a = np.zeros(32, np.int64)
    gpusim.launch(grid_sync, 1, 32, (a,))
    assert a.sum() == 32


def test_recursion_without_signature_names_the_function():
    with pytest.raises(UnsupportedKernel, match=r"device function fact is recursive \(fact -> fact\).*bad_inputs.py:55"):
        gpusim.launch(recursive, 1, 32, (np.zeros(1, np.int64),))


def test_stream_inside_a_kernel_names_the_line():
    with pytest.raises(UnsupportedKernel, match=r"stream.*bad_inputs.py:66: s = cuda.stream\(\)"):
        gpusim.launch(stream_in_kernel, 1, 32, (np.zeros(1, np.int64),))


@pytest.mark.parametrize("err, cls", [
    (isa.errors.PtxSyntaxError("unmatched '}'", 12, "}"), PtxSyntaxError),
    (isa.errors.UnsupportedCall("recursive device function f", callee="f", ptx_line=3), UnsupportedCall),
    (isa.errors.UnsupportedInstruction("wgmma.mma_async", ptx_line=40), UnsupportedInstruction),
])
def test_isa_errors_become_gpusim_errors_keeping_their_fields(err, cls):
    g = from_isa(err)
    assert isinstance(g, cls) and isinstance(g, GpusimError) and isinstance(g, type(err))
    assert g.ptx_line == err.ptx_line and str(g) == str(err)


def test_grid_sync_from_the_command_line_is_one_line_with_exit_6(run_cli, tmp_path):
    path = tmp_path / "gridsync.py"
    path.write_text(USER_GRID_SYNC)
    code, _, err = run_cli("run", str(path))
    from bad_inputs import one_line
    assert code == 6 and "does not model a grid barrier" in one_line(err)


USER_GRID_SYNC = '''
import numpy as np
from numba import cuda
from programs.base import Case, ProgramSpec


@cuda.jit
def all_wait(a):
    g = cuda.cg.this_grid()
    g.sync()


def build(rng, n):
    return Case("all_wait", all_wait, (1,), (32,), (np.zeros(n),), {})


PROGRAM = ProgramSpec("all_wait", "grid sync", build, sizes={"default": {"n": 32}})
'''


def test_ptx_that_does_not_parse_is_a_gpusim_error_naming_kernel_and_line():
    import dataclasses
    from gpusim.frontend.compile import compile_kernel
    from bad_inputs import copy
    a = np.zeros(4, np.float32)
    ck = compile_kernel(copy, (a, a))
    broken = dataclasses.replace(ck, ptx=ck.ptx.replace("ret;", "ret", 1))       # a statement without ';'
    with pytest.raises(PtxSyntaxError) as e:
        broken.kernel                     # noqa: B018 (the property parses the PTX)
    assert isinstance(e.value, GpusimError) and str(e.value).startswith("kernel copy: ")
    assert "PTX line" in str(e.value)
