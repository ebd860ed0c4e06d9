"""isa.parser: one property of PTX reading per test, on hand-written snippets and on
the NVVM fixtures of tests/isa/ptx (regenerate them with ptx/regenerate.py)."""
from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from isa.errors import PtxSyntaxError
from isa.parser import parse
from isa.program import (
    Address, ArgList, Guard, Imm, Instruction, Label, LabelRef, PredPair, Reg, RegDecl,
    SourceLoc, Special, Sym, VarDecl, Vector,
)

PTX_DIR = Path(__file__).parent / "ptx"
FIXTURES = sorted(PTX_DIR.glob("*.ptx"))


def fixture(name: str):
    return parse((PTX_DIR / f"{name}.ptx").read_text())


def body(lines: str, *, header: str = "", decls: str = ".reg .b32 %r<9>; .reg .pred %p<3>;") -> str:
    """A one-kernel module around `lines`; the first body line is PTX line 7."""
    return (f".version 8.0\n.target sm_90\n.address_size 64\n{header}\n"
            f".visible .entry k()\n{{ {decls}\n{lines}\n}}\n")


def instr(text: str) -> Instruction:
    """The only instruction of a kernel whose body is `text`."""
    (i,) = parse(body(text)).kernel().instructions
    return i


# ----------------------------------------------------------------------------- instructions
def test_add_s64_has_opcode_suffix_and_three_registers():
    i = instr("add.s64 %rd3, %rd15, %rd2;")
    assert (i.opcode, i.suffixes, i.operands) == ("add", ("s64",), (Reg("%rd3"), Reg("%rd15"), Reg("%rd2")))


def test_suffixes_keep_source_order_and_split_into_types_and_modifiers():
    i = instr("cvt.rni.s32.f32 %r1, %f1;")
    assert (i.suffixes, i.types, i.modifiers) == (("rni", "s32", "f32"), ("s32", "f32"), ("rni",))


def test_suffix_with_double_colon_stays_one_suffix():
    assert instr("ld.global.L1::evict_last.u32 %r1, [%rd1];").suffixes == ("global", "L1::evict_last", "u32")


def test_negated_guard_and_branch_target():
    i = instr("@!%p1 bra $L__BB0_2;\n$L__BB0_2:")
    assert (i.guard, i.operands) == (Guard(Reg("%p1"), negated=True), (LabelRef("$L__BB0_2"),))


def test_guard_on_a_predicate_named_without_a_percent_sign():
    # inline asm's `{ .reg .pred p; ... @!p bra L; }`, as CUDA C++ mbarrier wait loops write it
    i = instr("{ .reg .pred p;\nWAIT_0:\n@!p bra WAIT_0;\n}")
    assert (i.guard.reg.name, i.guard.negated, i.operands) == ("p", True, (LabelRef("WAIT_0"),))


def test_plain_guard_is_not_negated():
    assert instr("@%p2 ret;").guard == Guard(Reg("%p2"), negated=False)


@pytest.mark.parametrize("name", ["%tid.x", "%ctaid.y", "%nctaid.z", "%laneid", "%clock64", "%lanemask_lt"])
def test_special_registers(name):
    assert instr(f"mov.u32 %r1, {name};").operands[1] == Special(name)


@pytest.mark.parametrize("text,value", [("-1", -1), ("0xFF", 255), ("010", 8), ("0b101", 5),
                                        ("7U", 7), ("-2147483648", -2147483648), ("0", 0)])
def test_integer_immediates(text, value):
    assert instr(f"add.s32 %r1, %r2, {text};").operands[2] == Imm(value, None, None, text)


def test_f32_hex_immediate_keeps_exact_bits():
    assert instr("mov.f32 %f1, 0f3F800000;").operands[1] == Imm(1.0, 0x3F800000, 32, "0f3F800000")


def test_f64_hex_immediate_keeps_exact_bits():
    op = instr("mov.f64 %fd1, 0d3FB999999999999A;").operands[1]
    assert (op.value, op.bits, op.width) == (0.1, 0x3FB999999999999A, 64)


