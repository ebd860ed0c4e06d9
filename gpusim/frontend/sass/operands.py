"""Which registers a SASS instruction writes and reads: the input of a register
scoreboard.

`register_operands(instr)` returns `(writes, reads)`, two sorted tuples of register
*slots*, one integer namespace for every register file a warp owns:

| registers | slots | not registers (never in a set) |
| --- | --- | --- |
| R0..R254 (per thread) | 0..254 (`R_BASE`) | RZ |
| UR0..UR62 (uniform) | 256..318 (`UR_BASE`) | URZ |
| P0..P6 (predicates) | 320..326 (`P_BASE`) | PT |
| UP0..UP6 (uniform predicates) | 328..334 (`UP_BASE`) | UPT |
| B0..B15 (convergence barriers) | 336..351 (`B_BASE`) | |

What it models, from the operand text nvdisasm prints (`SassInstr.operands`):
- destinations by operand shape: the first operand for most instructions; the two
  predicate destinations of the compare family (ISETP, FSETP, DSETP, HSETP2, PLOP3,
  PSETP and their uniform forms); leading predicate destinations before the register
  destination (`SHFL.DOWN PT, R3, ...`, `LOP3.LUT P2, RZ, ...`, `ATOMG PT, R5, ...`,
  `MATCH.ALL P2, R13, ...`); carry-out predicates right after the destination of the
  add/multiply family (`IADD3 R17, P2, R4, R17, RZ` writes R17 and P2; carry-ins at the
  end are read); all-but-the-last operand of VOTE/VOTEU; every operand of B2R; none
  for stores, reductions, barriers, branches, fences (`NO_DEST`); BSSY writes its
  B register, BSYNC reads it, BREAK and BMOV.CLEAR do both; R2P/P2R write/read the
  predicates their mask names;
- widths: register pairs and quads from the syntax: `.64`/`.128` memory data (loads'
  destinations, stores' and atomics' data, F64/S64/U64 atomics), `Rn.64` and `desc[URn]`
  address operands, 64-bit addresses of `.E` global/generic accesses printed without a
  width (`LDG.E.SYS R6, [R6]` on Volta/Turing, `ATOMG.E.CAS ... [R16]`), IMAD.WIDE /
  UIMAD.WIDE (destination and addend), FP64 arithmetic (DADD, DFMA, DMUL, DMNMX, DSETP
  operands), conversions by their types (`F2F.F64.F32` writes a pair and reads one
  register, `I2F.S64` reads a pair, `F2I.U64` writes one), CS2R (64-bit unless `.32`),
  LDC.64/ULDC.64, and any other `.64` instruction (MOV.64, ...);
- modifiers on operands (`-R3`, `|R4|`, `~R5`, `!P0`, `R8.reuse`, `R11.H1`, `R12.B2`,
  `R2.X4`), memory operands (`[R11+0x80]`, `desc[UR6][R2.64+0x4]`, `c[0x0][0x28]`,
  `c[0x3][R2]`), special registers (`SR_TID.X`, `SRZ`, `PR`: not slots), immediates;
- the guard predicate (`instr.predicate`) is read.

Conservative where the syntax does not say: an opcode this module does not know
writes its first register operand and reads every register it names, the first one
included (recorded in `UNKNOWN_OPCODES`); tensor-core operand widths (HMMA, IMMA,
DMMA, *GMMA) follow the shape in the opcode and fall back to 4 registers each; texture
and surface instructions are read as printed (one register per token).

What it does not model: registers an instruction touches without naming them
(CALL/RET linkage, the ABI registers of the internal division subroutines: their
instructions are traced on their own), the partial writes of predicated
instructions (a guarded write is a write), register banks and the reuse cache.

Sources: CUDA Binary Utilities, "Instruction Set Reference" (the SASS opcode lists
for Volta, Turing, Ampere, Hopper); the operand syntax itself, read off nvdisasm 13
listings of this project's programs and microbenchmarks for sm_75, sm_80 and sm_90
(tests/frontend/test_sass_operands.py checks every instruction of them).
"""
from __future__ import annotations

import re

from gpusim.frontend.sass.listing import SassInstr

