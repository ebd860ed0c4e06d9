"""The SASS opcode table (gpusim/frontend/sass/opcodes.py): pipes, dependency classes,
memory spaces and control-flow flags, hand-checked, on every opcode of the programs, and
against Nsight's per-pipe counters of straight-line kernels measured on H200 and H100."""
import functools
import json
import math
import re

import pytest

from gpusim.frontend import sass
from gpusim.frontend.sass.listing import SassInstr
from gpusim.frontend.sass.opcodes import COUNTED_PIPES, DEPENDENCIES, PIPES, UNKNOWN_OPCODES, classify
from validate.datadir import DATA_DIR

needs_tools = pytest.mark.skipif(not (sass.have_ptxas() and sass.have_nvdisasm()),
                                 reason=f"ptxas/nvdisasm not installed: {sass.INSTALL_HINT}")
DATA = DATA_DIR
HOPPER, AMPERE, VOLTA = (9, 0), (8, 0), (7, 0)


def instr(text: str) -> SassInstr:
    pred = None
    m = re.match(r"^(@!?U?P[T\d]+)\s+(.*)$", text)
    if m:
        pred, text = m.group(1), m.group(2)
    parts = text.split(None, 1)
    return SassInstr(offset=0, opcode=parts[0], text=text, source_line=None, predicate=pred,
                     operands=parts[1] if len(parts) > 1 else "")


def op(text: str, cc=HOPPER):
    return classify(instr(text), cc)


# ----------------------------------------------------------------------------- pipes
PIPE_CASES = [
    ("FFMA R12, R9, R2, R12", HOPPER, "fma"),
    ("FADD R9, R4, R7", HOPPER, "fma"),
    ("IMAD.WIDE R2, R5, UR4, R2", HOPPER, "fmaheavy"),
    ("IMAD.MOV.U32 R16, RZ, RZ, RZ", HOPPER, "fmaheavy"),
    ("VIADD R9, R9, UR12", HOPPER, "fmaheavy"),
    ("IMAD.WIDE R2, R5, c[0x0][0x0], R2", AMPERE, "fma"),
    ("IMAD R9, R9, R0, RZ", VOLTA, "fma"),
    ("HFMA2 R4, R5, R6, R7", HOPPER, "fma"),
    ("HFMA2 R4, R5, R6, R7", AMPERE, "fp16"),
    ("HADD2 R4, R5, R6", VOLTA, "fp16"),
    ("IADD3 R17, P2, R4, R17, RZ", HOPPER, "alu"),
    ("LOP3.LUT R9, R10, UR4, RZ, 0xc0, !PT", HOPPER, "alu"),
    ("ISETP.GE.U32.AND P0, PT, R2, UR4, PT", HOPPER, "alu"),
    ("FSETP.NEU.FTZ.AND P0, PT, R13, R14, PT", HOPPER, "alu"),
    ("FMNMX R11, R4, R11, !PT", HOPPER, "alu"),
    ("VOTE.ANY R0, PT, PT", HOPPER, "alu"),
    ("CS2R R10, SRZ", HOPPER, "alu"),
    ("MUFU.EX2 R17, R17", HOPPER, "xu"),
    ("I2F.U32.RP R13, R16", HOPPER, "xu"),
    ("F2I.FTZ.U32.TRUNC.NTZ R15, R14", HOPPER, "xu"),
    ("POPC R5, R9", HOPPER, "xu"),
    ("DFMA R2, R2, UR6, R6", HOPPER, "fp64"),
    ("DADD R8, R12, R8", VOLTA, "fp64"),
    ("LDG.E R7, desc[UR4][R6.64]", HOPPER, "lsu"),
    ("STS [R21], R8", HOPPER, "lsu"),
    ("ATOMS.POPC.INC.32 RZ, [R6+URZ]", HOPPER, "lsu"),
    ("SHFL.DOWN PT, R3, R2, 0x10, 0x1f", HOPPER, "lsu"),
    ("S2R R2, SR_TID.X", HOPPER, "lsu"),
    ("S2R R5, SR_CTAID.X", HOPPER, "adu"),
    ("S2UR UR4, SR_CTAID.X", HOPPER, "adu"),
    ("LDC R1, c[0x0][0x28]", HOPPER, "adu"),
    ("BAR.SYNC.DEFER_BLOCKING 0x0", HOPPER, "adu"),
    ("EXIT", HOPPER, "cbu"),
    ("BSSY B0, `(.L_x_0)", HOPPER, "cbu"),
    ("@P0 BRA `(.L_x_1)", HOPPER, "cbu"),
    ("UIADD3 UR9, UP0, UR10, UR11, URZ", HOPPER, "uniform"),
    ("UISETP.GE.AND UP0, UPT, UR9, URZ, UPT", HOPPER, "uniform"),
    ("ULDC.64 UR4, c[0x0][0x208]", HOPPER, "uniform"),
    ("HMMA.16816.F32 R4, R8, R12, R4", AMPERE, "tensor"),
]