def test_nan_immediate_keeps_its_payload_bits():
    op = instr("mov.f32 %f1, 0f7FC00001;").operands[1]
    assert math.isnan(op.value) and op.bits == 0x7FC00001


def test_decimal_float_immediate_is_f64():
    assert instr("mov.f64 %fd1, 1.5;").operands[1] == Imm(1.5, 0x3FF8000000000000, 64, "0d3FF8000000000000")


def test_warp_size_constant_is_a_symbol():
    # NVVM writes `cuda.warpsize` as the predefined identifier WARP_SZ (PTX ISA 4.4)
    assert instr("mov.u32 %r5, WARP_SZ;").operands[1] == Sym("WARP_SZ")


def test_symbol_used_as_value():
    assert instr("mov.u64 %rd1, _cudapy_smem_1;").operands[1] == Sym("_cudapy_smem_1")


@pytest.mark.parametrize("text,addr", [
    ("[%rd4]", Address(Reg("%rd4"), 0)), ("[%rd4+8]", Address(Reg("%rd4"), 8)),
    ("[%rd4+-8]", Address(Reg("%rd4"), -8)), ("[%rd4-8]", Address(Reg("%rd4"), -8)),
    ("[sym]", Address(Sym("sym"), 0)), ("[sym+4]", Address(Sym("sym"), 4)),
    ("[1024]", Address(None, 1024)), ("[%rd1+0x10]", Address(Reg("%rd1"), 16)),
])
def test_addresses(text, addr):
    assert instr(f"ld.global.u32 %r1, {text};").operands[1] == addr


def test_vector_with_sink():
    i = instr("ld.global.v4.f32 {%f1, %f2, _, %f4}, [%rd1];")
    assert i.operands[0] == Vector((Reg("%f1"), Reg("%f2"), None, Reg("%f4")))


def test_predicate_pair():
    i = instr("shfl.sync.down.b32 %r10|%p1, %r4, %r8, %r6, %r9;")
    assert i.operands[0] == PredPair(Reg("%r10"), Reg("%p1"))


def test_call_with_return_and_arguments_over_several_lines():
    i = instr("call.uni (retval0), \n\tfoo, \n\t(\n\tparam0, \n\tparam1\n\t);")
    assert i.operands == (ArgList((Sym("retval0"),)), Sym("foo"), ArgList((Sym("param0"), Sym("param1"))))


def test_call_without_return_value_starts_with_callee():
    assert instr("call.uni foo, (param0);").operands == (Sym("foo"), ArgList((Sym("param0"),)))


def test_instruction_records_its_ptx_line():
    k = parse(body("mov.u32 %r1, 1;\n\n// c\nmov.u32 %r2, 2;")).kernel()
    assert [i.ptx_line for i in k.instructions] == [7, 10]


def test_label_and_instruction_on_one_line():
    k = parse(body("$L1: ret;")).kernel()
    assert k.body == (Label("$L1", 7), Instruction("ret", (), (), ptx_line=7))


def test_comments_of_both_kinds_are_ignored():
    k = parse(body("add.s32 %r1, /* a\n b */ %r2, 3; // trailing\n/* whole */ ret;")).kernel()
    assert [i.mnemonic for i in k.instructions] == ["add.s32", "ret"]


# ----------------------------------------------------------------------------- declarations
def test_parameterized_and_plain_register_declarations():
    k = parse(body("ret;", decls=".reg .b32 %r<12>; .reg .b64 %SP;")).kernel()
    assert k.regs == (RegDecl("b32", "%r", 12), RegDecl("b64", "%SP", None))


def test_parameterized_register_names():
    assert RegDecl("pred", "%p", 3).names() == ("%p0", "%p1", "%p2")


def test_kernel_params_scalar_and_aligned_byte_array():
    src = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(\n.param .u64 a,\n" \
          ".param .align 8 .b8 s[16]\n)\n{\nret;\n}\n"
    assert parse(src).kernel().params == (VarDecl("param", "u64", "a", ptx_line=4),     # the header's line
                                          VarDecl("param", "b8", "s", 8, (16,), ptx_line=4))


