"""isa.cfg: basic blocks and immediate post-dominators, one property per test, on
the NVVM fixtures of tests/isa/ptx and on hand-written kernels."""
from __future__ import annotations

from pathlib import Path

import pytest

from isa.cfg import EXIT, build_cfg
from isa.errors import PtxSyntaxError
from isa.parser import parse

PTX_DIR = Path(__file__).parent / "ptx"
FIXTURES = sorted(PTX_DIR.glob("*.ptx"))


def kernel_of(name: str):
    return parse((PTX_DIR / f"{name}.ptx").read_text()).kernel()


def cfg_of(lines: str):
    src = (".version 8.0\n.target sm_90\n.address_size 64\n.entry k()\n"
           "{ .reg .pred %p<3>; .reg .b32 %r<5>;\n" + lines + "\n}\n")
    k = parse(src).kernel()
    return k, build_cfg(k)


def branch_block(k, cfg, target: str) -> int:
    """The block ending in the guarded `bra` to `target`."""
    (b,) = [b.index for b in cfg.blocks if b.end > b.start
            and k.instructions[b.end - 1].opcode == "bra" and k.instructions[b.end - 1].guard
            and k.instructions[b.end - 1].operands[0].name == target]
    return b


# ----------------------------------------------------------------------------- fixtures
def test_reduction_join_after_the_stride_test_is_the_ipdom_of_its_branch():
    # `if t % (2*stride) == 0: sm[t] += ...` is `@%p7 bra $L__BB0_9` over the body
    k = kernel_of("reduction")
    cfg = build_cfg(k)
    assert cfg.ipdom[branch_block(k, cfg, "$L__BB0_9")] == cfg.label_block["$L__BB0_9"]


def test_reduction_has_15_blocks():
    assert len(build_cfg(kernel_of("reduction")).blocks) == 15


def test_reduction_every_bar_sync_ends_its_block():
    k = kernel_of("reduction")
    cfg = build_cfg(k)
    ends = [k.instructions[b.end - 1].mnemonic for b in cfg.blocks if b.terminator == "barrier"]
    assert ends == ["bar.sync", "bar.sync"]


def test_reduction_loop_latch_reconverges_after_the_loop():
    k = kernel_of("reduction")
    cfg = build_cfg(k)
    assert cfg.ipdom[branch_block(k, cfg, "$L__BB0_2")] == cfg.label_block["$L__BB0_10"]


def test_if_else_both_arms_join_at_the_return_block():
    k = kernel_of("if_else")
    cfg = build_cfg(k)
    assert cfg.ipdom[branch_block(k, cfg, "$L__BB0_3")] == cfg.label_block["$L__BB0_4"]


def test_nested_divergence_inner_branch_joins_at_the_store():
    k = kernel_of("nested_divergence")
    cfg = build_cfg(k)
    assert cfg.ipdom[branch_block(k, cfg, "$L__BB0_5")] == cfg.label_block["$L__BB0_6"]


def test_nested_divergence_bounds_check_joins_at_the_return():
    k = kernel_of("nested_divergence")
    cfg = build_cfg(k)
    assert cfg.ipdom[branch_block(k, cfg, "$L__BB0_7")] == cfg.label_block["$L__BB0_7"]


def test_early_return_branches_join_at_the_single_ret():
    k = kernel_of("early_return")
    cfg = build_cfg(k)
    assert cfg.ipdom[branch_block(k, cfg, "$L__BB0_3")] == cfg.label_block["$L__BB0_4"]


def test_while_break_loop_body_branch_joins_before_the_latch():
    k = kernel_of("while_break")
    cfg = build_cfg(k)
    assert cfg.ipdom[branch_block(k, cfg, "$L__BB0_5")] == cfg.label_block["$L__BB0_6"]


def test_while_break_loop_exit_test_skips_to_the_store():
    k = kernel_of("while_break")
    cfg = build_cfg(k)
    assert cfg.ipdom[branch_block(k, cfg, "$L__BB0_8")] == cfg.label_block["$L__BB0_8"]


def test_ret_block_has_ipdom_exit():
    k = kernel_of("saxpy")
    cfg = build_cfg(k)
    assert [cfg.ipdom[b.index] for b in cfg.blocks if b.terminator == "exit"] == [EXIT]


def test_call_does_not_end_a_block():
    k = kernel_of("recursive_call")
    cfg = build_cfg(k)
    call = next(n for n, i in enumerate(k.instructions) if i.opcode == "call")
    b = cfg.blocks[cfg.block_of[call]]
    assert b.start < call < b.end - 1


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_blocks_tile_the_instructions(path):
    p = parse(path.read_text())
    for k in (*p.kernels.values(), *(f for f in p.functions.values() if f.defined)):
        bounds = [b.start for b in build_cfg(k).blocks] + [len(k.instructions)]
        assert [(b.start, b.end) for b in build_cfg(k).blocks] == list(zip(bounds, bounds[1:]))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_block_of_agrees_with_block_ranges(path):
    k = parse(path.read_text()).kernel()
    cfg = build_cfg(k)
    assert all(b.start <= i < b.end for i, bi in enumerate(cfg.block_of) for b in [cfg.blocks[bi]])