# ----------------------------------------------------------------------------- slots
R_BASE = 0            # R0..R254
UR_BASE = 256         # UR0..UR62
P_BASE = 320          # P0..P6
UP_BASE = 328         # UP0..UP6
B_BASE = 336          # B0..B15
NUM_SLOTS = 352       # one past the last slot

N_R, N_UR, N_P, N_UP, N_B = 255, 63, 7, 7, 16

UNKNOWN_OPCODES: set[str] = set()   # base opcodes read with the conservative fallback


def slot_name(slot: int) -> str:
    """'R5', 'UR4', 'P0', 'UP1', 'B2' for a slot number (the inverse of the numbering)."""
    for base, n, name in ((B_BASE, N_B, "B"), (UP_BASE, N_UP, "UP"), (P_BASE, N_P, "P"),
                          (UR_BASE, N_UR, "UR"), (R_BASE, N_R, "R")):
        if base <= slot < base + n:
            return f"{name}{slot - base}"
    raise ValueError(f"{slot} is not a register slot (0..{NUM_SLOTS - 1})")


def _slots(kind: str, index: int, width: int) -> list[int]:
    """The slots of register `kind``index` and the `width - 1` that follow it."""
    base, n = {"R": (R_BASE, N_R), "UR": (UR_BASE, N_UR), "P": (P_BASE, N_P),
               "UP": (UP_BASE, N_UP), "B": (B_BASE, N_B)}[kind]
    return [base + i for i in range(index, min(index + width, n))]


# ----------------------------------------------------------------------------- tokens
# A register token: not preceded by a word character, '$' or '.' (so 'R12.B2' is R12,
# not a B register, and 'UPT' is not 'PT'), with its dot suffixes ('.64', '.reuse', ...).
_TOKEN = re.compile(r"(?<![\w$.])(URZ|UR\d+|RZ|R\d+|UPT|UP\d+|PT|P\d+|B\d+)((?:\.\w+)*)")
_TARGET = re.compile(r"`\([^)]*\)")
_PLAIN_PRED = re.compile(r"^(UP\d+|UPT|P\d+|PT)$")
_ZERO = {"RZ", "URZ", "PT", "UPT"}


def _kind(name: str) -> tuple[str, int] | None:
    """('R', 5) for 'R5'; None for RZ, URZ, PT, UPT."""
    if name in _ZERO:
        return None
    m = re.match(r"(UR|UP|R|P|B)(\d+)$", name)
    return (m.group(1), int(m.group(2))) if m else None


def _split(operands: str) -> list[str]:
    text = _TARGET.sub("", operands)
    return [op.strip() for op in text.split(",") if op.strip()]


def _is_plain_pred(op: str) -> bool:
    return bool(_PLAIN_PRED.match(op))


def _is_pred(op: str) -> bool:
    return bool(_PLAIN_PRED.match(op.lstrip("!")))


def _is_mem(op: str) -> bool:
    return "[" in op


# ----------------------------------------------------------------------------- families
NO_DEST = frozenset(
    "ST STG STS STL STAS STSM RED REDG REDAS BAR BRA BRX BRXU JMP JMX JMXU EXIT RET CALL BSYNC WARPSYNC "
    "YIELD NOP MEMBAR FENCE CCTL CCTLL CCTLT DEPBAR ERRBAR CGAERRBAR KILL BPT NANOSLEEP ARRIVES LDGSTS "
    "LDGDEPBAR SUST SURED UTMALDG UTMASTG UTMAPF UTMACCTL UTMACMDFLUSH UTMAREDG UBLKCP UBLKRED UBLKPF "
    "PMTRIG WARPGROUP WARPGROUPSET ACQBULK CGABAR UCGABAR_ARV UCGABAR_WAIT PREEXIT".split())
