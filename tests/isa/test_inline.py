"""isa.inline: device-function calls become straight-line code, one property per
test, on hand-written PTX and on the NVVM fixtures of tests/isa/ptx."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from isa.cfg import build_cfg
from isa.errors import UnsupportedCall
from isa.inline import has_calls, inline_calls, prepare_kernel, reachable_externs
from isa.parser import parse
from isa.printer import format_program, strip_lines
from isa.program import Address, Label, Reg, Sym

PTX_DIR = Path(__file__).parent / "ptx"
HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"

# add2(a, b) = a + b, called once; the NVVM call sequence in miniature.
ADD2 = HEAD + """
.func (.param .b32 func_retval0) add2(.param .b32 add2_param_0, .param .b32 add2_param_1)
{
    .reg .b32 %r<4>;
    ld.param.u32 %r1, [add2_param_0];
    ld.param.u32 %r2, [add2_param_1];
    add.s32 %r3, %r1, %r2;
    st.param.b32 [func_retval0+0], %r3;
    ret;
}
.visible .entry k(.param .u64 k_param_0)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [k_param_0];
    mov.u32 %r1, 7;
    { // callseq 0
    .param .b32 param0;
    st.param.b32 [param0+0], %r1;
    .param .b32 param1;
    st.param.b32 [param1+0], 5;
    .param .b32 retval0;
    call.uni (retval0), add2, (param0, param1);
    ld.param.b32 %r2, [retval0+0];
    }
    st.global.u32 [%rd1], %r2;
    ret;
}
"""

# clampneg(x) = 0 if x < 0 else x, with a predicated early `ret`; called twice.
TWICE = HEAD + """
.func (.param .b32 func_retval0) clampneg(.param .b32 clampneg_param_0)
{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [clampneg_param_0];
    mov.u32 %r2, 0;
    st.param.b32 [func_retval0+0], %r2;
    setp.lt.s32 %p1, %r1, 0;
    @%p1 ret;
$L__BB1_1:
    st.param.b32 [func_retval0+0], %r1;
    ret;
}
.visible .entry k(.param .u64 k_param_0)
{
    .reg .b32 %r<5>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [k_param_0];
    mov.u32 %r1, -3;
    { .param .b32 param0; st.param.b32 [param0+0], %r1; .param .b32 retval0;
      call.uni (retval0), clampneg, (param0); ld.param.b32 %r2, [retval0+0]; }
    { .param .b32 param0; st.param.b32 [param0+0], 4; .param .b32 retval0;
      call.uni (retval0), clampneg, (param0); ld.param.b32 %r3, [retval0+0]; }
    add.s32 %r4, %r2, %r3;
    st.global.u32 [%rd1], %r4;
$L__BB0_1:
    ret;
}
"""

# outer(x) = inner(x) * 2, inner(x) = x + 1.
NESTED = HEAD + """
.func (.param .b32 func_retval0) inner(.param .b32 inner_param_0)
{
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [inner_param_0];
    add.s32 %r2, %r1, 1;
    st.param.b32 [func_retval0+0], %r2;
    ret;
}
.func (.param .b32 func_retval0) outer(.param .b32 outer_param_0)
{
    .reg .b32 %r<4>;
    ld.param.u32 %r1, [outer_param_0];
    { .param .b32 param0; st.param.b32 [param0+0], %r1; .param .b32 retval0;
      call.uni (retval0), inner, (param0); ld.param.b32 %r2, [retval0+0]; }
    shl.b32 %r3, %r2, 1;
    st.param.b32 [func_retval0+0], %r3;
    ret;
}
.visible .entry k(.param .u64 k_param_0)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [k_param_0];
    mov.u32 %r1, 20;
    { .param .b32 param0; st.param.b32 [param0+0], %r1; .param .b32 retval0;
      call.uni (retval0), outer, (param0); ld.param.b32 %r2, [retval0+0]; }
    st.global.u32 [%rd1], %r2;
    ret;
}
"""

# ping -> pong -> ping: mutual recursion.
MUTUAL = HEAD + """
.func ping(.param .b32 ping_param_0);
.func pong(.param .b32 pong_param_0)
{
    .reg .b32 %r<2>;
    ld.param.u32 %r1, [pong_param_0];
    { .param .b32 param0; st.param.b32 [param0+0], %r1; call.uni ping, (param0); }
    ret;
}
.func ping(.param .b32 ping_param_0)
{
    .reg .b32 %r<2>;
    ld.param.u32 %r1, [ping_param_0];
    { .param .b32 param0; st.param.b32 [param0+0], %r1; call.uni pong, (param0); }
    ret;
}
.visible .entry k()
{
    { .param .b32 param0; st.param.b32 [param0+0], 1; call.uni ping, (param0); }
    ret;
}
"""


def run(kernel, steps: int = 1000, regs: dict | None = None) -> dict[str, int]:
    """A tiny reference interpreter for the integer subset the hand-written kernels use:
    registers and .local/.param variables of one thread; returns the u32 stores to global
    (and leaves the registers in `regs`)."""
    regs = {} if regs is None else regs
    mem: dict[tuple[str, int], int] = {}
    out: dict[str, int] = {}
    labels = {s.name: i for i, s in enumerate(kernel.body) if isinstance(s, Label)}

    def val(o):
        return regs[o.name] if isinstance(o, Reg) else o.value

    pc = 0
    for _ in range(steps):
        if pc >= len(kernel.body):
            return out
        s = kernel.body[pc]
        pc += 1
        if isinstance(s, Label):
            continue
        if s.guard is not None and bool(regs[s.guard.reg.name]) == s.guard.negated:
            continue
        op, o = s.opcode, s.operands
        if op == "ret":
            return out
        if op == "bra":
            pc = labels[o[0].name]
        elif op == "mov":
            regs[o[0].name] = val(o[1])
        elif op == "add":
            regs[o[0].name] = val(o[1]) + val(o[2])
        elif op == "shl":
            regs[o[0].name] = val(o[1]) << val(o[2])
        elif op == "setp":
            regs[o[0].name] = int(val(o[1]) < val(o[2]))
        elif op == "ld" and s.space == "param" and isinstance(o[1].base, Sym) and o[1].base.name.startswith("k_"):
            regs[o[0].name] = 0                      # the kernel's pointer argument
        elif op == "ld":
            assert s.space == "local", s.mnemonic     # every call-scope access is .local now
            regs[o[0].name] = mem[(o[1].base.name, o[1].offset)]
        elif op == "st" and s.space == "global":
            out["result"] = val(o[1])
        elif op == "st":
            assert s.space == "local", s.mnemonic
            mem[(o[0].base.name, o[0].offset)] = val(o[1])
        else:
            raise AssertionError(f"interpreter lacks {s.mnemonic}")
    raise AssertionError("did not finish")


def inlined(text: str):
    p = parse(text)
    return p, inline_calls(p, p.kernel())


# ----------------------------------------------------------------------------- hand-written PTX
def test_call_with_two_args_and_a_result_inlines_to_straight_line_code():
    _, k = inlined(ADD2)
    assert not has_calls(k)
    cfg = build_cfg(k)
    assert all(b.terminator in ("fallthrough", "branch", "exit") for b in cfg.blocks)
    assert run(k) == {"result": 12}


def test_call_scope_params_become_local_variables_of_the_same_type():
    _, k = inlined(ADD2)
    spaces = {v.name: (v.space, v.type) for v in k.locals}
    assert spaces == {"param0": ("local", "b32"), "param1": ("local", "b32"), "retval0": ("local", "b32")}
    assert [i.mnemonic for i in k.instructions if i.space == "param"] == ["ld.param.u64"]   # the entry param


def test_callee_formals_are_replaced_by_the_call_site_variables():
    _, k = inlined(ADD2)
    loads = [i for i in k.instructions if i.opcode == "ld" and i.space == "local"]
    assert [i.operands[1] for i in loads] == [Address(Sym("param0")), Address(Sym("param1")), Address(Sym("retval0"))]


def test_callee_registers_are_renamed_per_site_and_declared():
    _, k = inlined(ADD2)
    assert k.register_types["%r$i1_3"] == "b32"
    assert "%r3" in k.register_types                # the caller's own %r3 is untouched


def test_same_function_inlined_twice_has_disjoint_labels_and_registers():
    _, k = inlined(TWICE)
    labels = [s.name for s in k.body if isinstance(s, Label)]
    assert len(labels) == len(set(labels)) == 5      # kernel's, 2 x (callee's + return label)
    site_regs = [{n for n in k.register_types if f"$i{t}" in n} for t in (1, 2)]
    assert len(site_regs[0]) == len(site_regs[1]) == 5 and not site_regs[0] & site_regs[1]


def test_predicated_ret_becomes_a_predicated_branch_to_the_return_label():
    _, k = inlined(TWICE)
    guarded = [i for i in k.instructions if i.opcode == "bra" and i.guard is not None]
    assert [(g.guard.reg.name, g.operands[0].name) for g in guarded] == [
        ("%p$i1_1", "$L__ret$i1_end"), ("%p$i2_1", "$L__ret$i2_end")]
    assert run(k) == {"result": 4}                    # clampneg(-3) + clampneg(4)


def test_nested_calls_are_inlined_recursively():
    _, k = inlined(NESTED)
    assert not has_calls(k)
    assert run(k) == {"result": 42}


@pytest.mark.parametrize("x, result, callee_ran", [(7, 99, False), (-7, -2, True)])
def test_guarded_call_runs_only_where_its_guard_is_true(x, result, callee_ran):
    text = ADD2.replace("    mov.u32 %r1, 7;", f"    mov.u32 %r1, {x};\n    .reg .pred %q;\n    setp.lt.s32 %q, %r1, 0;\n"
                        "    mov.u32 %r2, 99;").replace("call.uni (retval0)", "@%q call.uni (retval0)")
    text = text.replace("ld.param.b32 %r2, [retval0+0];", "@%q ld.param.b32 %r2, [retval0+0];")
    _, k = inlined(text)
    regs: dict = {}
    assert run(k, regs=regs) == {"result": result}
    assert ("%r$i1_3" in regs) == callee_ran


def test_mutual_recursion_places_each_function_once_behind_the_call_stack():
    from isa.recursion import STACK
    p = parse(MUTUAL)
    k = inline_calls(p, p.kernel())
    assert not has_calls(k)
    assert STACK in {v.name for v in k.locals}
    loads = [i for i in k.instructions if i.opcode == "ld" and i.suffixes == ("local", "u32")
             and i.operands[0] in (Reg("%r$rc0_1"), Reg("%r$rc1_1"))]
    assert len(loads) == 2                   # ping's and pong's `ld.param %r1`: one copy each


def test_a_recursive_functions_depot_lives_in_its_stack_frame_not_in_the_kernel():
    p = parse((PTX_DIR / "recursive_call.ptx").read_text())
    k = inline_calls(p, p.kernel())
    depots = {v.name for v in k.locals if v.name.startswith("__local_depot")}
    assert depots == {"__local_depot0"}      # the kernel's own; dev_fib's __local_depot1 is frame-relative


def test_nesting_deeper_than_max_depth_raises():
    p = parse(NESTED)
    with pytest.raises(UnsupportedCall, match="nested more than 1 calls deep"):
        inline_calls(p, p.kernel(), max_depth=1)


def test_indirect_call_raises_naming_the_register():
    text = HEAD + ".visible .entry k()\n{ .reg .b64 %rd<2>; .reg .b32 %r<2>;\n mov.u64 %rd1, 0;\n" \
        "call.uni %rd1, (%r1);\n ret; }\n"
    p = parse(text)
    with pytest.raises(UnsupportedCall, match=r"indirect call through %rd1 \(called at PTX line 7"):
        inline_calls(p, p.kernel())


def test_call_to_undefined_extern_raises_naming_it():
    p = parse((PTX_DIR / "half_precision.ptx").read_text())
    with pytest.raises(UnsupportedCall, match=r"__hfma \(_ZL6__hfma6__halfS_S__nbst\) is declared \(\.extern \.func\)"):
        inline_calls(p, p.kernel())


def test_externs_argument_defines_a_prototype_only_function():
    proto = ADD2.replace(ADD2[ADD2.index(".func"):ADD2.index(".visible")],
                         ".extern .func (.param .b32 func_retval0) add2(.param .b32 a, .param .b32 b);\n")
    lib = parse(ADD2).functions
    p = parse(proto)
    assert reachable_externs(p, p.kernel()) == ("add2",)
    assert run(inline_calls(p, p.kernel(), externs=lib)) == {"result": 12}


def test_kernel_without_calls_is_returned_unchanged():
    p = parse((PTX_DIR / "saxpy.ptx").read_text())
    assert prepare_kernel(p, p.kernel()) is p.kernel()


# ----------------------------------------------------------------------------- NVVM fixtures
def test_internal_accurate_pow_inlines_into_a_call_free_kernel():
    p = parse((PTX_DIR / "math_f64.ptx").read_text())
    k = inline_calls(p, p.kernel())
    assert not has_calls(k)
    callee = p.functions["__internal_accurate_pow"]
    assert len(k.instructions) == len(p.kernel().instructions) - 1 + len(callee.instructions)   # call out, body in
    build_cfg(k)                                     # every branch target exists


def test_inlined_callee_instructions_keep_their_own_ptx_lines():
    p = parse((PTX_DIR / "math_f64.ptx").read_text())
    k = inline_calls(p, p.kernel())
    callee_lines = {i.ptx_line for i in p.functions["__internal_accurate_pow"].instructions} - {636}   # ret -> bra
    assert callee_lines <= {i.ptx_line for i in k.instructions}


def test_inlined_kernel_prints_and_reparses_to_the_same_kernel():
    p = parse((PTX_DIR / "math_f64.ptx").read_text())
    k = inline_calls(p, p.kernel())
    q = dataclasses.replace(p, kernels={k.name: k})
    again = parse(format_program(q))
    assert strip_lines(again).kernels[k.name] == strip_lines(q).kernels[k.name]
