"""The SASS opcode table for sm_70 (Volta), sm_80 (Ampere) and sm_90 (Hopper): which
pipe an instruction issues to, how its result becomes available, what memory it
touches, and its control-flow role.

`classify(instr, cc)` returns a frozen `SassOp`:
- `pipe`: the Nsight Compute pipe the instruction executes on (`PIPES`), the unit a
  timing model charges its issue slot to;
- `counters`: the `sm__inst_executed_pipe_<name>.sum` counters one warp-level execution
  increments on that architecture (empty for instructions no counter counts);
- `dependency`: how a consumer waits for the result: 'fixed' (the pipe's fixed
  latency, encoded by ptxas in the stall count), 'mio' (variable latency through the
  MIO, waited on with the *short scoreboard*) or 'l1tex' (through L1TEX, the *long
  scoreboard*). Nsight's stall reasons define the split: long_scoreboard is "a
  scoreboard dependency on a L1TEX (local, global, surface, texture) operation",
  short_scoreboard "a scoreboard dependency on a MIO operation (not to L1TEX)", whose
  usual causes are shared memory, special math (MUFU) and dynamic branches (BRX, JMX);
  special-register reads, shuffles, constant loads by index and the XU conversions
  are MIO operations too;
- `memory`: 'global', 'shared', 'local', 'const', 'generic' (LD/ST/ATOM/RED by a
  generic address) or None; flags `is_load`, `is_store` (LDGSTS is both), `is_atomic`
  (ATOM*, RED*, SUATOM, SURED), `is_barrier` (the CTA barrier BAR.*, not WARPSYNC),
  `is_exit`, `is_branch` (BRA, BRX, JMP, JMX), `is_call`, `is_return`; `known` is False
  for the fallback.

Pipes and sub-pipes (Nsight Compute, Kernel Profiling Guide, "Pipelines"): on Hopper
(and GA10x) `fma` is a logical pipe made of two physical ones, `fmaheavy` and
`fmalite`, 16 lanes per SM sub-partition each. IMAD (all forms) and, on sm_90, VIADD
run on fmaheavy only (0.5 warp instruction per cycle); FP32 FADD/FMUL/FFMA go to
either (1 per cycle together), so `pipe_fma = pipe_fmaheavy + pipe_fmalite`, and how
FP32 splits between the two is the scheduler's choice at run time: measured on H200,
0-5 % of FP32 instructions land on fmaheavy in ordinary kernels, 18 % in softmax_rows,
46 % when FP32 saturates (issue_throughput). `classify` gives FP32 `pipe='fma'`,
`counters=('fma',)`, and IMAD/VIADD `pipe='fmaheavy'` on sm_90 (`counters=('fma',
'fmaheavy')`). On sm_70/sm_80 (GV100/GA100) there is one fma pipe of 16 lanes for
FP32 and IMAD alike (`pipe='fma'`), and paired FP16 arithmetic has its own `fp16`
pipe; Hopper runs FP16x2 on the fma pipes. `uniform` is the scalar uniform datapath
(sm_75+): it counts UIADD3, UIMAD, ULOP3, ULEA, USHF, USEL, UISETP and the like, but
not UMOV or ULDC, which no pipe counter counts on H200 (their `pipe` is still
'uniform'). Constant loads by index (LDC), S2UR, S2R of CTA-uniform registers
(SR_CTAID.*, SR_CgaCtaId) and BAR run on the `adu`; EXIT is counted by both `cbu` and
`adu` (the counters say the adu counts an EXIT that retires threads: `classify` gives a
predicated EXIT `('cbu',)`, an unpredicated one `('cbu', 'adu')`); BRA is counted by no
pipe counter unless it diverges (then by cbu); the cbu counts EXIT, BSSY, BSYNC,
WARPSYNC, CALL, RET, YIELD. Other S2R, shuffles and every load, store and atomic to
global, local or shared memory count on `lsu`; MUFU, I2F/F2I/F2F/FRND, POPC, FLO and
BREV on `xu`; DADD/DFMA/DMUL/DSETP/DMNMX on `fp64`.

Validated against the H200 and H100 counters (benchmarks/sass_pipes.py: the programs at
default and medium size and the small microbenchmarks, 61 kernels): on the 35 kernels
whose simulated SASS instruction total equals smsp__inst_executed.sum, alu, cbu, fma,
fp64, lsu, uniform and xu are exact and fmaheavy lies in its [IMAD, IMAD + FP32] range;
adu is exact on 12 (vector_add, saxpy, matmul_naive, ...), otherwise 0.5-7 instructions
a warp under the measurement, and 0.4-0.9 over on the largest block_dispatch launches. Not measured, hence documented
choices rather than checks: the sm_70/sm_80 tables (taken to match Hopper's where
Nsight's description is the same), FP16, tensor-core, texture/surface, MATCH, REDUX,
R2UR, VOTEU, DEPBAR, fences and 64-bit-float conversions (put on the `xu`, Nsight's
conversion unit).

An opcode outside the table (`known` False) is timed as a generic ALU instruction only
when the user asks for it (`TimingOptions(unknown_sass='warn')`, `gpusim run --unknown-sass
warn`); by default the timing engine refuses the kernel naming the opcode and its line
(`gpusim.timing.static.unknown_sass`). A compute capability above `NEWEST_TABLE_CC` has no
table: `GPUSpec` refuses it. ENDCOLLECTIVE (the end of a WARPSYNC.COLLECTIVE fallback, a
control instruction in the sm_90 instruction list) is on the cbu, counted by none; LEPC
(load effective PC) and QSPC (query the state space of a generic address) on the alu:
documented choices, no counter measured.

What it does not model: the adu's data-dependent part (indexed constant loads with
divergent addresses replay once per distinct address; the counter also shows
fractional per-warp counts that no static table predicts), divergent branches on the
cbu, and the dynamic fmaheavy/fmalite split.

Sources: NVIDIA Nsight Compute, Kernel Profiling Guide: "Pipelines" (adu, alu, cbu,
fma, fmaheavy, fmalite, fp16, fp64, lsu, tex, tensor, uniform, xu) and "Warp Stall
Reasons" (long_scoreboard, short_scoreboard, mio_throttle, wait); NVIDIA developer
forum, "Separate CUDA core pipeline for FP16 and FP32" (NVIDIA's answer: GA100 FMA pipe
handles IMAD, IDP and FP32, a shared pipe FP16/FP64/tensor; GA10x and GH100 FMAheavy
IMAD/IDP/FP32, FMAlite FP32, FP16x2 dual-issued); CUDA C++ Programming Guide,
"Arithmetic Instructions" throughput table (CC 7.0/8.0/9.0: population count, leading
zeros, bit reverse and type conversions at 16 results per clock per SM, the special
function units' rate, which places them on the XU); CUDA Binary Utilities, "Instruction
Set Reference" (the opcode lists per architecture); Jia et al., "Dissecting the NVIDIA
Volta GPU Architecture via Microbenchmarking" (2018); Abdelkhalik et al., "Demystifying
the Nvidia Ampere Architecture through Microbenchmarking and Instruction-level Analysis"
(2022); Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture"
(2024); this project's H100/H200 Nsight measurements (data/measurements/h200.json,
h100.json).
"""
from __future__ import annotations

