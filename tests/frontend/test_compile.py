"""compile_kernel: PTX with line info, the entry name, the two caches, and errors."""
from __future__ import annotations

import inspect
import os
import re

import numpy as np
import pytest
from numba.cuda.core.errors import TypingError
from numba import cuda

from gpusim.errors import LaunchError, UnsupportedKernel
from gpusim.frontend.compile import cache_stats, clear_memory_cache, compile_kernel


def saxpy(out, x, y, a, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a * x[i] + y[i]


@cuda.jit
def scale(a, s):
    i = cuda.grid(1)
    if i < a.size:
        a[i] *= s


TABLE = np.arange(4, dtype=np.float32)


def table_lookup(out):
    c = cuda.const.array_like(TABLE)
    i = cuda.grid(1)
    out[i] = c[i % 4]


def untypeable(a):
    i = cuda.grid(1)
    a[i] = a.no_such_attribute + 1


def unknown_intrinsic(a):
    a[0] = cuda.no_such_intrinsic(1)


_ns: dict = {}
exec("def tripled(x):\n    return 3 * x\n", _ns)
TRIPLED = cuda.jit(device=True)(_ns["tripled"])      # no source text: cannot be keyed for the disk


@cuda.jit(device=True)
def cube(x):
    return x * x * x


def calls_device(out, x):
    i = cuda.grid(1)
    out[i] = cube(x[i])


def _args(n=16):
    x = np.ones(n, np.float32)
    return (np.zeros(n, np.float32), x, x, np.float32(2.0), n)


def _def_line(fn) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("def "))


def test_plain_function_compiles_to_ptx_with_loc_lines_and_its_entry():
    ck = compile_kernel(saxpy, _args())
    assert ck.name == "saxpy"
    assert re.search(rf"\.entry\s+{re.escape(ck.entry)}\s*\(", ck.ptx)
    assert "saxpy" in ck.entry
    assert ck.ptx.count(".loc") >= 3
    assert ck.source_file == os.path.abspath(__file__)
    assert ck.first_line == _def_line(saxpy)
    assert ck.cc == (9, 0) and ".target sm_90" in ck.ptx


def test_numba_dispatcher_compiles_its_py_func_and_first_line_is_the_def_not_the_decorator():
    ck = compile_kernel(scale, (np.ones(8, np.float32), np.float32(3)))
    assert ck.pyfunc is scale.py_func
    assert ".loc" in ck.ptx and ck.entry in ck.ptx
    assert ck.first_line == _def_line(scale.py_func) == scale.py_func.__code__.co_firstlineno + 1


def test_cc_selects_the_ptx_target():
    ck = compile_kernel(saxpy, _args(), cc=(8, 0))
    assert ".target sm_80" in ck.ptx and ck.cc == (8, 0)


def test_second_compile_of_same_kernel_and_types_is_a_memory_hit():
    first = compile_kernel(saxpy, _args())
    second = compile_kernel(saxpy, _args(32))          # other values, same types
    stats = cache_stats()
    assert second is first
    assert (stats.compiles, stats.memory_hits) == (1, 1)


def test_other_argument_types_compile_again():
    compile_kernel(saxpy, _args())
    x = np.ones(8, np.float64)
    compile_kernel(saxpy, (x, x, x, 2.0, 8))
    assert cache_stats().compiles == 2


def test_disk_cache_round_trip(tmp_path):
    first = compile_kernel(saxpy, _args())
    files = list((tmp_path / "ptx-cache").glob("*.ptx"))
    assert len(files) == 1 and cache_stats().disk_writes == 1
    clear_memory_cache()
    second = compile_kernel(saxpy, _args())
    stats = cache_stats()
    assert (stats.compiles, stats.disk_hits) == (1, 1)
    assert second.ptx == first.ptx and second.entry == first.entry


def test_disk_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSIM_DISK_CACHE", "0")
    compile_kernel(saxpy, _args())
    assert not (tmp_path / "ptx-cache").exists()


def test_changing_a_frozen_global_array_recompiles():
    a = np.zeros(8, np.float32)
    before = compile_kernel(table_lookup, (a,))
    TABLE[0] = 42.0
    try:
        after = compile_kernel(table_lookup, (a,))
    finally:
        TABLE[0] = 0.0
    assert cache_stats().compiles == 2
    assert after.ptx != before.ptx
    assert "{0, 0, 40, 66," in after.ptx             # 42.0f = 0x42280000, little-endian bytes of the .const table


