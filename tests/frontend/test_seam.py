"""The front-end seam (gpusim/frontend/source.py): every language yields one CompiledKernel, and
nothing below the seam imports a language."""
import re
from pathlib import Path

import numpy as np
from numba import cuda

from gpusim.frontend.numbasource import NumbaSource, as_source
from gpusim.frontend.source import CompiledKernel, KernelSource
from gpusim.api import resolve_gpu

H100 = resolve_gpu("h100")
ROOT = Path(__file__).resolve().parents[2]
LANGUAGE_MODULES = r"gpusim\.frontend\.(compile|numbasource|numbacompile|args|argtypes|dispatcher|retarget|nrt|" \
                   r"kernel_exceptions|captured|ptxsource|cudasource|rawargs|nvrtc)\b|numba\.cuda"


@cuda.jit
def scale(x, a):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= a


def test_numba_kernel_compiles_to_a_compiled_kernel_with_its_params():
    src = as_source(scale)
    assert isinstance(src, NumbaSource) and isinstance(src, KernelSource)
    ck = src.compile(H100, (np.ones(4, np.float32), np.float32(2)))
    assert isinstance(ck, CompiledKernel) and ck.language == "numba"
    assert [p.name for p in ck.params] == ["x", "a"]
    assert ck.params[1].type == "float32"
    assert ck.describe_arg(1) == "argument 1 (a)"
    assert ck.entry in ck.ptx and ck.cc == (9, 0)


def test_a_source_is_its_own_source():
    src = NumbaSource(scale)
    assert as_source(src) is src


def test_line_table_points_into_the_python_file():
    ck = as_source(scale).compile(H100, (np.ones(4, np.float32), np.float32(2)))
    files = {f for f, _ in ck.line_table.values()}
    assert files == {__file__}
    assert max(line for _, line in ck.line_table.values()) <= scale.py_func.__code__.co_firstlineno + 4


def test_nothing_below_the_seam_imports_a_language():
    below = [*(ROOT / "gpusim" / "functional").rglob("*.py"), *(ROOT / "gpusim" / "timing").rglob("*.py"),
             *(ROOT / "gpusim" / "frontend" / "sass").rglob("*.py")]
    offenders = [f"{p.relative_to(ROOT)}: {line.strip()}" for p in below for line in p.read_text().splitlines()
                 if re.match(r"\s*(from|import)\s", line) and re.search(LANGUAGE_MODULES, line)]
    assert offenders == []