def test_module_variable_multi_dim_with_nested_initializer():
    (v,) = parse(body("ret;", header=".global .align 4 .s32 t[2][3] = {{1, -2, 0x3}, {4, 5, 6}};")).globals
    assert (v.dims, v.init, v.align, v.size_bytes) == ((2, 3), (1, -2, 3, 4, 5, 6), 4, 24)


def test_float_initializer_values_are_exact():
    (v,) = parse(body("ret;", header=".const .f32 c[2] = {0f3F800000, 0fBF000000};")).globals
    assert v.init == (1.0, -0.5)


@pytest.mark.parametrize("linkage", ["visible", "extern", "weak", "common"])
def test_module_variable_linkage(linkage):
    (v,) = parse(body("ret;", header=f".{linkage} .global .align 8 .u64 g;")).globals
    assert v.linkage == linkage


def test_const_array_fixture_keeps_its_64_initializer_bytes():
    (v,) = [g for g in fixture("const_array").globals if g.space == "const"]
    assert (v.size_bytes, len(v.init), v.init[4:8]) == (64, 64, (0, 0, 0, 63))   # 0.5f = 0x3F000000


def test_extern_dynamic_shared_array_has_dims_zero():
    (v,) = [g for g in fixture("dynamic_shared").globals if g.space == "shared"]
    assert (v.linkage, v.dims, v.align) == ("extern", (0,), 4)


def test_local_depot_is_a_kernel_local():
    (v,) = fixture("local_array").kernel().locals
    assert (v.space, v.name, v.size_bytes) == ("local", "__local_depot0", 32)


def test_shared_declared_inside_a_body_is_a_local():
    k = parse(body(".shared .align 4 .b8 buf[64];\nret;")).kernel()
    assert k.locals == (VarDecl("shared", "b8", "buf", 4, (64,), ptx_line=7),)


def test_maxntid_directive_is_kept():
    assert fixture("reduction").kernel().directives == (".maxntid 256, 1, 1",)


def test_several_performance_directives_in_order():
    src = ".version 8.0\n.target sm_90\n.address_size 64\n.entry k() .reqntid 128,1,1\n.minnctapersm 2\n{\nret;\n}\n"
    assert parse(src).kernel().directives == (".reqntid 128, 1, 1", ".minnctapersm 2")


def test_body_pragma_keeps_its_position_before_the_loop_label():
    k = fixture("loop_sum").kernel()
    ((at, text),) = k.pragmas
    assert (text, k.body[at - 1]) == ('"nounroll"', Label("$L__BB0_17", 261))


# ----------------------------------------------------------------------------- functions and scopes
def test_weak_func_with_return_param_is_a_function():
    p = fixture("recursive_call")
    (f,) = [f for n, f in p.functions.items() if "dev_fib" in n]
    assert (f.is_entry, f.linkage, f.defined, f.retvals[0].name, len(f.params)) == \
        (False, "weak", True, "func_retval0", 2)


def test_extern_func_prototypes_are_undefined_functions():
    p = fixture("half_precision")
    assert sorted((f.defined, f.linkage, len(f.body)) for f in p.functions.values()) == [(False, "extern", 0)] * 3


def test_callseq_param_declared_in_three_blocks_is_kept_once():
    f = next(f for f in fixture("recursive_call").functions.values())
    assert [v.name for v in f.locals if v.space == "param"] == ["param0", "param1", "retval0"]


def test_block_register_hiding_an_outer_one_is_renamed():
    k = fixture("syncthreads_count").kernel()
    setp = next(i for i in k.instructions if i.mnemonic == "setp.ne.u32")
    late = next(i for i in k.instructions if i.mnemonic == "selp.b64" and i.ptx_line > 80)
    assert (setp.operands[0], late.operands[3]) == (Reg("%p1$1"), Reg("%p1"))


def test_sibling_blocks_disagreeing_on_a_param_share_a_byte_array():
    k = parse(body("{\n.param .b32 param0;\n}\n{\n.param .align 8 .b8 param0[16];\n}\nret;")).kernel()
    assert k.locals == (VarDecl("param", "b8", "param0", 8, (16,), ptx_line=8),)


