"""PTX from any compiler as a `KernelSource` (`source.py`): `gpusim.PtxSource(text_or_path, "kernel")`.

The kernel is the `.entry` named `kernel` (its exact, possibly mangled, name, or the
unmangled name when one entry has it). Its parameters are those of the `.entry`
signature, passed as the CUDA driver passes them (`rawargs.py`: a numpy array for a 64-bit
parameter becomes a device pointer; scalars are numpy scalars of the parameter's type).
`.loc`/`.file` directives give the source lines reports show; PTX without them has none.

The PTX's `.target` must be one the preset's GPU can run: `sm_XY` with XY at most the
preset's compute capability (the driver JIT-compiles PTX forward, never backward), and an
architecture-specific target (`sm_90a`) only on exactly that architecture. The kernel is
assembled by ptxas for the preset's `sm_XY` (`sass/`), as the driver's JIT would.

`ptx_kernel(...)` builds the `CompiledKernel` for a PTX text; `CudaSource`
(`cudasource.py`) passes NVRTC's PTX through it.
"""
from __future__ import annotations

import os
import re
import threading
from pathlib import Path

from gpusim.errors import UnsupportedKernel
from gpusim.frontend.rawargs import marshal_raw
from gpusim.frontend.source import CompiledKernel, KernelParam, Marshalled
from isa.demangle import pretty_name

_ENTRY_RE = re.compile(r"\.entry\s+([\w$.]+)\s*\(([^)]*)\)", re.S)
_PARAM_RE = re.compile(r"\.param\s+(?:\.ptr\s+)?(?:\.align\s+\d+\s+)?\.(\w+)\s+(?:\.ptr\s+(?:\.\w+\s+)*)?"
                       r"(?:\.align\s+\d+\s+)?([\w$.]+)(?:\s*\[\s*(\d+)\s*\])?")
_TARGET_RE = re.compile(r"^\s*\.target\s+sm_(\d+)(a?)", re.M)
_FILE_RE = re.compile(r'^\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"', re.M)
_LOC_RE = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)", re.M)

_MEMORY: dict[tuple, CompiledKernel] = {}
_LOCK = threading.Lock()


def read_text(text_or_path, what: str) -> tuple[str, str]:
    """(text, path or '') of a source given as its text or as a path to a file."""
    if isinstance(text_or_path, os.PathLike) or (isinstance(text_or_path, str) and "\n" not in text_or_path
                                                   and len(text_or_path) < 4096 and Path(text_or_path).is_file()):
        path = Path(text_or_path).resolve()
        return path.read_text(), str(path)
    if not isinstance(text_or_path, str):
        raise UnsupportedKernel(f"{what} takes the source text or a path to a file, got "
                                f"{type(text_or_path).__name__} {text_or_path!r:.60}")
    return text_or_path, ""


def entries(ptx: str) -> dict[str, str]:
    """`.entry` name -> the text of its parameter list."""
    return {m.group(1): m.group(2) for m in _ENTRY_RE.finditer(ptx)}


def find_entry(ptx: str, kernel: str, where: str) -> str:
    """The `.entry` of `ptx` named `kernel` (exactly, or by its unmangled name when unique)."""
    found = entries(ptx)
    if kernel in found:
        return kernel
    by_plain = [e for e in found if pretty_name(e) == kernel]
    if len(by_plain) == 1:
        return by_plain[0]
    listed = ", ".join(sorted(found)) or "none"
    why = f"several entries are named {kernel} ({', '.join(by_plain)}): give the mangled name" if by_plain else \
        f"its entries: {listed}"
    raise UnsupportedKernel(f"kernel {kernel}: {where} has no .entry {kernel} ({why})")


def entry_params(ptx: str, entry: str) -> tuple[KernelParam, ...]:
    """The `.entry`'s `.param`s as `KernelParam`s ('.u64', '.f32', '.b8[16]' for a struct by value)."""
    out = []
    for decl in entries(ptx)[entry].split(","):
        m = _PARAM_RE.search(decl)
        if m is not None:
            out.append(KernelParam(m.group(2), f".{m.group(1)}" + (f"[{m.group(3)}]" if m.group(3) else "")))
    return tuple(out)


