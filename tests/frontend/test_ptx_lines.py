"""The code gpusim times is the code numba.cuda.jit runs (no line information asked), with the
source lines of a line-info compilation carried onto it (gpusim/frontend/ptx_lines.py)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from numba import cuda, float32

from gpusim.frontend.compile import compile_kernel
from gpusim.frontend.ptx_lines import carry_lines
from gpusim.frontend.sass import ptxas_info, sass_entry
from validate._heldout2.compute import nbody_shared

SIG = (float32[:, ::1], float32[:, ::1], float32)


def _sass(ptx: str, entry: str) -> list[str]:
    """The entry's SASS, Numba's numbered mangled names taken out."""
    return [re.sub(r"_ZN\w+", "NAME", i.text) for i in sass_entry(ptxas_info(ptx, entry, (9, 0)).cubin, entry).instructions]


def _entry(ptx: str) -> str:
    return next(ln.split()[-1].rstrip("(") for ln in ptx.splitlines() if ".entry" in ln)


def _args(n=256):
    return (np.zeros((n, 4), np.float32), np.zeros((n, 3), np.float32), np.float32(0.01))


GPU_SASS = Path(__file__).parents[2] / "data" / "measurements" / "toolchain" / "stencil2d_5pt.lto0.sass"


def _gpu_listing(text: str) -> list[str]:
    """The kernel's instructions in `cuobjdump -sass`-style text as numba-cuda's inspect_sass prints it."""
    body = text.split(".text.")[-1]
    return [re.sub(r"_ZN\w+", "NAME", ln.split("*/", 1)[1].strip().rstrip(";").strip())
            for ln in body.splitlines() if re.match(r"\s*/\*[0-9a-f]{4}\*/\s+[@A-Z]", ln)]


def test_stencil2d_sass_is_the_sass_the_h100_ran():
    """Held-out stencil2d_5pt as the H100 machine's numba-cuda built it (LTO through nvJitLink 13.0
    for sm_90a, data/measurements/toolchain/stencil2d_5pt.lto0.sass, 120 instructions, 20
    registers): gpusim's build assembles to the same instructions, in the same order."""
    from validate.heldout import HELDOUT
    c = HELDOUT["stencil2d_5pt"].case("default")
    k = compile_kernel(c.kernel, c.args, cc=(9, 0))
    info = ptxas_info(k.ptx, _entry(k.ptx), (9, 0))
    assert info.registers_per_thread == 20
    gpu = _gpu_listing(GPU_SASS.read_text())
    assert len(gpu) == 120
    ours = _sass(k.ptx, _entry(k.ptx))        # without the listing's padding (the self-branch and NOPs)
    assert ours == gpu[:len(ours)] and set(gpu[len(ours):]) <= {"NOP", "BRA `(.L_x_1)"}


def test_nbody_times_the_plain_build_whose_index_math_is_uniform():
    """nbody's inner-loop index arithmetic is on the uniform datapath in Numba's plain build (97
    SASS instructions; 34 with lineinfo=True), which is what the H100 ran (Nsight: 26 % of its
    warp instructions on the uniform pipe, data/measurements/h100_heldout2.json)."""
    annotated, _ = cuda.compile_ptx(nbody_shared.py_func, SIG, cc=(9, 0, "a"), lineinfo=True)
    k = compile_kernel(nbody_shared, _args(), cc=(9, 0))
    uniform = lambda s: sum(t.split()[0].startswith("U") or t.startswith("@UP") for t in s)
    assert uniform(_sass(k.ptx, _entry(k.ptx))) == 97
    assert uniform(_sass(annotated, _entry(annotated))) == 34


def test_carried_lines_name_the_kernels_own_source_lines():
    """The barriers of the plain code carry the lines of the two cuda.syncthreads() calls."""
    k = compile_kernel(nbody_shared, _args(), cc=(9, 0))
    lines = k.ptx.splitlines()
    locs = [int(lines[i - 1].split()[2]) for i, ln in enumerate(lines) if ln.strip().startswith("bar.sync")]
    src = open(nbody_shared.py_func.__code__.co_filename).read().splitlines()
    assert len(locs) == 2
    assert all("syncthreads" in src[n - 1] for n in locs)


