"""Register operands of SASS instructions (gpusim/frontend/sass/operands.py): the slots
each instruction writes and reads, hand-checked on real nvdisasm syntax, and every
register of every instruction of the programs and microbenchmarks accounted for."""
import re

import pytest

from gpusim.frontend import sass
from gpusim.frontend.sass.listing import SassInstr
from gpusim.frontend.sass.operands import (B_BASE, NUM_SLOTS, P_BASE, UP_BASE, UR_BASE, UNKNOWN_OPCODES,
                                           register_operands, slot_name)

needs_tools = pytest.mark.skipif(not (sass.have_ptxas() and sass.have_nvdisasm()),
                                 reason=f"ptxas/nvdisasm not installed: {sass.INSTALL_HINT}")


def instr(text: str) -> SassInstr:
    """A SassInstr from one nvdisasm line, e.g. '@!P0 IADD3 R17, P2, R4, R17, RZ'."""
    pred = None
    m = re.match(r"^(@!?U?P[T\d]+)\s+(.*)$", text)
    if m:
        pred, text = m.group(1), m.group(2)
    parts = text.split(None, 1)
    return SassInstr(offset=0, opcode=parts[0], text=text, source_line=None, predicate=pred,
                     operands=parts[1] if len(parts) > 1 else "")


def names(slots) -> set[str]:
    return {slot_name(s) for s in slots}


def writes(text: str) -> set[str]:
    return names(register_operands(instr(text))[0])


def reads(text: str) -> set[str]:
    return names(register_operands(instr(text))[1])




_TOKEN = re.compile(r"(?<![\w$.])(UR\d+|R\d+|UP\d|P\d|B\d+)(?![\w$])")


def _named_registers(i: SassInstr) -> set[str]:
    text = re.sub(r"`\([^)]*\)", "", i.operands) + " " + (i.predicate or "").lstrip("@!")
    return set(_TOKEN.findall(text))


# ----------------------------------------------------------------------------- slot numbering
def test_slot_numbering_is_r_ur_p_up_b():
    assert (UR_BASE, P_BASE, UP_BASE, B_BASE, NUM_SLOTS) == (256, 320, 328, 336, 352)


def test_slot_names_round_trip_the_last_register_of_each_file():
    assert [slot_name(s) for s in (254, 318, 326, 334, 351)] == ["R254", "UR62", "P6", "UP6", "B15"]


