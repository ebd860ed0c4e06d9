"""ptxas resources and the SASS listing of Numba kernels, one property per test.

Numbers observed with ptxas/nvdisasm 13.4.92 (cuda-toolkit 13.4) for sm_90; a newer
ptxas may allocate differently, so a changed count is a finding to look at, not
necessarily a bug.
"""
from __future__ import annotations

import inspect
import math
import re

import numpy as np
import pytest
from numba import cuda

from gpusim.frontend import sass
from gpusim.frontend.sass import tools as sass_tools
from gpusim.frontend.compile import compile_kernel
from gpusim.frontend.sass import (SassToolError, estimate_registers_from_ptx, op_class, ptxas_info, sass_listing,
                                  sass_profile)

needs_tools = pytest.mark.skipif(not (sass.have_ptxas() and sass.have_nvdisasm()),
                                 reason=f"ptxas/nvdisasm not installed: {sass.INSTALL_HINT}")


def vadd(a, b, c):
    i = cuda.grid(1)
    if i < c.size:
        c[i] = a[i] + b[i]


def big_local(a, out):
    i = cuda.grid(1)
    tmp = cuda.local.array(256, np.float32)
    for k in range(256):
        tmp[k] = a[(i + k) % a.size]
    s = 0.0
    for k in range(256):
        s += tmp[(k * 7 + i) % 256]
    out[i] = s


def staged(a, out):
    sm = cuda.shared.array(512, np.float32)
    sm[cuda.threadIdx.x] = a[cuda.grid(1)]
    cuda.syncthreads()
    out[cuda.grid(1)] = sm[(cuda.threadIdx.x + 1) % 512]


@cuda.jit(device=True)
def exp_of(v):
    return math.exp(v)


def calls_inlined(a, out):
    i = cuda.grid(1)
    out[i] = exp_of(a[i])


def pressure(a, out):
    i = cuda.grid(1)
    x0 = a[i]; x1 = a[i + 1]; x2 = a[i + 2]; x3 = a[i + 3]; x4 = a[i + 4]; x5 = a[i + 5]; x6 = a[i + 6]  # noqa: E702
    x7 = a[i + 7]; x8 = a[i + 8]; x9 = a[i + 9]; x10 = a[i + 10]; x11 = a[i + 11]; x12 = a[i + 12]  # noqa: E702
    x13 = a[i + 13]; x14 = a[i + 14]; x15 = a[i + 15]  # noqa: E702
    for _ in range(100):
        x0, x1, x2, x3 = x1 * x8 + x0, x2 * x9 + x1, x3 * x10 + x2, x4 * x11 + x3
        x4, x5, x6, x7 = x5 * x12 + x4, x6 * x13 + x5, x7 * x14 + x6, x0 * x15 + x7
        x8, x9, x10, x11 = x9 - x0, x10 - x1, x11 - x2, x12 - x3
        x12, x13, x14, x15 = x13 - x4, x14 - x5, x15 - x6, x8 - x7
    out[i] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11 + x12 + x13 + x14 + x15


X = np.zeros(64, np.float32)


def line_of(fn, text: str) -> int:
    body, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(body) if text in ln)


@pytest.fixture(scope="module")
def vadd_ck():
    return compile_kernel(vadd, (X, X, X))


@pytest.fixture(scope="module")
def vadd_info(vadd_ck):
    return ptxas_info(vadd_ck.ptx, vadd_ck.entry)


@pytest.fixture(scope="module")
def vadd_sass(vadd_ck, vadd_info):
    return sass_listing(vadd_info.cubin, vadd_ck.entry)


def _info(kernel, args, **kw):
    ck = compile_kernel(kernel, args)
    return ptxas_info(ck.ptx, ck.entry, **kw)


# ----------------------------------------------------------------------------- ptxas
@needs_tools
def test_vadd_uses_15_registers(vadd_info):
    assert vadd_info.registers_per_thread == 15


@needs_tools
def test_vadd_has_no_stack_frame(vadd_info):
    assert vadd_info.local_bytes == 0


@needs_tools
def test_local_array_of_256_floats_is_a_1024_byte_stack_frame():
    assert _info(big_local, (X, X)).local_bytes == 1024


@needs_tools
def test_shared_array_of_512_floats_is_2048_static_bytes():
    assert _info(staged, (X, X)).shared_bytes_static == 2048


@needs_tools
def test_syncthreads_uses_one_barrier():
    assert _info(staged, (X, X)).barriers == 1


@needs_tools
def test_register_pressure_kernel_uses_34_registers_unconstrained():
    assert _info(pressure, (X, X)).registers_per_thread == 34


@needs_tools
def test_maxrregcount_24_spills_36_bytes():
    info = _info(pressure, (X, X), max_registers=24)
    assert (info.registers_per_thread, info.spill_stores) == (24, 36)


@needs_tools
def test_ptxas_result_is_cached_on_disk(vadd_ck, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path))
    sass_tools._MEMORY.clear()
    ptxas_info(vadd_ck.ptx, vadd_ck.entry)
    assert len(list((tmp_path / "sass").glob("*.cubin"))) == 1


