"""The SASS listing of a kernel: every instruction with its Python source line and the
PTX line it was compiled from.

`sass_listing(cubin, entry)` disassembles the entry's code section with
`nvdisasm -c -gi -gp` and reads two annotations per instruction:
- `-gi`: the Python source line from the cubin's line table (from the PTX `.loc`s
  Numba emits with `lineinfo=True`). Code inlined from a device function is
  attributed to the kernel line that calls it (`source_line`), the callee's own line
  kept in `inlined_line`;
- `-gp`: the line of the PTX text that ptxas compiled the instruction from
  (`.nv_debug_ptx_txt`, written by `ptxas -lineinfo`), the key that ties the SASS
  to the PTX the functional core executes (`mapping.py`).
Internal subroutines ptxas appends (64-bit division, the slow path of a float
division, ...) carry `function` and neither line. The padding after the last
instruction (a branch to itself and NOPs, never executed) is dropped.

Each instruction also carries ptxas' control bits (`control.py`: stall count, dependency
barriers, wait mask, yield, reuse), read from the cubin's code section.

`sass_profile(listing)` counts instructions per source line and per op class.
Counts are static (instructions in the binary), not executed instructions.

Sources: CUDA Binary Utilities, "nvdisasm" (options -c, -gi, -gp) and "Instruction
Set Reference" (Hopper); Nsight Compute Kernel Profiling Guide, "Pipelines".
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from gpusim.frontend.sass.control import INSTR_BYTES, Control, control_bits
from gpusim.frontend.sass.tools import SassToolError, disassemble

# ----------------------------------------------------------------------------- op classes
_CLASSES = {
    "fp32": "FADD FFMA FMUL FMNMX FSET FSETP FSEL FCHK FSWZADD FADD32I FFMA32I FMUL32I I2FP F2FP",
    "fp64": "DADD DFMA DMUL DSETP DMNMX",
    "fp16": "HADD2 HFMA2 HMUL2 HSET2 HSETP2 HMNMX2 HADD2_32I HFMA2_32I HMUL2_32I HMMA IMMA DMMA BMMA HGMMA IGMMA",
    "int": "IMAD IMAD32I IADD3 IADD IADD32I IMUL IMUL32I IABS IMNMX VIMNMX VIADD VIADD32I LOP3 LOP LOP32I ISETP ICMP "
           "SHF SHL SHR LEA SEL PRMT POPC FLO BREV BMSK SGXT IDP IDE PLOP3 PSETP P2R R2P VABSDIFF VABSDIFF4 I2I I2IP",
    "sfu": "MUFU F2I I2F F2F FRND",
    "ldst": "LDG STG LDS STS LDL STL LD ST LDC LDSM STSM LDGSTS LDGDEPBAR ATOM ATOMG ATOMS RED REDG REDAS CCTL "
            "TLD TEX TLD4 TXQ SULD SUST SUATOM SURED UBLKCP UTMALDG UTMASTG UTMAPF LDTRAM",
    "branch": "BRA BRX JMP JMX CALL RET EXIT BSSY BSYNC BREAK BMOV KILL BPT WARPSYNC YIELD",
    "sync": "BAR MEMBAR FENCE DEPBAR ERRBAR SYNCS ARRIVES",
    "shuffle": "SHFL VOTE MATCH REDUX",
    "misc": "MOV MOV32I S2R CS2R NOP PMTRIG B2R R2B GETLMEMBASE SETLMEMBASE LEPC NANOSLEEP S2UR R2UR",
}
OP_CLASS: dict[str, str] = {op: cls for cls, ops in _CLASSES.items() for op in ops.split()}


def op_class(opcode: str) -> str:
    """The pipeline class of a SASS opcode ('FFMA.FTZ' -> 'fp32'). Conversions to or from
    FP64 run on the fp64 unit, other conversions on the XU ('sfu'); uniform-datapath ops
    (ULDC, UIADD3, UMOV, ...) and unknown opcodes are 'misc'."""
    parts = opcode.split(".")
    base = parts[0]
    if base in ("F2F", "F2I", "I2F", "FRND") and "F64" in parts[1:]:
        return "fp64"
    cls = OP_CLASS.get(base)
    if cls is not None:
        return cls
    return "misc"


# ----------------------------------------------------------------------------- nvdisasm
@dataclass(frozen=True)
class SassInstr:
    """One SASS instruction of the entry's code section."""
    offset: int                      # byte offset in the section
    opcode: str                      # with modifiers, e.g. 'LDG.E', 'ISETP.GE.U32.AND'
    text: str                        # as nvdisasm prints it, predicate included, e.g. '@P0 EXIT'
    source_line: int | None          # kernel source line (call site for inlined code)
    source_file: str | None = None
    inlined_line: int | None = None  # the device function's own line when inlined, else None
    inlined_file: str | None = None
    predicate: str | None = None     # '@P0', '@!P1' or None
    function: str | None = None      # internal subroutine name; None in the entry itself
    ptx_line: int | None = None      # line of the PTX text it was compiled from (None in subroutines)
    operands: str = ""               # the text after the opcode, e.g. 'R2, R7, UR4, R2'
    target: str | None = None        # label a branch, call or BSSY names, e.g. '.L_x_3'
    control: Control | None = None   # ptxas' scheduling bits (stall count, barriers; control.py), None: not read

    @property
    def op_class(self) -> str:
        return op_class(self.opcode)

    @property
    def base(self) -> str:
        """The opcode without modifiers: 'ISETP.GE.AND' -> 'ISETP'."""
        return self.opcode.split(".", 1)[0]


