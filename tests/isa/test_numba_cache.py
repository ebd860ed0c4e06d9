"""numba's disk cache stamped by import closure (`isa.numba_cache`): an edit of a callee's file
compiles its cached callers again, where numba alone would load them with the old callee in."""
import os
import subprocess
import sys
import textwrap

from numba.core import caching

from isa import numba_cache
from isa.semantics import mma_batch
from gpusim.functional import wgmma_operands

RUN = """
import sys
sys.path.insert(0, {root!r})
from isa import numba_cache
numba_cache.watch({root!r}, ("pa",))
from pa.a import f
print(f())
"""


def _write(path, text):
    path.write_text(textwrap.dedent(text))


def _run(tmp_path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", RUN.format(root=str(tmp_path))], capture_output=True, text=True,
                         env=env, cwd=str(tmp_path), timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()[-1]


def test_an_edit_of_a_callee_recompiles_its_cached_caller(tmp_path):
    (tmp_path / "pa").mkdir()
    _write(tmp_path / "pa" / "__init__.py", "")
    _write(tmp_path / "pa" / "b.py", """
        from numba import njit
        @njit(cache=True)
        def g():
            return 1
        """)
    _write(tmp_path / "pa" / "a.py", """
        from numba import njit
        from pa.b import g
        @njit(cache=True)
        def f():
            return g() + 10
        """)
    assert _run(tmp_path) == "11"
    assert any(p.suffix == ".nbi" for p in (tmp_path / "pa" / "__pycache__").iterdir())   # f was cached
    _write(tmp_path / "pa" / "b.py", """
        from numba import njit
        @njit(cache=True)
        def g():
            return 2
        """)
    assert _run(tmp_path) == "12"                        # (numba's own stamp, a.py's bytes alone: 11)


def test_the_tensor_core_callers_depend_on_the_kernel_file():
    files = numba_cache._closure(os.path.abspath(wgmma_operands.__file__))
    names = {os.path.relpath(f, numba_cache.ROOT) for f in files}
    assert {"isa/semantics/mma_kernel.py", "isa/semantics/mma_batch.py", "gpusim/functional/stack_kernels.py"} <= names
    assert "gpusim/functional/executor.py" not in names   # no compiled functions, imported by none of them


def test_project_functions_get_the_stamped_locator():
    cls = type(mma_batch._packed._cache._impl.locator)
    assert cls.__name__.startswith("Closure") and cls in numba_cache._LOCATORS.values()
    assert all(c not in caching.CacheImpl._locator_classes for c in numba_cache._LOCATORS)   # replaced, once