@needs_tools
def test_ptx_for_a_newer_target_is_a_clear_error(vadd_ck):
    with pytest.raises(SassToolError, match="ptxas .*failed"):
        ptxas_info(vadd_ck.ptx, vadd_ck.entry, cc=(8, 0))


# ----------------------------------------------------------------------------- listing
@needs_tools
def test_vadd_sass_has_global_loads_stores_and_exit(vadd_sass):
    ops = {i.opcode.split(".")[0] for i in vadd_sass}
    assert {"LDG", "STG", "EXIT"} <= ops


@needs_tools
def test_vadd_loads_and_store_map_to_the_add_line(vadd_sass):
    line = line_of(vadd, "c[i] = a[i] + b[i]")
    assert {i.source_line for i in vadd_sass if i.opcode.split(".")[0] in ("LDG", "STG", "FADD")} == {line}


@needs_tools
def test_vadd_bounds_check_exit_maps_to_the_if_line(vadd_sass):
    line = line_of(vadd, "if i < c.size")
    assert [i.source_line for i in vadd_sass if i.opcode == "EXIT" and i.predicate] == [line]


@needs_tools
def test_vadd_every_instruction_has_a_source_line(vadd_sass):
    assert [i for i in vadd_sass if i.source_line is None] == []


@needs_tools
def test_listing_drops_the_padding_after_the_last_exit(vadd_sass):
    assert vadd_sass[-1].opcode == "EXIT"


@needs_tools
def test_vadd_listing_has_42_instructions(vadd_sass):
    assert len(vadd_sass) == 42


@needs_tools
def test_inlined_device_function_counts_at_the_call_line():
    ck = compile_kernel(calls_inlined, (X, X))
    listing = sass_listing(ptxas_info(ck.ptx, ck.entry).cubin, ck.entry)
    ex2 = [i for i in listing if i.opcode == "MUFU.EX2"]
    assert [(i.source_line, i.inlined_line) for i in ex2] == \
        [(line_of(calls_inlined, "exp_of(a[i])"), line_of(exp_of, "math.exp(v)"))]


@needs_tools
def test_unknown_entry_is_a_clear_error(vadd_info):
    with pytest.raises(SassToolError, match="no code for entry"):
        sass_listing(vadd_info.cubin, "no_such_kernel")


# ----------------------------------------------------------------------------- profile
@needs_tools
def test_profile_counts_sum_to_the_listing_length(vadd_sass):
    assert sum(p.count for p in sass_profile(vadd_sass).values()) == len(vadd_sass)


@needs_tools
def test_profile_of_the_add_line_has_one_fp32_op(vadd_sass):
    assert sass_profile(vadd_sass)[line_of(vadd, "c[i] = a[i] + b[i]")].classes["fp32"] == 1


@needs_tools
def test_profile_class_mix_sums_to_the_line_count(vadd_sass):
    assert all(sum(p.classes.values()) == p.count for p in sass_profile(vadd_sass).values())


@pytest.mark.parametrize("opcode, cls", [
    ("FFMA.FTZ", "fp32"), ("FADD", "fp32"), ("DFMA", "fp64"), ("F2F.F64.F32", "fp64"), ("F2I.TRUNC.NTZ", "sfu"),
    ("IMAD.WIDE", "int"), ("LOP3.LUT", "int"), ("ISETP.GE.U32.AND", "int"), ("MUFU.EX2", "sfu"),
    ("LDG.E.128", "ldst"), ("STS", "ldst"), ("REDG.E.ADD.F32.FTZ.RN.STRONG.GPU", "ldst"), ("LDC.64", "ldst"),
    ("BSSY", "branch"), ("EXIT", "branch"), ("BAR.SYNC.DEFER_BLOCKING", "sync"), ("SHFL.BFLY", "shuffle"),
    ("S2R", "misc"), ("CS2R", "misc"), ("ULDC.64", "misc"), ("HFMA2", "fp16"),
])
def test_op_class(opcode, cls):
    assert op_class(opcode) == cls


# ----------------------------------------------------------------------------- without the tools
def test_register_estimate_of_vadd_counts_declared_words(vadd_ck):
    assert estimate_registers_from_ptx(vadd_ck.kernel) == 62      # 4 %r + 4 %f + 27 %rd * 2; ptxas: 15


def test_register_estimate_is_capped_at_255():
    assert estimate_registers_from_ptx(compile_kernel(pressure, (X, X)).kernel) == 255


def test_missing_ptxas_is_reported_by_the_probe(monkeypatch):
    monkeypatch.setattr(sass_tools, "_tool", lambda name: None)
    assert sass.have_ptxas() is False


def test_missing_ptxas_is_a_clear_error(monkeypatch, vadd_ck):
    monkeypatch.setattr(sass_tools, "_tool", lambda name: None)
    with pytest.raises(SassToolError, match=re.escape("ptxas not found")):
        ptxas_info(vadd_ck.ptx, vadd_ck.entry)