@dataclass(frozen=True)
class Listing:
    """The SASS of one entry: its instructions and where each label points."""
    instructions: tuple[SassInstr, ...]
    labels: dict[str, int]           # label -> index into `instructions`


_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(.*?)\s*;?\s*$")
_LOC = re.compile(r'"([^"]*)", line (\d+)')
_PTX_FILE = ".nv_debug_ptx_txt"
_LABEL = re.compile(r"^([\w$.]+):\s*$")
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([\w$.]+)")
_TYPE_FUNC = re.compile(r"^\s*\.type\s+([\w$.]+),\s*@function")
_PRED = re.compile(r"^(@!?U?P[T\d]+)\s+(.*)$")
_TARGET = re.compile(r"`\(([\w$.]+)\)")


def sass_listing(cubin: bytes, entry: str | None = None) -> list[SassInstr]:
    """The SASS of `entry` (the only entry when None), with source and PTX lines."""
    return list(sass_entry(cubin, entry).instructions)


def sass_entry(cubin: bytes, entry: str | None = None) -> Listing:
    """`sass_listing` with the labels (branch targets) kept."""
    sections = _parse_disasm(disassemble(cubin))
    if entry is None:
        if len(sections) != 1:
            raise SassToolError(f"cubin has {len(sections)} code sections; name the entry: {sorted(sections)}")
        entry = next(iter(sections))
    if entry not in sections:
        raise SassToolError(f"cubin has no code for entry {entry!r}; sections: {sorted(sections)}")
    instrs, labels = sections[entry]
    instrs = _with_control(_strip_padding(instrs, labels), cubin, entry)
    by_offset = {ins.offset: k for k, ins in enumerate(instrs)}
    return Listing(tuple(instrs), {lab: by_offset[off] for lab, off in labels.items() if off in by_offset})