# ----------------------------------------------------------------------------- hand-checked
CASES = [
    # (text, writes, reads)
    ("IADD3 R17, P2, R4, R17, RZ", {"R17", "P2"}, {"R4", "R17"}),
    ("IADD3 R14, P0, P1, -R15, R11, R14", {"R14", "P0", "P1"}, {"R15", "R11", "R14"}),
    ("IADD3.X R15, ~R4, R12, R13, P0, P1", {"R15"}, {"R4", "R12", "R13", "P0", "P1"}),
    ("IADD3 RZ, P0, R8, 0x8, RZ", {"P0"}, {"R8"}),
    ("LEA R8, P1, R12, UR22, 0x2", {"R8", "P1"}, {"R12", "UR22"}),
    ("LEA.HI.X R9, R19, UR11, R20, 0x2, P0", {"R9"}, {"R19", "UR11", "R20", "P0"}),
    ("IMAD.WIDE R2, R5, UR4, R2", {"R2", "R3"}, {"R5", "UR4", "R2", "R3"}),
    ("IMAD.WIDE.U32 R16, P1, R12, -0x7ff87f90, R14", {"R16", "R17", "P1"}, {"R12", "R14", "R15"}),
    ("IMAD.WIDE.U32.X R14, R13, -0x7ff87f90, R18, P1", {"R14", "R15"}, {"R13", "R18", "R19", "P1"}),
    ("IMAD.HI.U32 R14, P2, R13, R17, R14", {"R14", "P2"}, {"R13", "R17", "R14"}),
    ("IMAD.X R7, RZ, RZ, ~R11, P0", {"R7"}, {"R11", "P0"}),
    ("UIMAD.WIDE UR4, UR4, UR6, URZ", {"UR4", "UR5"}, {"UR4", "UR6"}),
    ("ISETP.GE.U32.AND P0, PT, R2, UR4, PT", {"P0"}, {"R2", "UR4"}),
    ("ISETP.NE.AND.EX P0, PT, R20, RZ, !P0, P1", {"P0"}, {"R20", "P0", "P1"}),
    ("UISETP.GE.AND.EX UP1, UPT, UR17, URZ, UPT, UP1", {"UP1"}, {"UR17", "UP1"}),
    ("PLOP3.LUT P0, PT, P1, P0, PT, 0x8a, 0x0", {"P0"}, {"P1", "P0"}),
    ("PLOP3.LUT P0, PT, PT, PT, UP1, 0x80, 0x0", {"P0"}, {"UP1"}),
    ("DSETP.MIN.AND P5, P4, R2.reuse, R8, PT", {"P5", "P4"}, {"R2", "R3", "R8", "R9"}),
    ("FSETP.GTU.FTZ.AND P1, PT, |R3|, +INF , PT", {"P1"}, {"R3"}),
    ("LOP3.LUT P2, RZ, R15, 0x7fffffff, RZ, 0xc0, !PT", {"P2"}, {"R15"}),
    ("FCHK P0, R0, R3", {"P0"}, {"R0", "R3"}),
    ("VOTE.ANY R4, PT, P0", {"R4"}, {"P0"}),
    ("VOTE.ALL P2, P0", {"P2"}, {"P0"}),
    ("MATCH.ALL P2, R13, R6", {"P2", "R13"}, {"R6"}),
    ("B2R.RESULT RZ, P1", {"P1"}, set()),
    ("SHFL.DOWN PT, R3, R2, 0x10, 0x1f", {"R3"}, {"R2"}),
    ("P2R R23, PR, RZ, 0x2", {"R23"}, {"P1"}),
    ("R2P PR, R2.B1, 0x3", {"P0", "P1"}, {"R2"}),
    ("SEL R8, R9, R0, !P1", {"R8"}, {"R9", "R0", "P1"}),
    ("FFMA R17, R14, 1.4426950216293334961, -R17", {"R17"}, {"R14", "R17"}),
    ("HADD2.F32 R2, -RZ, R4.H0_H0", {"R2"}, {"R4"}),
    ("PRMT R12, R12.B2, 0x7610, R5", {"R12"}, {"R12", "R5"}),
    ("@!P0 FFMA R15, R0, 1.84467440737095516160e+19, RZ", {"R15"}, {"R0", "P0"}),
    ("@P1 BRA `(.L_x_1)", set(), {"P1"}),
    ("@!P1 BRA !P2, `(.L_x_21)", set(), {"P1", "P2"}),
    ("EXIT", set(), set()),
    ("BSSY B0, `(.L_x_0)", {"B0"}, set()),
    ("BSYNC B1", set(), {"B1"}),
    ("BREAK !P0, B1", {"B1"}, {"P0", "B1"}),
    ("BMOV.32.CLEAR RZ, B0", {"B0"}, {"B0"}),
    ("BMOV.32 B6, R24", {"B6"}, {"R24"}),
    ("RET.REL.NODEC R14 `(_ZN8programs9int64_mix9int64_mixB2v1E)", set(), {"R14"}),
    ("CALL.REL.NOINC `($__internal_0_$__cuda_sm20_div_s64)", set(), set()),
    ("BAR.RED.POPC.DEFER_BLOCKING 0x0, P0", set(), {"P0"}),
    ("S2R R2, SR_TID.X", {"R2"}, set()),
    ("S2UR UR5, SR_CgaCtaId", {"UR5"}, set()),
    ("CS2R R12, SRZ", {"R12", "R13"}, set()),
    ("CS2R.32 R2, SR_CLOCKLO", {"R2"}, set()),
    ("MUFU.RSQ R0, -QNAN", {"R0"}, set()),
    ("MUFU.RCP64H R3, R15", {"R3"}, {"R15"}),
    ("LDC R1, c[0x0][0x28]", {"R1"}, set()),
    ("LDC R0, c[0x3][R2]", {"R0"}, {"R2"}),
    ("LDC.64 R16, c[0x0][0x280]", {"R16", "R17"}, set()),
    ("ULDC.64 UR4, c[0x0][0x208]", {"UR4", "UR5"}, set()),
    ("LDG.E.64 R8, desc[UR14][R2.64]", {"R8", "R9"}, {"R2", "R3", "UR14", "UR15"}),
    ("LDG.E R8, desc[UR8][R8.64+0xc]", {"R8"}, {"R8", "R9", "UR8", "UR9"}),
    ("LDG.E.SYS R6, [R6+0xc]", {"R6"}, {"R6", "R7"}),
    ("LDG.E.SYS R4, [UR6]", {"R4"}, {"UR6", "UR7"}),
    ("STG.E.64 desc[UR4][R4.64], R2", set(), {"R2", "R3", "R4", "R5", "UR4", "UR5"}),
    ("STG.E desc[UR4][R2.64+0x4], R4", set(), {"R2", "R3", "R4", "UR4", "UR5"}),
    ("STL.128 [R1+0x10], R4", set(), {"R1", "R4", "R5", "R6", "R7"}),
    ("LDS.128 R8, [R2+0x10]", {"R8", "R9", "R10", "R11"}, {"R2"}),
    ("LDS R15, [R18+UR4]", {"R15"}, {"R18", "UR4"}),
    ("LDS R0, [R11.X4+0x40]", {"R0"}, {"R11"}),
    ("STS [R11+0x80], R0", set(), {"R11", "R0"}),
    ("ATOMS.POPC.INC.32 RZ, [R6+URZ]", set(), {"R6"}),
    ("ATOMS.CAS R10, [R10], R12, R13", {"R10"}, {"R10", "R12", "R13"}),
    ("ATOMG.E.ADD.STRONG.GPU PT, R5, desc[UR4][R2.64], R7", {"R5"}, {"R2", "R3", "R7", "UR4", "UR5"}),
    ("ATOMG.E.CAS.STRONG.GPU PT, R6, [R16], R20, R21", {"R6"}, {"R16", "R17", "R20", "R21"}),
    ("REDG.E.ADD.F64.RN.STRONG.GPU desc[UR12][R16.64], R8", set(), {"R16", "R17", "R8", "R9", "UR12", "UR13"}),
    ("RED.E.ADD.STRONG.GPU [R2.64], R7", set(), {"R2", "R3", "R7"}),
    ("DFMA R2, R2, UR6, R6", {"R2", "R3"}, {"R2", "R3", "UR6", "UR7", "R6", "R7"}),
    ("DADD R8, -RZ, |R4|", {"R8", "R9"}, {"R4", "R5"}),
    ("DMUL R10, R10, c[0x2][0x0]", {"R10", "R11"}, {"R10", "R11"}),
    ("F2F.F64.F32 R12, R0", {"R12", "R13"}, {"R0"}),
    ("F2F.F32.F64 R10, R10", {"R10"}, {"R10", "R11"}),
    ("I2F.S64 R14, R14", {"R14"}, {"R14", "R15"}),
    ("I2F.U64.RP R13, UR4", {"R13"}, {"UR4", "UR5"}),
    ("I2F.F64.U32 R8, R17", {"R8", "R9"}, {"R17"}),
    ("F2I.U64.TRUNC R12, R12", {"R12", "R13"}, {"R12"}),
    ("F2I.F64.TRUNC R18, R2", {"R18"}, {"R2", "R3"}),
    ("FRND.F64.FLOOR R8, R4", {"R8", "R9"}, {"R4", "R5"}),
    ("MOV.64 R4, R6", {"R4", "R5"}, {"R6", "R7"}),
    ("HMMA.16816.F32 R4, R8, R12, R4", {"R4", "R5", "R6", "R7"},
     {"R8", "R9", "R10", "R11", "R12", "R13", "R4", "R5", "R6", "R7"}),
    ("SHF.L.U64.HI R19, R6, 0x2, R7", {"R19"}, {"R6", "R7"}),
]