def loc_file(ptx: str, entry: str) -> str:
    """The source file the entry's first `.loc` points into ('' when it has none)."""
    start = ptx.find(f".entry {entry}")
    m = _LOC_RE.search(ptx, start if start >= 0 else 0)
    if m is None:
        return ""
    files = {int(n): p for n, p in _FILE_RE.findall(ptx)}
    return files.get(int(m.group(1)), "")


def _named(params: tuple[KernelParam, ...], names: tuple) -> tuple[KernelParam, ...]:
    """The `.param`s named as the source names them ('n: int (.u32)'), when the counts agree."""
    if len(names) != len(params):
        return params
    return tuple(KernelParam(n, f"{t} ({p.type})") for (n, t), p in zip(names, params))


def check_target(ptx: str, name: str, cc: tuple[int, int], gpu: str) -> None:
    """UnsupportedKernel when the preset's GPU could not run PTX for this `.target` (module doc)."""
    m = _TARGET_RE.search(ptx)
    if m is None:
        return
    sm, specific = int(m.group(1)), m.group(2)
    have = cc[0] * 10 + cc[1]
    if sm > have or (specific and sm != have):
        need = f"exactly sm_{sm}" if specific else f"sm_{sm} or newer"
        raise UnsupportedKernel(f"kernel {name}: its PTX targets sm_{sm}{specific}, which needs {need}; {gpu} is "
                                f"sm_{have} (compile for compute_{have} or choose another GPU)")


def ptx_kernel(ptx: str, entry: str, name: str, cc: tuple[int, int], language: str, source_file: str = "",
               first_line: int = 0, names: tuple = (), assembler: str | None = None) -> CompiledKernel:
    """The `CompiledKernel` of one entry of a PTX module (cached: parsing happens once). `names`:
    the source's (name, type) of each parameter, when the language knows them (CUDA C++);
    `assembler`: the ptxas the language's own stack uses (Triton's), gpusim's when None."""
    key = (ptx, entry, name, tuple(cc), language, source_file, first_line, names, assembler)
    with _LOCK:
        ck = _MEMORY.get(key)
        if ck is None:
            ck = CompiledKernel(language=language, name=name, ptx=ptx, entry=entry, cc=tuple(cc),
                                source_file=source_file or loc_file(ptx, entry), first_line=first_line,
                                params=_named(entry_params(ptx, entry), names), assembler=assembler)
            if len(_MEMORY) > 256:
                _MEMORY.clear()
            _MEMORY[key] = ck
    return ck


class PtxSource:
    """A kernel in a PTX file or text: `gpusim.launch(gpusim.PtxSource(path, "kernel"), grid, block, args)`."""
    language = "ptx"

    def __init__(self, text_or_path, kernel: str) -> None:
        if not isinstance(kernel, str) or not kernel:
            raise UnsupportedKernel(f"PtxSource: the kernel is named by its .entry name (a string), got {kernel!r}")
        self.text, self.path = read_text(text_or_path, "PtxSource")
        self.name = kernel
        if ".entry" not in self.text:
            raise UnsupportedKernel(f"kernel {kernel}: PtxSource got no PTX (no .entry in "
                                    f"{self.path or repr(self.text[:60])}); pass PTX text or a path to a .ptx file")
        self.entry = find_entry(self.text, kernel, self.path or "the PTX")

    def __repr__(self) -> str:
        return f"PtxSource({self.path or '<text>'!s}, {self.name!r})"

    def compile(self, spec, args: tuple) -> CompiledKernel:
        check_target(self.text, self.name, spec.compute_capability, spec.name)
        return ptx_kernel(self.text, self.entry, self.name, spec.compute_capability, self.language)

    def marshal(self, compiled: CompiledKernel, args: tuple, memory) -> Marshalled:
        return marshal_raw(compiled, args, memory)

    def after_launch(self, prepared) -> None:
        """Nothing: a PTX kernel has no runtime of its own."""