SETP2 = frozenset("ISETP FSETP DSETP HSETP2 PSETP PLOP3 UISETP UPLOP3 UPSETP VSETP UFSETP".split())
PDEST1 = frozenset("FCHK".split())
VOTE_LIKE = frozenset("VOTE VOTEU".split())
ALL_DEST = frozenset("B2R".split())
CARRY = frozenset("IADD3 UIADD3 IADD UIADD IADD32I LEA ULEA IMAD UIMAD IMAD32I ISCADD".split())
LOADS = frozenset("LD LDG LDS LDL LDC ULDC LDSM LDTRAM SULD TLD TLD4 TEX TXD TXQ TMML".split())
STORES = frozenset("ST STG STS STL STAS STSM SUST".split())
ATOMICS = frozenset("ATOM ATOMG ATOMS RED REDG REDAS SUATOM SURED".split())
FP64 = frozenset("DADD DFMA DMUL DMNMX DSETP DSET".split())
CONVERT = frozenset("F2F I2F F2I FRND".split())
MMA = frozenset("HMMA IMMA DMMA BMMA HGMMA IGMMA QGMMA BGMMA".split())
DEFAULT = frozenset(
    "MOV MOV32I UMOV IMAD IADD3 IADD IADD32I UIADD3 UIMAD LOP3 LOP LOP32I ULOP3 ULOP SHF USHF SHL SHR LEA ULEA "
    "SEL USEL FSEL PRMT UPRMT POPC UPOPC FLO UFLO BREV UBREV BMSK UBMSK SGXT USGXT IABS IMNMX VIMNMX VIMNMX3 "
    "VIADD VIADDMNMX IDP IDE ISCADD FADD FADD32I FFMA FFMA32I FMUL FMUL32I FMNMX FSET ISET FSWZADD MUFU HADD2 "
    "HFMA2 HMUL2 HMNMX2 HSET2 HADD2_32I HFMA2_32I HMUL2_32I I2I I2FP F2FP I2IP S2R CS2R S2UR R2UR SHFL MATCH "
    "REDUX LEPC GETLMEMBASE SETLMEMBASE ATOM ATOMG ATOMS SUATOM BMOV VABSDIFF VABSDIFF4 IMUL UMOV32I "
    "ULEPC UCLEA ELECT UVIADD UIMNMX UFMUL UFADD UFFMA".split())
KNOWN = (NO_DEST | SETP2 | PDEST1 | VOTE_LIKE | ALL_DEST | LOADS | FP64 | CONVERT | MMA | DEFAULT
         | {"BSSY", "BREAK", "R2P", "P2R", "UR2UP", "UP2UR", "BMOV"})

_TYPES = ("F16", "BF16", "F32", "F64", "S8", "U8", "S16", "U16", "S32", "U32", "S64", "U64", "E4M3", "E5M2",
          "TF32")


def _data_width(mods: list[str]) -> int:
    """Registers per datum of a memory instruction: .128 -> 4, .64/F64/S64/U64 -> 2, else 1."""
    if "128" in mods:
        return 4
    if "64" in mods or any(t in mods for t in ("F64", "S64", "U64")):
        return 2
    return 1


def _conversion_widths(base: str, mods: list[str]) -> tuple[int, int]:
    """(destination width, source width) of F2F/I2F/F2I/FRND from the types the opcode names."""
    types = [m for m in mods if m in _TYPES]
    wide = lambda t: 2 if t in ("F64", "S64", "U64") else 1  # noqa: E731
    if base == "I2F":           # I2F[.dst float][.src int]: the float type is the result
        dst = next((t for t in types if t[0] in "FBT"), "F32")
        src = next((t for t in types if t[0] in "SU"), "S32")
    elif base == "F2I":         # F2I[.dst int][.src float]
        dst = next((t for t in types if t[0] in "SU"), "S32")
        src = next((t for t in types if t[0] in "FBT"), "F32")
    elif len(types) >= 2:       # F2F.dst.src
        dst, src = types[0], types[1]
    elif types:                 # FRND.F64, or one type named: both sides
        dst = src = types[0]
    else:
        dst = src = "F32"
    return wide(dst), wide(src)