# ----------------------------------------------------------------------------- hand-written
def test_guarded_bra_successors_are_target_then_fallthrough():
    _, cfg = cfg_of("@%p1 bra $L2;\nadd.s32 %r1, %r1, 1;\n$L2:\nret;")
    assert (cfg.blocks[0].succs, cfg.blocks[0].terminator) == ((2, 1), "cond_branch")


def test_unconditional_bra_has_only_its_target():
    _, cfg = cfg_of("bra.uni $L2;\nadd.s32 %r1, %r1, 1;\n$L2:\nret;")
    assert (cfg.blocks[0].succs, cfg.blocks[0].terminator) == ((2,), "branch")


def test_guarded_ret_ends_its_block_falls_through_and_exits():
    _, cfg = cfg_of("@%p1 ret;\nadd.s32 %r1, %r1, 1;\nret;")
    assert (cfg.blocks[0].succs, cfg.blocks[0].exits, cfg.blocks[0].terminator) == ((1,), True, "cond_exit")


def test_unguarded_exit_has_no_successor():
    _, cfg = cfg_of("exit;")
    assert (cfg.blocks[0].succs, cfg.blocks[0].exits, cfg.blocks[0].terminator) == ((), True, "exit")


def test_guarded_trap_exits():
    _, cfg = cfg_of("@%p1 trap;\nret;")
    assert (cfg.blocks[0].exits, cfg.blocks[0].terminator) == (True, "cond_exit")


def test_barrier_is_the_last_instruction_of_its_block():
    k, cfg = cfg_of("add.s32 %r1, %r1, 1;\nbarrier.sync 0;\nadd.s32 %r1, %r1, 1;\nret;")
    assert [(b.start, b.end, b.terminator) for b in cfg.blocks] == [(0, 2, "barrier"), (2, 4, "exit")]


def test_guarded_ret_ipdom_is_exit_not_its_fallthrough():
    # the guarded ret may leave the kernel, so the fall-through does not post-dominate it
    _, cfg = cfg_of("@%p1 ret;\nadd.s32 %r1, %r1, 1;\nret;")
    assert cfg.ipdom[0] == EXIT


def test_diamond_ipdom_is_the_join():
    _, cfg = cfg_of("@%p1 bra $Lelse;\nadd.s32 %r1, %r1, 1;\nbra.uni $Ljoin;\n"
                    "$Lelse:\nadd.s32 %r1, %r1, 2;\n$Ljoin:\nret;")
    assert cfg.ipdom[0] == cfg.label_block["$Ljoin"]


def test_infinite_loop_blocks_have_ipdom_exit():
    _, cfg = cfg_of("@%p1 bra $Lend;\n$Lspin:\nadd.s32 %r1, %r1, 1;\nbra.uni $Lspin;\n$Lend:\nret;")
    assert cfg.ipdom[cfg.label_block["$Lspin"]] == EXIT


def test_branch_around_an_infinite_loop_reconverges_at_exit_path():
    # only paths that reach EXIT count: the branch block's ipdom is $Lend
    _, cfg = cfg_of("@%p1 bra $Lend;\n$Lspin:\nbra.uni $Lspin;\n$Lend:\nret;")
    assert cfg.ipdom[0] == cfg.label_block["$Lend"]


def test_unreachable_block_has_ipdom_exit():
    _, cfg = cfg_of("bra.uni $L2;\n$Ldead:\nadd.s32 %r1, %r1, 1;\nbra.uni $L2;\n$L2:\nret;")
    assert cfg.ipdom[cfg.label_block["$Ldead"]] == EXIT


def test_falling_off_the_end_exits():
    _, cfg = cfg_of("add.s32 %r1, %r1, 1;")
    assert (cfg.blocks[0].succs, cfg.blocks[0].exits) == ((), True)


def test_trailing_label_gets_an_empty_exiting_block():
    _, cfg = cfg_of("ret;\n$L__func_end0:")
    b = cfg.blocks[cfg.label_block["$L__func_end0"]]
    assert (b.start, b.end, b.succs, b.exits) == (1, 1, (), True)


def test_every_label_starts_a_block():
    _, cfg = cfg_of("add.s32 %r1, %r1, 1;\n$Lnot_a_target:\nadd.s32 %r1, %r1, 1;\nret;")
    assert [(b.label, b.start, b.terminator) for b in cfg.blocks] == \
        [(None, 0, "fallthrough"), ("$Lnot_a_target", 1, "exit")]


def test_branch_to_unknown_label_names_label_and_line():
    src = ".version 8.0\n.target sm_90\n.address_size 64\n.entry k()\n{ .reg .pred %p1;\n@%p1 bra $Lnowhere;\nret;\n}\n"
    with pytest.raises(PtxSyntaxError, match=r"\$Lnowhere") as e:
        build_cfg(parse(src).kernel())
    assert e.value.ptx_line == 6