@pytest.mark.filterwarnings("ignore:Could not find source")
def test_a_device_function_without_source_is_cached_in_memory_but_not_on_disk(tmp_path):
    def uses_exec_device(out):
        out[0] = TRIPLED(2)

    compile_kernel(uses_exec_device, (np.zeros(1, np.int64),))
    compile_kernel(uses_exec_device, (np.zeros(1, np.int64),))
    stats = cache_stats()
    assert (stats.compiles, stats.memory_hits, stats.disk_unkeyable, stats.disk_writes) == (1, 1, 1, 0)


def test_numba_device_function_called_from_a_kernel_compiles_without_a_gpu():
    ck = compile_kernel(calls_device, (np.zeros(4, np.float32), np.ones(4, np.float32)))
    assert ck.entry in ck.ptx
    assert "inlined_at" in ck.ptx        # the device function got line info too


def test_untypeable_kernel_names_the_kernel_and_the_problem_line():
    with pytest.raises(UnsupportedKernel) as err:
        compile_kernel(untypeable, (np.zeros(4, np.float32),))
    msg = str(err.value)
    assert "untypeable" in msg and "no_such_attribute" in msg
    assert "a[i] = a.no_such_attribute + 1" in msg
    first = msg.splitlines()[0]
    assert f":{_def_line(untypeable) + 2}" in first and "a[i] = a.no_such_attribute + 1" in first
    assert "Numba's message:" in msg                 # Numba's own text follows, for callers matching it
    assert isinstance(err.value, TypingError) and err.value.__cause__ is not None


def test_unknown_cuda_intrinsic_names_the_line():
    with pytest.raises(UnsupportedKernel) as err:
        compile_kernel(unknown_intrinsic, (np.zeros(4, np.float32),))
    assert "no_such_intrinsic" in str(err.value) and "a[0] = cuda.no_such_intrinsic(1)" in str(err.value)


def test_argument_count_mismatch_names_both_counts():
    with pytest.raises(LaunchError, match=r"saxpy takes 5 arguments \(out, x, y, a, n\) but the launch passed 3"):
        compile_kernel(saxpy, _args()[:3])


def test_a_list_argument_names_position_name_and_type():
    with pytest.raises(UnsupportedKernel, match=r"argument 1 \(x\) of type list"):
        compile_kernel(saxpy, (np.zeros(4, np.float32), [1.0, 2.0], np.zeros(4, np.float32), 1.0, 4))


def test_device_function_is_not_a_kernel():
    with pytest.raises(UnsupportedKernel, match="device function"):
        compile_kernel(cube, (1.0,))


def test_parsed_kernel_has_numba_array_abi_param_count():
    pytest.importorskip("isa.parser")
    ck = compile_kernel(saxpy, _args())
    assert len(ck.kernel.params) == 3 * (5 + 2 * 1) + 2
    assert ck.kernel is ck.kernel          # parsed once


def test_a_tuple_of_empty_tuples_compiles_although_numbas_line_info_cannot_describe_it():
    import numpy as np
    from gpusim import cuda

    @cuda.jit
    def lengths(r, x):
        r[0] = len(x)
        r[1] = len(x[0])

    r = np.ones(2, dtype=np.int64)
    lengths[1, 1](r, ((), (), ()))               # Numba's debuginfo divides by the empty tuple's size
    assert r.tolist() == [3, 0]


def test_kernels_calling_two_local_functions_of_the_same_code_get_different_cache_keys():
    from gpusim.frontend.fingerprint import fingerprint

    def make():
        def helper(x):                 # e.g. a function an @overload registers, strict or not
            return x

        def kern(r):
            r[0] = helper(1)
        return kern
    a, b = make(), make()
    assert fingerprint(a).digest != fingerprint(b).digest


def test_a_compile_that_numba_is_set_to_dump_is_never_taken_from_disk(monkeypatch, capsys):
    import numpy as np
    from numba.cuda import config
    from gpusim import cuda
    from gpusim.frontend import compile as fc

    def inc(x):
        x[0] += 1

    monkeypatch.setattr(config, "DUMP_BYTECODE", True)
    for _ in range(2):
        fc.clear_memory_cache()
        cuda.jit(inc)[1, 1](np.zeros(1))            # a new dispatcher (one keeps its first compile, as Numba's)
    capsys.readouterr()
    assert (fc.cache_stats().compiles, fc.cache_stats().disk_hits) == (2, 0)