@pytest.mark.parametrize("text, cc, pipe", PIPE_CASES,
                         ids=[f"{t.split()[0]}-sm{c[0]}{c[1]}" for t, c, _ in PIPE_CASES])
def test_pipe(text, cc, pipe):
    assert op(text, cc).pipe == pipe


COUNTER_CASES = [
    ("FFMA R12, R9, R2, R12", ("fma",)),                    # fmaheavy or fmalite: the scheduler's choice
    ("IMAD.X R5, R3, 0x1, R11, P0", ("fma", "fmaheavy")),
    ("ULDC.64 UR4, c[0x0][0x208]", ()),
    ("UMOV UR4, URZ", ()),
    ("@P1 BRA `(.L_x_1)", ()),
    ("EXIT", ("cbu", "adu")),
    ("@P0 EXIT", ("cbu",)),
    ("BSYNC B1", ("cbu",)),
]


@pytest.mark.parametrize("text, counters", COUNTER_CASES, ids=[t for t, _ in COUNTER_CASES])
def test_hopper_counters(text, counters):
    assert op(text).counters == counters


DEPENDENCY_CASES = [
    ("FFMA R12, R9, R2, R12", "fixed"),
    ("DFMA R2, R2, UR6, R6", "fixed"),
    ("UIADD3 UR9, UP0, UR10, UR11, URZ", "fixed"),
    ("LDS R0, [R11]", "mio"),
    ("ATOMS.CAS R10, [R10], R12, R13", "mio"),
    ("SHFL.DOWN PT, R3, R2, 0x10, 0x1f", "mio"),
    ("MUFU.RCP R4, R4", "mio"),
    ("S2R R2, SR_TID.X", "mio"),
    ("LDC R0, c[0x3][R0]", "mio"),
    ("LDG.E R7, desc[UR4][R6.64]", "l1tex"),
    ("LDL R26, [R28+0x4]", "l1tex"),
    ("STG.E desc[UR4][R2.64], R9", "l1tex"),
    ("ATOMG.E.EXCH.STRONG.GPU PT, R11, desc[UR12][R4.64], R11", "l1tex"),
]


@pytest.mark.parametrize("text, dep", DEPENDENCY_CASES, ids=[t.split()[0] for t, _ in DEPENDENCY_CASES])
def test_dependency(text, dep):
    assert op(text).dependency == dep


MEMORY_CASES = [
    ("LDG.E R7, desc[UR4][R6.64]", HOPPER, "global"),
    ("LDS.128 R8, [R2+0x10]", HOPPER, "shared"),
    ("STL [R29], R20", HOPPER, "local"),
    ("LDC.64 R16, c[0x0][0x280]", HOPPER, "const"),
    ("ULDC UR4, c[0x0][0x0]", HOPPER, "const"),
    ("LD.E R2, desc[UR4][R2.64]", HOPPER, "generic"),
    ("REDG.E.ADD.STRONG.GPU desc[UR4][R2.64], R7", HOPPER, "global"),
    ("RED.E.ADD.STRONG.GPU [R2.64], R7", AMPERE, "global"),
    ("RED.E.ADD.STRONG.GPU [R2.64], R7", HOPPER, "generic"),
    ("ATOMS.ADD RZ, [R6.X4], R11", VOLTA, "shared"),
    ("FFMA R12, R9, R2, R12", HOPPER, None),
]


@pytest.mark.parametrize("text, cc, memory", MEMORY_CASES,
                         ids=[f"{t.split()[0]}-sm{c[0]}{c[1]}" for t, c, _ in MEMORY_CASES])
def test_memory_space(text, cc, memory):
    assert op(text, cc).memory == memory


FLAG_CASES = [
    ("LDG.E R7, desc[UR4][R6.64]", "is_load"),
    ("STS [R21], R8", "is_store"),
    ("ATOMS.POPC.INC.32 RZ, [R6+URZ]", "is_atomic"),
    ("REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR6][R2.64], R5", "is_atomic"),
    ("BAR.SYNC.DEFER_BLOCKING 0x0", "is_barrier"),
    ("BAR.RED.POPC.DEFER_BLOCKING 0x0, P0", "is_barrier"),
    ("@P0 EXIT", "is_exit"),
    ("@!P1 BRA !P2, `(.L_x_21)", "is_branch"),
    ("CALL.REL.NOINC `($__internal_0_$__cuda_sm20_div_s64)", "is_call"),
    ("RET.REL.NODEC R14 `(_ZN8programs9int64_mix9int64_mixB2v1E)", "is_return"),
]
_FLAGS = ("is_load", "is_store", "is_atomic", "is_barrier", "is_exit", "is_branch", "is_call", "is_return")


