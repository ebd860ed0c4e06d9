"""The one operand-register walker (`isa.program.operand_regs`) that the prediction-only
relevance analysis, the fast path's liveness and the loop analysis all use. One property per test."""
from gpusim.functional import relevance
from gpusim.functional.fastpath.liveness import uses_defs
from isa.program import (Address, ArgList, Guard, Imm, Instruction, PredPair, Reg, Special, Sym, TensorRef, Vector,
                         operand_regs)

# `and.pred %p3, %p1, !%p2`: the negated source is a negated Guard in operand position (as decode reads it)
AND_NOT = Instruction("and", ("pred",), (Reg("%p3"), Reg("%p1"), Guard(Reg("%p2"), negated=True)))


def test_every_operand_shape_names_its_registers_in_order():
    ops = (Reg("%r1"), Address(Reg("%rd2"), 8), Address(Sym("smem"), 0), Vector((Reg("%f1"), None, Reg("%f2"))),
           ArgList((Sym("param0"), Reg("%r3"))), TensorRef(Reg("%rd4"), (Reg("%r5"), Imm(0))),
           PredPair(Reg("%p1"), None), Imm(3), Special("%tid.x"), Sym("x"))
    assert operand_regs(*ops) == ["%r1", "%rd2", "%f1", "%f2", "%r3", "%rd4", "%r5", "%p1"]


def test_a_negated_predicate_source_reads_its_register():
    assert operand_regs(Guard(Reg("%p2"), negated=True)) == ["%p2"]


def test_liveness_keeps_a_negated_predicate_source_live():
    uses, defs = uses_defs(AND_NOT, 1)
    assert (uses, defs) == ({"%p1", "%p2"}, {"%p3"})


def test_relevance_passes_relevance_to_a_negated_predicate_source():
    assert relevance.regs(*AND_NOT.operands[1:]) == {"%p1", "%p2"}