from dataclasses import dataclass

from gpusim.frontend.sass.listing import SassInstr

PIPES = ("alu", "fma", "fmaheavy", "fmalite", "fp16", "fp64", "xu", "lsu", "tex", "adu", "cbu", "uniform", "tensor")
COUNTED_PIPES = ("adu", "alu", "cbu", "fma", "fmaheavy", "fp64", "lsu", "uniform", "xu")  # in data/measurements
DEPENDENCIES = ("fixed", "mio", "l1tex")

UNKNOWN_OPCODES: set[str] = set()   # base opcodes classified by the fallback (pipe 'alu', dependency 'fixed')


@dataclass(frozen=True)
class SassOp:
    """What one SASS instruction is to the timing model (see the module docstring)."""
    opcode: str                      # as printed, modifiers included
    pipe: str                        # one of PIPES
    counters: tuple[str, ...]        # sm__inst_executed_pipe_<name> counters it increments
    dependency: str                  # 'fixed', 'mio' or 'l1tex'
    memory: str | None = None        # 'global', 'shared', 'local', 'const', 'generic'
    is_load: bool = False
    is_store: bool = False
    is_atomic: bool = False
    is_barrier: bool = False
    is_exit: bool = False
    is_branch: bool = False
    is_call: bool = False
    is_return: bool = False
    known: bool = True

    @property
    def base(self) -> str:
        return self.opcode.split(".", 1)[0]


def _ops(text: str) -> frozenset[str]:
    return frozenset(text.split())


