"""isa.printer: PTX written back reads back to the same structure (ptx_line aside)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from isa.parser import parse
from isa.printer import format_instruction, format_operand, format_program, strip_lines
from isa.program import Address, Imm, Reg

PTX_DIR = Path(__file__).parent / "ptx"
FIXTURES = sorted(PTX_DIR.glob("*.ptx"))

EDGE_CASES = r"""
.version 8.0
.target sm_90, debug
.address_size 64
.pragma "nounroll";
.extern .func (.param .b32 r) ext(.param .b64 a);
.visible .global .align 4 .s32 table[2][3] = {{1, -2, 0x3}, {4, 5, 6}};
.const .align 4 .f32 cf[3] = {0f3F800000, 0fBF000000, 0f7FC00001};
.global .f64 pi = 0d400921FB54442D18;
.extern .shared .align 16 .b8 dyn[];
.weak .global .align 8 .u64 wk;
.common .global .u32 cm;
.shared .align 4 .b8 smem[1024];

.weak .func (.param .b32 ret0) helper(.param .b32 x) .noreturn
{
	.reg .b32 %r<3>;
	ld.param.b32 %r1, [x];
	st.param.b32 [ret0+0], %r1;
	ret;
}

.visible .entry k(.param .u64 out, .param .align 8 .b8 s[16])
.maxntid 128, 1, 1
.minnctapersm 2
{
	.reg .pred %p<3>;
	.reg .b32 %r<9>;
	.reg .b64 %rd<9>;
	.reg .f32 %f<5>;
	.reg .f64 %fd1;
	.local .align 8 .b8 depot[16];
	.loc 1 10 3
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %lanemask_lt;
	mov.u64 %rd1, smem;
	ld.shared.v4.f32 {%f1, %f2, _, %f4}, [%rd1+-8];
	ld.global.u32 %r3, [1024];
	ld.const.f32 %f1, [cf+4];
	mov.f32 %f3, 0f7F800000;
	mov.f64 %fd1, 1.5;
	add.s32 %r4, %r3, -1;
	and.b32 %r5, %r4, 0xFF;
	shfl.sync.down.b32 %r6|%p1, %r5, 1, 31, -1;
	setp.lt.s32 %p2, %r1, 010;
	.loc 2 7 0
	@!%p2 bra $L1;
	{
	.param .b32 param0;
	st.param.b32 [param0+0], %r1;
	.param .b32 retval0;
	call.uni (retval0), helper, (param0);
	ld.param.b32 %r7, [retval0+0];
	}
	.pragma "nounroll";
$L1:
	bar.sync 0;
	@%p1 exit;
	ret;
}
.file 1 "kernel.py"
.file 2 "other.py", 123, 456
"""


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixture_round_trips(path):
    p = parse(path.read_text())
    assert strip_lines(parse(format_program(p))) == strip_lines(p)


def test_edge_case_module_round_trips():
    p = parse(EDGE_CASES)
    assert strip_lines(parse(format_program(p))) == strip_lines(p)


def test_printing_is_a_fixed_point_after_one_round():
    text = format_program(parse(EDGE_CASES))
    assert format_program(parse(text)) == text


def test_strip_lines_zeroes_every_ptx_line():
    p = strip_lines(parse(EDGE_CASES))
    k = p.kernel()
    lines = [v.ptx_line for v in (*p.globals, *k.params, *k.locals)] + [s.ptx_line for s in k.body]
    assert set(lines) | {k.ptx_line} == {0}


def test_float_immediates_print_as_exact_hex_bits():
    assert [format_operand(Imm(v, b, w)) for v, b, w in [(1.0, 0x3F800000, 32), (0.1, 0x3FB999999999999A, 64)]] \
        == ["0f3F800000", "0d3FB999999999999A"]


def test_decimal_float_prints_as_f64_hex():
    k = parse(EDGE_CASES).kernel()
    mov = next(i for i in k.instructions if i.mnemonic == "mov.f64")
    assert format_instruction(mov) == "mov.f64 %fd1, 0d3FF8000000000000;"


def test_negative_offset_prints_as_plus_minus():
    assert format_operand(Address(Reg("%rd4"), -8)) == "[%rd4+-8]"


def test_guarded_instruction_text():
    k = parse(EDGE_CASES).kernel()
    bra = next(i for i in k.instructions if i.opcode == "bra")
    assert format_instruction(bra) == "@!%p2 bra $L1;"


def test_multi_dim_initializer_prints_nested_braces_of_values():
    # initializer elements are values, so 0x3 comes back as 3
    assert ".visible .global .align 4 .s32 table[2][3] = {{1, -2, 3}, {4, 5, 6}};" in format_program(
        parse(EDGE_CASES))


def test_loc_printed_once_per_change():
    text = format_program(parse(EDGE_CASES))
    assert re.findall(r"\.loc .*", text) == [".loc 1 10 3", ".loc 2 7 0"]


def test_undefined_function_prints_as_prototype_only():
    text = format_program(parse(EDGE_CASES))
    assert text.count(" ext(") == 1 and ".extern .func (.param .b32 r) ext(" in text


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not installed")
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_printed_fixture_is_accepted_by_ptxas(path, tmp_path):
    # NVVM of CUDA 13.4 writes .version 9.4; an older ptxas only needs the number lowered.
    text = re.sub(r"^\.version .*$", ".version 8.0", format_program(parse(path.read_text())), flags=re.M)
    src = tmp_path / path.name
    src.write_text(text)
    r = subprocess.run(["ptxas", "-arch=sm_90", "-c", str(src), "-o", str(tmp_path / "out.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
