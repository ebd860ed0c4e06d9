"""NVIDIA's tools on the kernel: `ptxas` (registers, shared memory, stack, the cubin) and
the runner shared with `nvdisasm`.

`ptxas_info(ptx, entry, cc)` assembles Numba's PTX with `ptxas -v -lineinfo -arch=sm_XY`
and reads its report: registers per thread (what occupancy needs), static shared
memory, stack frame (local memory), spill bytes, and the cubin. Results are cached in
memory and on disk (`$GPUSIM_CACHE_DIR/sass/`, default `~/.cache/gpusim/sass/`;
`GPUSIM_DISK_CACHE=0` turns the disk off), keyed by the PTX, the arch, the options and
the ptxas version. `-lineinfo` also makes ptxas record, for every SASS instruction, the
PTX line it came from (the `.nv_debug_line_sass` section), which `listing.py` reads.

The tools come from NVIDIA's wheels: `cuda-toolkit[nvcc,nvdisasm]` (packages
`nvidia-cuda-nvcc`, `nvidia-cuda-nvdisasm`), found with `cuda.pathfinder` or on PATH.
Without them `have_ptxas()` is False, the functions raise `SassToolError`, and
callers fall back to `estimate_registers_from_ptx`.

Sources: CUDA Binary Utilities (nvdisasm options); ptxas options (`-v`, `-lineinfo`,
`-maxrregcount`).
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

from cuda.pathfinder import find_nvidia_binary_utility

from gpusim.errors import GpusimError
from gpusim.frontend.diskcache import read_entry, read_text_entry, write_entry

CACHE_FORMAT = 1
INSTALL_HINT = "pip install 'cuda-toolkit[nvcc,nvdisasm]==13.*' (packages nvidia-cuda-nvcc, nvidia-cuda-nvdisasm)"


class SassToolError(GpusimError):
    """ptxas or nvdisasm is missing, or refused the input (the message says which and why)."""


# ----------------------------------------------------------------------------- tools
@lru_cache(maxsize=None)
def _tool(name: str) -> str | None:
    try:
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
def ptxas_version(ptxas: str | None = None) -> str:
    """The version line of ptxas (gpusim's, or the one at path `ptxas`), e.g. 'Cuda compilation
    tools, release 13.0, V13.0.88'."""
    out = _run([ptxas or _require("ptxas"), "--version"], "ptxas --version").stdout
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


def ptxas_info(ptx: str, entry: str, cc: tuple[int, int] = (9, 0), max_registers: int | None = None,
               ptxas: str | None = None) -> PtxasInfo:
    """Assemble `ptx` for sm_<cc> and report `entry`'s resources (cached).
    `max_registers` passes `-maxrregcount` (ptxas raises it to the arch's minimum); `ptxas` is the
    assembler the kernel's own stack uses (Triton's bundled one), gpusim's when None."""
    arch = f"sm_{cc[0]}{cc[1]}"
    if re.search(rf"^\s*\.target\s+{arch}a\b", ptx, re.M):   # arch-specific PTX (wgmma, setmaxnreg): sm_90a
        arch += "a"
    opts = ["-v", "-lineinfo", f"-arch={arch}"] + ([f"-maxrregcount={max_registers}"] if max_registers else [])
    ptxas = ptxas or _require("ptxas")
    key = hashlib.sha256(repr((CACHE_FORMAT, ptxas_version(ptxas), opts, entry, ptx)).encode()).hexdigest()
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
    meta, cubin = read_text_entry(base.with_suffix(".json")), read_entry(base.with_suffix(".cubin"))
    if meta is None or cubin is None:            # missing, or corrupt (checked entries: rebuilt)
        return None
    try:
        return PtxasInfo(**json.loads(meta), cubin=cubin)
    except (ValueError, TypeError):
        return None


def _disk_store(key: str, info: PtxasInfo) -> None:
    """Cubin first, then the metadata that makes the entry valid; each written atomically."""
    if os.environ.get("GPUSIM_DISK_CACHE", "1") == "0":
        return
    meta = {k: v for k, v in asdict(info).items() if k != "cubin"}
    base = sass_cache_dir() / key
    if write_entry(base.with_suffix(".cubin"), info.cubin):
        write_entry(base.with_suffix(".json"), json.dumps(meta))


# ----------------------------------------------------------------------------- nvdisasm
NVDISASM_OPTIONS = ("-c", "-gi", "-gp")      # code only; source lines with inlining; PTX lines
_TEXT: dict[str, str] = {}


@lru_cache(maxsize=None)
def nvdisasm_version() -> str:
    out = _run([_require("nvdisasm"), "--version"], "nvdisasm --version").stdout
    lines = [ln for ln in out.splitlines() if "release" in ln]
    return lines[0].strip() if lines else out.strip().splitlines()[-1]


def disassemble(cubin: bytes) -> str:
    """`nvdisasm -c -gi -gp` of a cubin (cached in memory and on disk by the cubin's hash
    and nvdisasm's version, like `ptxas_info`)."""
    nvdisasm = _require("nvdisasm")
    key = hashlib.sha256(repr((CACHE_FORMAT, nvdisasm_version(), NVDISASM_OPTIONS)).encode() + cubin).hexdigest()
    with _LOCK:
        text = _TEXT.get(key)
    if text is not None:
        return text
    path = sass_cache_dir() / f"{key}.sass"
    disk = os.environ.get("GPUSIM_DISK_CACHE", "1") != "0"
    text = read_text_entry(path) if disk else None
    if text is None:
        with tempfile.TemporaryDirectory(prefix="gpusim-nvdisasm-") as tmp:
            src = Path(tmp) / "kernel.cubin"
            src.write_bytes(cubin)
            text = _run([nvdisasm, *NVDISASM_OPTIONS, str(src)], "nvdisasm " + " ".join(NVDISASM_OPTIONS)).stdout
        if disk:
            write_entry(path, text)
    with _LOCK:
        if len(_TEXT) > 512:
            _TEXT.clear()
        _TEXT[key] = text
    return text


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