# ----------------------------------------------------------------------------- the table
FP32 = _ops("FADD FADD32I FFMA FFMA32I FMUL FMUL32I FSWZADD")
IMAD = _ops("IMAD IMAD32I IMUL IMUL32I IDP IDP4A VIADD")          # VIADD exists from sm_90
FP16 = _ops("HADD2 HFMA2 HMUL2 HADD2_32I HFMA2_32I HMUL2_32I")
FP16_CMP = _ops("HSET2 HSETP2 HMNMX2")
FP64 = _ops("DADD DFMA DMUL DSETP DMNMX DSET")
XU = _ops("MUFU F2F F2I I2F FRND POPC FLO BREV")
ALU = _ops(
    "IADD3 IADD IADD32I LOP3 LOP LOP32I SHF SHL SHR LEA SEL FSEL PRMT IABS IMNMX VIMNMX VIMNMX3 VIADDMNMX "
    "ISETP ISET ISCADD PLOP3 PSETP P2R R2P MOV MOV32I CS2R SGXT BMSK VOTE VABSDIFF VABSDIFF4 FMNMX FSETP FSET "
    "FCHK I2FP F2FP I2I I2IP IDE LEPC QSPC")
UNIFORM = _ops(
    "UIADD3 UIMAD ULOP3 ULOP ULOP32I ULEA USHF USEL UISETP UPLOP3 UPSETP UFLO UPOPC UBREV UPRMT USGXT UBMSK "
    "UP2UR UR2UP VOTEU R2UR ULEPC UCLEA USETMAXREG UVIADD UIMNMX UFMUL UFADD UFFMA UF2FP UI2FP")
UNIFORM_UNCOUNTED = _ops("UMOV UMOV32I ULDC")                        # uniform datapath, no pipe counter
TENSOR = _ops("HMMA IMMA DMMA BMMA HGMMA IGMMA QGMMA BGMMA")
TEX = _ops("TEX TLD TLD4 TXD TXQ TMML SULD SUST SUATOM SURED")
LSU_MEM = {  # base -> (memory, is_load, is_store, is_atomic, dependency)
    "LD": ("generic", True, False, False, "l1tex"),
    "LDG": ("global", True, False, False, "l1tex"),
    "LDL": ("local", True, False, False, "l1tex"),
    "LDS": ("shared", True, False, False, "mio"),
    "LDSM": ("shared", True, False, False, "mio"),
    "ST": ("generic", False, True, False, "l1tex"),
    "STG": ("global", False, True, False, "l1tex"),
    "STL": ("local", False, True, False, "l1tex"),
    "STS": ("shared", False, True, False, "mio"),
    "STSM": ("shared", False, True, False, "mio"),
    "STAS": ("shared", False, True, False, "mio"),
    "ATOM": ("generic", False, False, True, "l1tex"),
    "ATOMG": ("global", False, False, True, "l1tex"),
    "ATOMS": ("shared", False, False, True, "mio"),
    "RED": ("global", False, False, True, "l1tex"),        # generic from sm_90, where REDG is the global one
    "REDG": ("global", False, False, True, "l1tex"),
    "REDAS": ("shared", False, False, True, "mio"),
    "LDGSTS": ("global", True, True, False, "l1tex"),      # global -> shared copy
    "UTMALDG": ("global", True, True, False, "l1tex"),
    "UTMASTG": ("global", True, True, False, "l1tex"),
    "UTMAPF": ("global", False, False, False, "l1tex"),
    "UBLKCP": ("global", True, True, False, "l1tex"),
}
LSU_OTHER = _ops("SHFL MEMBAR FENCE CCTL CCTLL CCTLT ERRBAR CGAERRBAR LDGDEPBAR ARRIVES SYNCS "
                 "UTMACMDFLUSH")      # UTMACMDFLUSH: closes a bulk group (cp.async.bulk.commit_group)
ADU = _ops("LDC BAR S2UR BRX BRXU JMX JMXU B2R R2B MATCH REDUX DEPBAR")
CBU = _ops("BRA JMP EXIT BSSY BSYNC BREAK BMOV WARPSYNC CALL RET YIELD KILL NANOSLEEP BPT PREEXIT WARPGROUP "
           "ELECT ENDCOLLECTIVE")
CBU_COUNTED = _ops("EXIT BSSY BSYNC BREAK BMOV WARPSYNC CALL RET YIELD KILL NANOSLEEP BPT")
MIO_DEPENDENT = _ops("MUFU F2F F2I I2F FRND POPC FLO BREV S2R S2UR LDC ULDC SHFL BRX BRXU JMX JMXU MATCH REDUX "
                     "B2R R2UR")