def test_the_users_lineinfo_true_is_compiled_as_asked():
    """jit(lineinfo=True) is what the GPU would run then: the line-info build's code (34 uniform)."""
    asked = cuda.jit(nbody_shared.py_func, lineinfo=True)
    k = compile_kernel(asked, _args(), cc=(9, 0))
    assert sum(t.split()[0].startswith("U") or t.startswith("@UP") for t in _sass(k.ptx, _entry(k.ptx))) == 34


PLAIN = """.version 9.0
.target sm_90
.address_size 64
.visible .entry k(
.param .u64 k_param_0
)
{
.reg .b32 %r<4>;
mov.u32 %r1, 1;
add.s32 %r2, %r1, 2;
mul.lo.s32 %r3, %r2, 7;
ret;
}
"""

ANNOTATED = """.version 9.0
.target sm_90
.address_size 64
.visible .entry k(
.param .u64 k_param_0
)
{
.reg .b32 %r<6>;
.loc 1 10 1
mov.u32 %r1, 1;
.loc 1 11 1
add.s32 %r4, %r1, 2;
.loc 1 12 1
mul.lo.s32 %r5, %r4, 7;
.loc 1 13 1
ret;
}
.file 1 "k.py"
"""


def test_carry_lines_matches_instructions_across_register_numbers():
    out = carry_lines(PLAIN, ANNOTATED).splitlines()
    assert out[out.index("mul.lo.s32 %r3, %r2, 7;") - 1] == ".loc 1 12 1"
    assert out[out.index("add.s32 %r2, %r1, 2;") - 1] == ".loc 1 11 1"
    assert out[-1] == '.file 1 "k.py"'
    assert not any(ln.startswith(".loc") for ln in out[:out.index("{")])     # never outside a body


def test_an_instruction_without_a_partner_takes_the_line_before():
    plain = PLAIN.replace("mul.lo.s32 %r3, %r2, 7;", "mul.lo.s32 %r3, %r2, 7;\nshl.b32 %r3, %r3, 1;")
    out = carry_lines(plain, ANNOTATED).splitlines()
    i = out.index("shl.b32 %r3, %r3, 1;")
    assert out[i - 1] == "mul.lo.s32 %r3, %r2, 7;"          # no new .loc: line 12 stays in effect
    assert out[i + 1] == ".loc 1 13 1"


def test_nothing_to_carry_leaves_the_code_as_it_is():
    assert carry_lines(PLAIN, PLAIN) == PLAIN


@pytest.mark.parametrize("text", [PLAIN])
def test_carried_text_assembles_to_the_plain_codes_sass(text):
    assert _sass(carry_lines(text, ANNOTATED), "k") == _sass(text, "k")


@cuda.jit(device=True)
def _poly(x):
    y = x * x + 1.5                              # a device function Numba inlines: its lines are
    return y * x - 0.25                          # `inlined_at` the call site


def _calls_poly(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = _poly(x[i])


def test_inlined_lines_keep_their_call_site_for_ptxas():
    """A carried `.loc ... inlined_at` is preceded by a `.loc` of its call site (ptxas refuses one
    whose call site no earlier directive named), and the SASS assembles to the plain build's."""
    a = np.zeros(64, np.float32)
    k = compile_kernel(_calls_poly, (a, a), cc=(9, 0))
    lines = k.ptx.splitlines()
    named = set()
    for ln in lines:
        if ln.strip().startswith(".loc"):
            m = re.search(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)", ln)
            assert m is None or m.groups() in named, ln
            named.add(tuple(ln.replace(",", " ").split()[1:4]))
    assert any("inlined_at" in ln for ln in lines)
    assert _sass(k.ptx, _entry(k.ptx))               # ptxas takes it