@pytest.mark.parametrize("text, w, r", CASES, ids=[c[0] for c in CASES])
def test_writes(text, w, r):
    assert writes(text) == w


@pytest.mark.parametrize("text, w, r", CASES, ids=[c[0] for c in CASES])
def test_reads(text, w, r):
    assert reads(text) == r


def test_zero_registers_are_no_slots():
    assert register_operands(instr("IMAD.MOV.U32 R9, RZ, RZ, RZ"))[1] == ()


def test_uniform_zero_and_true_predicates_are_no_slots():
    assert register_operands(instr("UIADD3.X UR6, URZ, -0x1, URZ, UP0, !UPT"))[1] == (UP_BASE + 0,)


def test_the_guard_predicate_is_read():
    assert reads("@!P3 LOP3.LUT R9, RZ, R0, RZ, 0x33, !PT") == {"P3", "R0"}


def test_a_uniform_guard_predicate_is_read():
    assert reads("@UP0 UMOV UR4, 0x1") == {"UP0"}


def test_byte_selector_is_not_a_barrier_register():
    assert reads("PRMT R12, R12.B2, 0x7610, R5") & {"B2"} == set()


def test_unknown_opcode_writes_and_reads_its_first_register():
    assert register_operands(instr("FROBNICATE R4, R5")) == ((4,), (4, 5))


def test_unknown_opcode_is_recorded():
    register_operands(instr("FROBNICATE2 R4, R5"))
    assert "FROBNICATE2" in UNKNOWN_OPCODES


# ----------------------------------------------------------------------------- every instruction
@needs_tools
def test_every_register_of_every_program_instruction_is_a_write_or_a_read(corpus):
    missing = [(k, i.text) for k, i in corpus
               if not _named_registers(i) <= names(sum(register_operands(i), ()))]
    assert missing == []


@needs_tools
def test_every_program_opcode_has_a_known_operand_shape(corpus):
    from gpusim.frontend.sass import operands
    bases = {i.base for _, i in corpus}
    assert sorted(bases - operands.KNOWN) == []


@needs_tools
def test_every_slot_is_in_range(corpus):
    assert all(0 <= s < NUM_SLOTS for _, i in corpus for s in sum(register_operands(i), ()))


@needs_tools
def test_only_stores_control_and_discarded_atomics_write_nothing(corpus):
    from gpusim.frontend.sass.operands import NO_DEST
    silent = {i.base for _, i in corpus if not register_operands(i)[0] and i.base not in NO_DEST}
    assert silent <= {"ATOMS", "ATOMG", "ATOM"}          # e.g. ATOMS.POPC.INC.32 RZ, [R6+URZ]