def _mma_widths(base: str, mods: list[str]) -> tuple[int, int, int, int]:
    """(D, A, B, C) register counts per thread of a tensor-core instruction; 4 each when
    the shape is not one of those listed."""
    accum16 = "F16" in mods and "F32" not in mods
    if base == "HMMA" and "16816" in mods:
        return (2, 4, 2, 2) if accum16 else (4, 4, 2, 4)
    if base == "HMMA" and "1688" in mods:
        if "TF32" in mods:
            return 4, 4, 2, 4
        return (2, 2, 1, 2) if accum16 else (4, 2, 1, 4)
    if base == "HMMA" and "1684" in mods:
        return 4, 2, 1, 4
    if base == "IMMA" and "16832" in mods:
        return 4, 4, 2, 4
    if base == "IMMA" and "16816" in mods:
        return 4, 2, 1, 4
    if base == "IMMA" and "8816" in mods:
        return 2, 1, 1, 2
    if base == "DMMA":
        return 4, 2, 2, 4
    if base.endswith("GMMA"):
        shape = next((m for m in mods if m.count("x") == 2), None)
        if shape:
            n = int(shape.split("x")[1])
            acc = n // 4 if accum16 else n // 2
            return acc, 4, 4, acc
    return 4, 4, 4, 4


# ----------------------------------------------------------------------------- roles
def _roles(base: str, mods: list[str], ops: list[str]) -> list[str]:
    """'w', 'r' or 'rw' for every operand."""
    n = len(ops)
    if base in NO_DEST:
        return ["r"] * n
    if base == "BSSY":
        return ["w"] + ["r"] * (n - 1)
    if base == "BREAK":
        return ["rw" if re.match(r"B\d+$", op) else "r" for op in ops]
    if base in SETP2:
        return ["w"] * min(2, n) + ["r"] * (n - 2)
    if base in PDEST1:
        return ["w"] + ["r"] * (n - 1)
    if base in VOTE_LIKE:
        return ["w"] * (n - 1) + ["r"] if n else []
    if base in ALL_DEST:
        return ["w"] * n
    if base == "BMOV":
        roles = ["w"] + ["r"] * (n - 1)
        if "CLEAR" in mods:
            roles = [("rw" if (k and re.match(r"B\d+$", op)) else ro) for k, (op, ro) in enumerate(zip(ops, roles))]
        return roles
    roles = ["r"] * n
    k = 0
    while k < n and _is_plain_pred(ops[k]):          # SHFL PT, ...; LOP3 P2, RZ, ...; ATOMG PT, ...
        roles[k] = "w"
        k += 1
    if k < n:
        roles[k] = "w"                                # the destination
        k += 1
        if base in CARRY:
            while k < n and _is_plain_pred(ops[k]):   # carry-outs follow the destination
                roles[k] = "w"
                k += 1
    if base not in KNOWN:
        first = next((i for i, ro in enumerate(roles) if ro == "w" and not _is_pred(ops[i])), None)
        if first is not None:
            roles[first] = "rw"
    return roles


def _widths(base: str, mods: list[str], ops: list[str], roles: list[str]) -> list[int]:
    """Registers per operand for the non-memory operands (memory operands: per token)."""
    n = len(ops)
    widths = [1] * n
    regs = [i for i in range(n) if not _is_mem(ops[i]) and not _is_pred(ops[i])]
    dests = [i for i in regs if "w" in roles[i]]
    srcs = [i for i in regs if roles[i] == "r"]
    if base in FP64:
        for i in regs:
            widths[i] = 2
    elif base in CONVERT:
        dw, sw = _conversion_widths(base, mods)
        for i in dests:
            widths[i] = dw
        for i in srcs:
            widths[i] = sw
    elif base in ("IMAD", "UIMAD") and "WIDE" in mods:
        for i in dests:
            widths[i] = 2
        if len(srcs) >= 3:
            widths[srcs[2]] = 2                       # the 64-bit addend
    elif base in LOADS or base in STORES or base in ATOMICS:
        dw = _data_width(mods)
        if base == "LDSM" or base == "STSM":
            dw = next((int(m) for m in mods if m in ("1", "2", "4")), 1)
        for i in regs:
            widths[i] = dw
        if base == "ATOMS" and "CAST" in mods:
            for i in dests:
                widths[i] = 1
    elif base == "CS2R":
        for i in dests:
            widths[i] = 1 if "32" in mods else 2
    elif base in ("LEPC", "GETLMEMBASE", "SETLMEMBASE"):
        for i in regs:
            widths[i] = 2
    elif base in ("JMX", "BRX", "JMXU", "BRXU") or (base in ("CALL", "RET") and "ABS" in mods):
        for i in regs:
            widths[i] = 2
    elif base in MMA:
        d, a, b, c = _mma_widths(base, mods)
        for i, w in zip(dests, (d,)):
            widths[i] = w
        for i, w in zip(srcs, (a, b, c)):
            widths[i] = w
    elif "64" in mods:                                # MOV.64, SEL.64, UMOV.64, ...
        for i in regs:
            widths[i] = 2
    return widths


