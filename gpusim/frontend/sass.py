"""The kernel as the GPU runs it: ptxas' resource report and the SASS listing.

`ptxas_info(ptx, entry, cc)` assembles Numba's PTX with NVIDIA's `ptxas -v -lineinfo
-arch=sm_XY` and reads its report: registers per thread (what occupancy needs),
static shared memory, stack frame (local memory), spill bytes, and the cubin. Results
are cached in memory and on disk (`$GPUSIM_CACHE_DIR/sass/`, default
`~/.cache/gpusim/sass/`; `GPUSIM_DISK_CACHE=0` turns the disk off), keyed by the PTX,
the arch, the options and the ptxas version.

`sass_listing(cubin, entry)` disassembles the entry's code section with
`nvdisasm -c -gi` and maps each instruction to its Python source line through the
cubin's line table (from the PTX `.loc`s Numba emits with `lineinfo=True`). Code
inlined from a device function is attributed to the kernel line that calls it
(`source_line`), the callee's own line kept in `inlined_line`. Internal subroutines
ptxas appends (e.g. the slow path of `sqrt`) carry `function` and no line. The
padding after the last instruction (a branch to itself and NOPs, never executed) is
dropped. `sass_profile(listing)` counts instructions per source line and per op class
(`op_class`: the pipeline classes of `gpusim.specs.units.PipelinesSpec`).

Counts are static (instructions in the binary), not executed instructions.

The tools come from NVIDIA's wheels: `cuda-toolkit[nvcc,nvdisasm]` (packages
`nvidia-cuda-nvcc`, `nvidia-cuda-nvdisasm`), found with `cuda.pathfinder` or on PATH.
Without them `have_ptxas()` is False, the functions raise `SassToolError`, and
callers fall back to `estimate_registers_from_ptx`.

Sources: CUDA Binary Utilities (nvdisasm options, SASS instruction set reference for
Hopper); ptxas options (`-v`, `-lineinfo`, `-maxrregcount`); Nsight Compute Kernel
Profiling Guide, "Pipelines" (which unit runs which SASS op).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from gpusim.errors import GpusimError

CACHE_FORMAT = 1
INSTALL_HINT = "pip install 'cuda-toolkit[nvcc,nvdisasm]==13.*' (packages nvidia-cuda-nvcc, nvidia-cuda-nvdisasm)"


class SassToolError(GpusimError):
    """ptxas or nvdisasm is missing, or refused the input (the message says which and why)."""


# ----------------------------------------------------------------------------- tools
@lru_cache(maxsize=None)
def _tool(name: str) -> str | None:
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
        path = find_nvidia_binary_utility(name)
    except Exception:                     # pathfinder missing or unable to look: fall back to PATH
        path = None
    return path or shutil.which(name)


def have_ptxas() -> bool:
    """True when ptxas can be run (registers, spills, cubins are available)."""
    return _tool("ptxas") is not None


def have_nvdisasm() -> bool:
    return _tool("nvdisasm") is not None


def _require(name: str) -> str:
    path = _tool(name)
    if path is None:
        raise SassToolError(f"{name} not found (needed for the kernel's SASS): {INSTALL_HINT}")
    return path


@lru_cache(maxsize=None)
def ptxas_version() -> str:
    """ptxas' version line, e.g. 'Cuda compilation tools, release 13.4, V13.4.92'."""
    out = _run([_require("ptxas"), "--version"], "ptxas --version").stdout
    lines = [ln for ln in out.splitlines() if "release" in ln]
    return lines[0].strip() if lines else out.strip().splitlines()[-1]