def _with_control(instrs: list[SassInstr], cubin: bytes, entry: str) -> list[SassInstr]:
    """Each instruction with its control bits (`control.py`), read from the entry's code section."""
    ctrl = control_bits(cubin, entry)
    if any(x.offset % INSTR_BYTES or x.offset // INSTR_BYTES >= len(ctrl) for x in instrs):
        raise SassToolError(f"{entry}: SASS offsets do not match 16-byte instructions of its code section")
    return [replace(x, control=ctrl[x.offset // INSTR_BYTES]) for x in instrs]


def _parse_disasm(text: str) -> dict[str, tuple[list[SassInstr], dict[str, int]]]:
    """Section (entry) name -> (instructions, label -> offset of the next instruction)."""
    sections: dict[str, tuple[list[SassInstr], dict[str, int]]] = {}
    cur: tuple[list[SassInstr], dict[str, int]] | None = None
    entry = function = None
    src: tuple = (None, None, None, None)          # (file, line, inlined file, inlined line)
    ptx_line = None
    group: list[str] = []                           # source annotations since the last instruction
    pending: list[str] = []                         # labels waiting for their instruction
    for line in text.splitlines():
        if m := _SECTION.match(line):
            entry, function, src, ptx_line = m.group(1), None, (None, None, None, None), None
            cur = sections.setdefault(entry, ([], {}))
            continue
        if cur is None:
            continue
        if m := _TYPE_FUNC.match(line):
            function = None if m.group(1) == entry else m.group(1)
            src, ptx_line = (None, None, None, None), None
            continue
        if "//##" in line:
            if _PTX_FILE in line:
                m = _LOC.search(line)
                ptx_line = int(m.group(2)) if m else None
            else:
                group.append(line)
            continue
        if m := _LABEL.match(line):
            pending.append(m.group(1))
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        if group:
            src = _location(group)
            group = []
        offset, body = int(m.group(1), 16), m.group(2).strip()
        pred = None
        if p := _PRED.match(body):
            pred, body = p.group(1), p.group(2)
        parts = body.split(None, 1)
        opcode = parts[0] if parts else ""
        operands = parts[1].strip() if len(parts) > 1 else ""
        t = _TARGET.search(operands)
        for lab in pending:
            cur[1][lab] = offset
        pending = []
        cur[0].append(SassInstr(offset=offset, opcode=opcode, text=m.group(2).strip(), source_line=src[1],
                                source_file=src[0], inlined_line=src[3], inlined_file=src[2],
                                predicate=pred, function=function,
                                ptx_line=ptx_line if function is None else None,
                                operands=operands, target=t.group(1) if t else None))
    return sections


def _location(group: list[str]) -> tuple:
    """(file, line, inlined file, inlined line) from one run of `//##` annotations: an
    'inlined at' chain names the callee first and the kernel's call site last."""
    for ann in group:
        if "inlined at" in ann:
            locs = _LOC.findall(ann)
            (ifile, iline), (ofile, oline) = locs[0], locs[-1]
            return ofile, int(oline), ifile, int(iline)
    locs = _LOC.findall(group[-1])
    if not locs:
        return None, None, None, None
    return locs[0][0], int(locs[0][1]), None, None


def _strip_padding(instrs: list[SassInstr], labels: dict[str, int]) -> list[SassInstr]:
    """Drop the trailing NOPs and the branch-to-self before them (never executed)."""
    out = list(instrs)
    while out and out[-1].opcode == "NOP":
        out.pop()
    if out and out[-1].opcode == "BRA" and out[-1].predicate is None:
        if out[-1].target is not None and labels.get(out[-1].target) == out[-1].offset:
            out.pop()
    return out


# ----------------------------------------------------------------------------- profile
@dataclass(frozen=True)
class LineProfile:
    """The SASS instructions of one source line."""
    count: int
    classes: dict[str, int]          # op class -> instructions


def sass_profile(listing: list[SassInstr]) -> dict[int | None, LineProfile]:
    """Source line (None: no line) -> its instruction count and op-class mix; the counts
    add up to len(listing). Lines in ascending order, None last."""
    acc: dict[int | None, dict[str, int]] = {}
    for ins in listing:
        mix = acc.setdefault(ins.source_line, {})
        mix[ins.op_class] = mix.get(ins.op_class, 0) + 1
    keys = sorted((k for k in acc if k is not None)) + ([None] if None in acc else [])
    return {k: LineProfile(count=sum(acc[k].values()), classes=dict(sorted(acc[k].items()))) for k in keys}