def test_section_blocks_are_skipped():
    k = fixture("half_precision").kernel()
    assert not any(isinstance(s, Label) and s.name.startswith("$L__info") for s in k.body)


# ----------------------------------------------------------------------------- source locations
def test_loc_is_resolved_through_a_file_table_that_comes_last():
    k = parse(body(".loc 1 5 2\nret;") + '.file 1 "k.py"\n').kernel()
    assert k.instructions[0].loc == SourceLoc("k.py", 5, 2)


def test_file_directive_with_timestamp_and_size():
    assert parse(body("ret;") + '.file 3 "/a/b.py", 1700000000, 1234\n').files == {3: "/a/b.py"}


def test_loc_extras_are_ignored():
    k = fixture("half_precision").kernel()
    i = next(i for i in k.instructions if i.mnemonic == "mov.u16")
    assert i.loc == SourceLoc("site-packages/numba_cuda/numba/cuda/_internal/cuda_fp16.py", 4747, 1)


def test_every_kernel_instruction_of_the_fixtures_has_a_location():
    missing = [(f.name, i.ptx_line) for f in FIXTURES for k in parse(f.read_text()).kernels.values()
               for i in k.instructions if i.loc is None]
    assert missing == []


# ----------------------------------------------------------------------------- errors
def test_unknown_syntax_raises_with_the_line_number():
    with pytest.raises(PtxSyntaxError) as e:
        parse(body("mov.u32 %r1, 1;\nadd.s32 %r1, %r2, #3;"))
    assert e.value.ptx_line == 8


def test_unknown_directive_raises_with_the_line_number():
    with pytest.raises(PtxSyntaxError) as e:
        parse(body("ret;", header=".frobnicate 3;"))
    assert e.value.ptx_line == 4


def test_missing_semicolon_at_end_raises_at_the_statement_start():
    with pytest.raises(PtxSyntaxError) as e:
        parse(".version 8.0\n.entry k()\n{\nret\n")
    assert e.value.ptx_line == 4


def test_loc_of_an_undeclared_file_raises():
    with pytest.raises(PtxSyntaxError, match="file 2"):
        parse(body(".loc 2 1 0\nret;"))


def test_duplicate_label_raises():
    with pytest.raises(PtxSyntaxError, match="defined twice"):
        parse(body("$L1:\n$L1:\nret;"))


# ----------------------------------------------------------------------------- fixtures
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixture_has_one_kernel_with_instructions(path):
    p = parse(path.read_text())
    assert len(p.kernels) == 1 and len(p.kernel().instructions) > 0


def test_parsing_2000_lines_takes_under_100_ms():
    text, lines = "", 0
    for f in FIXTURES:                       # distinct kernel names: concatenation is one module
        t = f.read_text()
        text, lines = text + t, lines + t.count("\n")
        if lines >= 2000:
            break
    best = min(_timed(parse, text) for _ in range(3))
    assert lines >= 2000 and best < 0.100


def _timed(fn, arg) -> float:
    t = time.perf_counter()
    fn(arg)
    return time.perf_counter() - t


def test_inventory_lists_exactly_the_fixture_mnemonics():
    listed = {ln.split("\t")[0] for ln in (PTX_DIR / "INVENTORY.txt").read_text().splitlines()
              if ln and not ln.startswith("#")}
    seen = {i.mnemonic for f in FIXTURES for p in [parse(f.read_text())]
            for k in (*p.kernels.values(), *p.functions.values()) for i in k.instructions}
    assert listed == seen


def test_operand_pair_with_a_sink_first():
    # elect.sync writes `_|%p` (no leader id); PredPair.first is then None
    from isa.program import PredPair, Reg
    p = parse(".version 8.5\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n.reg .pred %p;\n"
              "elect.sync _|%p, -1;\nret;\n}\n")
    assert p.kernel("k").instructions[0].operands[0] == PredPair(None, Reg("%p"))