def _run(cmd: list[str], what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
    except subprocess.CalledProcessError as e:
        msg = (e.stderr or e.stdout or "").strip()
        hint = ""
        if "Unsupported .version" in msg:
            hint = " (this ptxas is older than the NVVM that wrote the PTX: install a matching nvidia-cuda-nvcc)"
        raise SassToolError(f"{what} failed: {msg}{hint}") from None
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SassToolError(f"{what} could not run: {e}") from None


# ----------------------------------------------------------------------------- ptxas
@dataclass(frozen=True)
class PtxasInfo:
    """ptxas' report for one entry."""
    registers_per_thread: int        # 'Used N registers'
    shared_bytes_static: int         # 'N bytes smem' (dynamic shared memory is the launch's)
    local_bytes: int                 # stack frame per thread: local arrays and spills
    spill_stores: int                # bytes per thread
    spill_loads: int                 # bytes per thread
    barriers: int                    # named barriers used
    arch: str                        # e.g. 'sm_90'
    cubin: bytes = field(repr=False)


_MEMORY: dict[str, PtxasInfo] = {}
_LOCK = threading.Lock()


def sass_cache_dir() -> Path:
    env = os.environ.get("GPUSIM_CACHE_DIR")
    return (Path(env).expanduser() if env else Path.home() / ".cache" / "gpusim") / "sass"


def ptxas_info(ptx: str, entry: str, cc: tuple[int, int] = (9, 0), max_registers: int | None = None) -> PtxasInfo:
    """Assemble `ptx` for sm_<cc> and report `entry`'s resources (cached).
    `max_registers` passes `-maxrregcount` (ptxas raises it to the arch's minimum)."""
    arch = f"sm_{cc[0]}{cc[1]}"
    opts = ["-v", "-lineinfo", f"-arch={arch}"] + ([f"-maxrregcount={max_registers}"] if max_registers else [])
    ptxas = _require("ptxas")
    key = hashlib.sha256(repr((CACHE_FORMAT, ptxas_version(), opts, entry, ptx)).encode()).hexdigest()
    with _LOCK:
        hit = _MEMORY.get(key) or _disk_load(key)
        if hit is None:
            hit = _assemble(ptxas, ptx, entry, arch, opts)
            _disk_store(key, hit)
        _MEMORY[key] = hit
        return hit


def _assemble(ptxas: str, ptx: str, entry: str, arch: str, opts: list[str]) -> PtxasInfo:
    with tempfile.TemporaryDirectory(prefix="gpusim-ptxas-") as tmp:
        src, out = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        src.write_text(ptx)
        res = _run([ptxas, *opts, "-o", str(out), str(src)], f"ptxas {' '.join(opts)} for {entry}")
        cubin = out.read_bytes()
    report = _parse_report(res.stdout + "\n" + res.stderr)
    if entry not in report:
        raise SassToolError(f"ptxas reported no entry {entry!r}; entries: {sorted(report)}")
    r = report[entry]
    return PtxasInfo(registers_per_thread=r.get("registers", 0), shared_bytes_static=r.get("smem", 0),
                     local_bytes=r.get("stack", 0), spill_stores=r.get("spill_stores", 0),
                     spill_loads=r.get("spill_loads", 0), barriers=r.get("barriers", 0), arch=arch, cubin=cubin)


_FUNC = re.compile(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?")
_SMEM = re.compile(r"(\d+) bytes smem")


def _parse_report(text: str) -> dict[str, dict[str, int]]:
    """Function name -> {'registers', 'barriers', 'smem', 'stack', 'spill_stores', 'spill_loads'}."""
    out: dict[str, dict[str, int]] = {}
    cur: dict[str, int] | None = None
    for line in text.splitlines():
        m = _FUNC.search(line)
        if m:
            cur = out.setdefault(m.group(1), {})
            continue
        if cur is None:
            continue
        if m := _STACK.search(line):
            cur.update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        if m := _USED.search(line):
            cur.update(registers=int(m.group(1)), barriers=int(m.group(2) or 0))
            if s := _SMEM.search(line):
                cur["smem"] = int(s.group(1))
    return out


def _disk_load(key: str) -> PtxasInfo | None:
    if os.environ.get("GPUSIM_DISK_CACHE", "1") == "0":
        return None
    base = sass_cache_dir() / key
    try:
        meta = json.loads(base.with_suffix(".json").read_text())
        return PtxasInfo(**meta, cubin=base.with_suffix(".cubin").read_bytes())
    except (OSError, ValueError, TypeError):
        return None


def _disk_store(key: str, info: PtxasInfo) -> None:
    """Cubin first, then the metadata that makes the entry valid; each written atomically."""
    if os.environ.get("GPUSIM_DISK_CACHE", "1") == "0":
        return
    meta = {k: v for k, v in asdict(info).items() if k != "cubin"}
    base = sass_cache_dir() / key
    try:
        base.parent.mkdir(parents=True, exist_ok=True)
        for path, data in ((base.with_suffix(".cubin"), info.cubin), (base.with_suffix(".json"), json.dumps(meta).encode())):
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
    except OSError:
        pass


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

    @property
    def op_class(self) -> str:
        return op_class(self.opcode)


_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(.*?)\s*;?\s*$")
_LOC = re.compile(r'"([^"]*)", line (\d+)')
_LABEL = re.compile(r"^([\w$.]+):\s*$")
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([\w$.]+)")
_TYPE_FUNC = re.compile(r"^\s*\.type\s+([\w$.]+),\s*@function")
_PRED = re.compile(r"^(@!?U?P[T\d]+)\s+(.*)$")
_SELF_BRA = re.compile(r"`\(([\w$.]+)\)")


def sass_listing(cubin: bytes, entry: str | None = None) -> list[SassInstr]:
    """The SASS of `entry` (the only entry when None), with source lines."""
    nvdisasm = _require("nvdisasm")
    with tempfile.TemporaryDirectory(prefix="gpusim-nvdisasm-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        text = _run([nvdisasm, "-c", "-gi", str(path)], "nvdisasm -c -gi").stdout
    sections = _parse_disasm(text)
    if entry is None:
        if len(sections) != 1:
            raise SassToolError(f"cubin has {len(sections)} code sections; name the entry: {sorted(sections)}")
        entry = next(iter(sections))
    if entry not in sections:
        raise SassToolError(f"cubin has no code for entry {entry!r}; sections: {sorted(sections)}")
    instrs, labels = sections[entry]
    return _strip_padding(instrs, labels)


def _parse_disasm(text: str) -> dict[str, tuple[list[SassInstr], dict[str, int]]]:
    """Section (entry) name -> (instructions, label -> offset of the next instruction)."""
    sections: dict[str, tuple[list[SassInstr], dict[str, int]]] = {}
    cur: tuple[list[SassInstr], dict[str, int]] | None = None
    entry = function = None
    loc: tuple = (None, None, None, None)          # (file, line, inlined file, inlined line)
    group: list[str] = []                           # annotations since the last instruction
    pending: list[str] = []                         # labels waiting for their instruction
    for line in text.splitlines():
        if m := _SECTION.match(line):
            entry, function, loc = m.group(1), None, (None, None, None, None)
            cur = sections.setdefault(entry, ([], {}))
            continue
        if cur is None:
            continue
        if m := _TYPE_FUNC.match(line):
            function = None if m.group(1) == entry else m.group(1)
            loc = (None, None, None, None)
            continue
        if "//##" in line:
            group.append(line)
            continue
        if m := _LABEL.match(line):
            pending.append(m.group(1))
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        if group:
            loc = _location(group)
            group = []
        offset, body = int(m.group(1), 16), m.group(2).strip()
        pred = None
        if p := _PRED.match(body):
            pred, body = p.group(1), p.group(2)
        opcode = body.split(None, 1)[0] if body else ""
        for lab in pending:
            cur[1][lab] = offset
        pending = []
        cur[0].append(SassInstr(offset=offset, opcode=opcode, text=m.group(2).strip(), source_line=loc[1],
                                source_file=loc[0], inlined_line=loc[3], inlined_file=loc[2],
                                predicate=pred, function=function))
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
        m = _SELF_BRA.search(out[-1].text)
        if m and labels.get(m.group(1)) == out[-1].offset:
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


# ----------------------------------------------------------------------------- fallback
_REG_WORDS = {"pred": 0, "b8": 1, "u8": 1, "s8": 1, "b16": 1, "u16": 1, "s16": 1, "f16": 1, "bf16": 1,
              "b32": 1, "u32": 1, "s32": 1, "f32": 1, "f16x2": 1, "bf16x2": 1, "tf32": 1,
              "b64": 2, "u64": 2, "s64": 2, "f64": 2, "b128": 4}


def estimate_registers_from_ptx(kernel) -> int:
    """Registers per thread without ptxas: min(255, 32-bit words of every declared PTX
    register), 8/16/32-bit registers one word each, 64-bit two, predicates none.

    NVVM declares a fresh virtual register per value (SSA), so this is the register
    count if nothing were ever reused: it overestimates, often several times over,
    and so underestimates occupancy. Use `ptxas_info` when `have_ptxas()`; the true
    count is ptxas' allocation, which needs liveness and scheduling to compute."""
    words = 0
    for decl in kernel.regs:
        n = 1 if decl.count is None else decl.count
        words += n * _REG_WORDS.get(decl.type, 1)
    return max(1, min(255, words))