# S2R of registers that are the same for the whole CTA (or cluster) goes to the ADU
_CTA_UNIFORM_SR = ("SR_CTAID", "SR_NCTAID", "SR_CgaCtaId", "SR_CLUSTER", "SR_SMID", "SR_NSMID", "SR_GRIDID",
                   "SR_VIRTCFG", "SR_VIRTID")
KNOWN = (FP32 | IMAD | FP16 | FP16_CMP | FP64 | XU | ALU | UNIFORM | UNIFORM_UNCOUNTED | TENSOR | TEX
         | frozenset(LSU_MEM) | LSU_OTHER | ADU | CBU | {"S2R", "NOP"})


TABLE_ARCHS = (70, 80, 90)          # the architectures this table describes
NEWEST_TABLE_CC = (9, 0)            # compute capabilities above it have no table (sm_100 has new opcodes, LDCU)


def table_arch(cc: tuple[int, int]) -> int | None:
    """70, 80 or 90: the table an architecture uses (Turing reads as Volta, every 8.x as
    Ampere); None for a compute capability newer than the tables (`NEWEST_TABLE_CC`), whose
    opcodes, pipes and latencies are not described here."""
    if tuple(cc) > NEWEST_TABLE_CC:
        return None
    major = cc[0]
    return 70 if major <= 7 else 80 if major == 8 else 90


def _arch(cc: tuple[int, int]) -> int:
    arch = table_arch(cc)
    return 90 if arch is None else arch           # classify never raises; GPUSpec refuses such a cc


def classify(instr: SassInstr, cc: tuple[int, int]) -> SassOp:
    """The SassOp of `instr` on compute capability `cc`; never raises (unknown opcodes
    fall back to pipe 'alu', dependency 'fixed', known=False, and are recorded in
    UNKNOWN_OPCODES)."""
    opcode = instr.opcode
    parts = opcode.split(".")
    base = parts[0]
    arch = _arch(cc)
    op = lambda pipe, counters=None, dep="fixed", **kw: SassOp(  # noqa: E731
        opcode, pipe, (pipe,) if counters is None else counters, dep, **kw)

    if base in FP32:
        return op("fma")
    if base in IMAD:
        return op("fmaheavy", ("fma", "fmaheavy")) if arch == 90 else op("fma")
    if base in FP16:
        if arch == 90:
            return op("fma")
        return op("fp16")
    if base in FP16_CMP:
        return op("alu") if arch == 90 else op("fp16")
    if base in FP64:
        return op("fp64")
    if base in XU:
        return op("xu", dep="mio")
    if base in ALU:
        return op("alu")
    if base in UNIFORM:
        return op("uniform", dep="mio" if base in MIO_DEPENDENT else "fixed")
    if base in UNIFORM_UNCOUNTED:
        if base == "ULDC":
            return op("uniform", (), "mio", memory="const", is_load=True)
        return op("uniform", ())
    if base in TENSOR:
        return op("tensor")
    if base in TEX:
        atomic = base in ("SUATOM", "SURED")
        return op("tex", dep="l1tex", memory="global", is_load=base in ("TEX", "TLD", "TLD4", "TXD", "SULD"),
                  is_store=base == "SUST", is_atomic=atomic)
    if base in LSU_MEM:
        memory, load, store, atomic, dep = LSU_MEM[base]
        if base == "RED" and arch == 90:
            memory = "generic"
        return op("lsu", dep=dep, memory=memory, is_load=load, is_store=store, is_atomic=atomic)
    if base == "S2R":
        sr = instr.operands.split(",")[-1].strip()
        if sr.startswith(_CTA_UNIFORM_SR):
            return op("adu", dep="mio")
        return op("lsu", dep="mio")
    if base in LSU_OTHER:
        return op("lsu", dep="mio" if base in MIO_DEPENDENT else "fixed")
    if base in ADU:
        if base == "LDC":
            return op("adu", dep="mio", memory="const", is_load=True)
        if base == "BAR":
            return op("adu", is_barrier=True)
        return op("adu", dep="mio" if base in MIO_DEPENDENT else "fixed",
                  is_branch=base in ("BRX", "BRXU", "JMX", "JMXU"))
    if base in CBU:
        counters = ("cbu",) if base in CBU_COUNTED else ()
        if base == "EXIT":
            counters = ("cbu",) if instr.predicate else ("cbu", "adu")
            return op("cbu", counters, is_exit=True)
        return op("cbu", counters, is_branch=base in ("BRA", "JMP"), is_call=base == "CALL",
                  is_return=base == "RET")
    if base == "NOP":
        return op("cbu", ())
    UNKNOWN_OPCODES.add(base)
    return op("alu", known=False)