@pytest.mark.parametrize("text, flag", FLAG_CASES, ids=[t.split()[0] for t, _ in FLAG_CASES])
def test_flag_is_the_only_one_set(text, flag):
    o = op(text)
    assert [f for f in _FLAGS if getattr(o, f)] == [flag]


def test_warpsync_is_not_a_cta_barrier():
    assert op("WARPSYNC.ALL").is_barrier is False


def test_ldgsts_loads_global_and_stores_shared():
    o = op("LDGSTS.E.BYPASS.128 [R3+0x100], desc[UR4][R4.64]")
    assert (o.is_load, o.is_store, o.memory) == (True, True, "global")


def test_unknown_opcode_falls_back_to_alu():
    o = op("FROBNICATE R4, R5")
    assert (o.pipe, o.dependency, o.known) == ("alu", "fixed", False)


def test_unknown_opcode_is_recorded():
    op("FROBNICATE3 R4, R5")
    assert "FROBNICATE3" in UNKNOWN_OPCODES


# ----------------------------------------------------------------------------- every program opcode


@needs_tools
def test_every_program_opcode_is_in_the_table(corpus):
    assert sorted({i.opcode for _, i in corpus if not classify(i, HOPPER).known}) == []


@needs_tools
def test_every_program_instruction_has_a_pipe_and_a_dependency_class(corpus):
    bad = [i.text for _, i in corpus
           if classify(i, HOPPER).pipe not in PIPES or classify(i, HOPPER).dependency not in DEPENDENCIES]
    assert bad == []


@needs_tools
def test_every_program_memory_access_has_a_space(corpus):
    bad = [i.text for _, i in corpus
           if (lambda o: (o.is_load or o.is_store or o.is_atomic) and o.memory is None)(classify(i, HOPPER))]
    assert bad == []


@needs_tools
def test_hopper_counters_are_measured_pipes(corpus):
    assert {c for _, i in corpus for c in classify(i, HOPPER).counters} <= set(COUNTED_PIPES)


# ----------------------------------------------------------------------------- against Nsight
# Kernels with no branch, whose every warp executes every SASS instruction once: the
# static mix times the warps is what the GPU executed, on each pipe.
STRAIGHT = ["vector_add", "saxpy", "float64_axpy", "warp_vote_demo"]
GPUS = ["h200", "h100"]


@functools.lru_cache(maxsize=None)
def straight(name: str):
    import programs
    from gpusim.frontend.compile import compile_kernel
    case = programs.get(name).case("default")
    ck = compile_kernel(case.kernel, case.args)
    listing = sass.sass_listing(sass.ptxas_info(ck.ptx, ck.entry, ck.cc).cubin, ck.entry)
    warps = math.prod(case.grid) * math.ceil(math.prod(case.block) / 32)
    return listing, warps


@functools.lru_cache(maxsize=None)
def measured(gpu: str, name: str) -> dict:
    data = json.loads((DATA / f"{gpu}.json").read_text())
    return next(k["metrics"] for k in data["kernels"] if k["name"] == f"{name}/default")


def predicted(name: str, pipe: str) -> int:
    listing, warps = straight(name)
    return warps * sum(pipe in classify(i, HOPPER).counters for i in listing)


@needs_tools
@pytest.mark.parametrize("name", STRAIGHT)
def test_straight_line_kernel_has_no_branch(name):
    assert [i.text for i in straight(name)[0] if classify(i, HOPPER).is_branch] == []


@needs_tools
@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("name", STRAIGHT)
def test_straight_line_kernel_total_is_static_count_times_warps(name, gpu):
    listing, warps = straight(name)
    assert len(listing) * warps == measured(gpu, name)["smsp__inst_executed.sum"]


@needs_tools
@pytest.mark.parametrize("pipe", ["adu", "alu", "cbu", "fma", "fp64", "lsu", "uniform", "xu"])
@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("name", STRAIGHT)
def test_pipe_count_equals_nsight(name, gpu, pipe):
    assert predicted(name, pipe) == measured(gpu, name)[f"sm__inst_executed_pipe_{pipe}.sum"]


@needs_tools
@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("name", STRAIGHT)
def test_fmaheavy_lies_between_the_imad_class_and_the_whole_fma_pipe(name, gpu):
    m = measured(gpu, name)
    assert predicted(name, "fmaheavy") <= m["sm__inst_executed_pipe_fmaheavy.sum"] <= predicted(name, "fma")