def _memory_tokens(base: str, mods: list[str], op: str, k: int) -> list[tuple[str, int, int]]:
    """(kind, index, width) of every register of one memory operand."""
    out = []
    extended = "E" in mods and base in ("LD", "ST", "LDG", "STG", "ATOM", "ATOMG", "RED", "REDG", "CCTL", "LDGSTS")
    if base == "LDGSTS" and k == 0:
        extended = False                              # its first address is the shared destination
    if op.startswith("c[") or op.startswith("cx["):
        extended = False
    # the address proper is the last [...] group; desc[...] holds a 64-bit descriptor
    groups = list(re.finditer(r"(\w*)\[([^\]]*)\]", op))
    for g in groups:
        prefix, body = g.group(1), g.group(2)
        toks = list(_TOKEN.finditer(body))
        explicit = any(t.group(2) for t in toks)
        for j, t in enumerate(toks):
            kind = _kind(t.group(1))
            if kind is None:
                continue
            suffix = t.group(2).split(".")[1:]
            width = 1
            if prefix == "desc" or "64" in suffix:
                width = 2
            elif extended and prefix == "" and g is groups[-1] and not explicit and j == 0:
                width = 2                             # Volta/Turing '.E' addresses: [R6] is R6:R7
            out.append((kind[0], kind[1], width))
    return out


def _pred_mask(ops: list[str]) -> int:
    """The mask immediate of P2R/R2P (the last hex/decimal immediate); all 7 when absent."""
    for op in reversed(ops):
        if re.match(r"^(0x[0-9a-fA-F]+|\d+)$", op):
            return int(op, 0)
    return 0x7F


def register_operands(instr: SassInstr) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(slots written, slots read) by `instr`; see the module docstring for the rules."""
    parts = instr.opcode.split(".")
    base, mods = parts[0], parts[1:]
    ops = _split(instr.operands)
    writes: set[int] = set()
    reads: set[int] = set()
    if instr.predicate:
        kind = _kind(instr.predicate.lstrip("@").lstrip("!"))
        if kind is not None:
            reads.update(_slots(*kind, 1))
    if base not in KNOWN:
        UNKNOWN_OPCODES.add(base)
    if base in ("R2P", "UR2UP", "P2R", "UP2UR"):
        mask = _pred_mask(ops)
        pk = "UP" if base in ("UR2UP", "UP2UR") else "P"
        preds = [s for i in range(7) if mask >> i & 1 for s in _slots(pk, i, 1)]
        (writes if base in ("R2P", "UR2UP") else reads).update(preds)
        roles = ["w"] + ["r"] * (len(ops) - 1) if base in ("P2R", "UP2UR") else ["r"] * len(ops)
    else:
        roles = _roles(base, mods, ops)
    widths = _widths(base, mods, ops, roles)
    for k, (op, role, width) in enumerate(zip(ops, roles, widths)):
        if _is_mem(op):
            toks = _memory_tokens(base, mods, op, k)
            for kind, index, w in toks:           # registers inside an address are always read
                reads.update(_slots(kind, index, w))
            continue
        for t in _TOKEN.finditer(op):
            kind = _kind(t.group(1))
            if kind is None:
                continue
            w = width if kind[0] in ("R", "UR") else 1
            if "64" in t.group(2).split(".")[1:]:
                w = max(w, 2)
            slots = _slots(kind[0], kind[1], w)
            if "w" in role:
                writes.update(slots)
            if "r" in role:
                reads.update(slots)
    return tuple(sorted(writes)), tuple(sorted(reads))
