"""The device functions Numba links in from CUDA C++: compiled with NVRTC on the CPU,
so that `isa.inline` can inline them like any `.func`.

What is modelled: numba-cuda lowers float16, bfloat16 and fp8 arithmetic
(`a * b`, `cuda.fp16.hfma`, comparisons, conversions) to calls of `.extern .func`
shims with C++-mangled names and a `_nbst` suffix (`_ZmlRK6__halfS1__nbst`:
`operator*` on `__half`), and `array.reshape` to `numba_attempt_nocopy_reshape`. At
link time Numba compiles their CUDA C++ source with NVRTC and links it (`CUSource`,
`linkable_code.py`; `dispatcher.py` adds `reshape_funcs.cu`). Here, the same source:
- the numbast binding modules `numba.cuda._internal.cuda_fp16`, `cuda_bf16` and
  `cuda_fp8` each hold, per shim, a literal `shim_raw_str = \"\"\"extern "C"
  __device__ int NAME(...) {...}\"\"\"` and one `shim_prefix` (`#include <cuda_fp16.h>`);
  the catalog maps every NAME to its module and snippet (read from the module file).
  All three prefixes are included together (a float16 shim may take a bfloat16);
- `reshape_funcs.cu` is taken whole.
`resolve_externs(program)` collects the snippets the program needs into one
translation unit (prefixes first, then snippets by name), compiles it with
`cuda.bindings.nvrtc` for `compute_XY` of the program's `.target` (`-rdc=true`, the
include paths numba-cuda's `nvrtc.compile` uses: its bundled `include/12|13`
headers and the CUDA toolkit include directory), parses the PTX with
`isa.parser.parse` and returns every function that module defines, by name (helpers
a shim calls are defined there too). No GPU and no driver are needed.

Caches: in memory per source text; on disk `<cache_dir()>/externs/<sha256>.ptx`,
keyed by the source text, the target, the NVRTC version and the numba-cuda version
(`cache_dir()` is the frontend's PTX cache directory, `$GPUSIM_CACHE_DIR` or
`~/.cache/gpusim/ptx`; `GPUSIM_DISK_CACHE=0` turns it off).

Elsewhere: NRT (`NRT_*`, memory management in kernels) is defined in PTX by `nrt.py`,
`vprintf` (device `print`) by `printf.py`. Not modelled: user `link=` files and
`declare_device` externals other than numba-cuda's own: asking for one of them raises
`UnsupportedCall` naming it and what it is.

Sources: numba-cuda 0.30 `_internal/cuda_fp16.py` (numbast-generated bindings),
`cudadrv/nvrtc.py` (`compile`: options and include paths), `dispatcher.py`
(`link_to_library_functions`, `maybe_link_nrt`); NVRTC user guide; PTX ISA chapter
7 "Abstracting the ABI".
"""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import os
import re
import threading
from importlib import metadata
from pathlib import Path

import numba.cuda
from cuda import pathfinder
from cuda.bindings import nvrtc
from numba.cuda.compiler import ExternFunction
from numba.cuda.cuda_paths import get_cuda_paths
from numba.cuda.descriptor import cuda_target

from gpusim.frontend.diskcache import cache_dir, read_text_entry, write_entry
from isa.demangle import pretty_name
from isa.errors import UnsupportedCall
from isa.parser import parse
from isa.program import Kernel, Program

CACHE_FORMAT = 1
SHIM_MODULES = ("cuda_fp16", "cuda_bf16", "cuda_fp8")      # under numba.cuda._internal
LIBRARY_SOURCES = ("reshape_funcs.cu",)                     # under numba.cuda, taken whole

_SNIPPET_RE = re.compile(r'shim_raw_str\s*=\s*("""[\s\S]*?""")')
_DEFINES_RE = re.compile(r'extern\s+"C"\s+__device__\s+[\w\s\*&]+?\b(\w+)\s*\(')
# CUDA's fp16/bf16 headers write inline-asm declarations as `.reg.b16 i,r;`; isa.parser
# wants a space after the state space, so one is inserted before parsing.
_GLUED_DECL_RE = re.compile(r"(?<![\w.])(\.(?:reg|local|shared|param))\.(?=[a-z])")
_LOCK = threading.Lock()
_MEMORY: dict[str, "Externs"] = {}

_KNOWN = {           # what a name that no catalog entry defines is, for the error message
    "vprintf": "device printf (Python print() in a kernel)",
    "__assertfail": "a failed-assert handler (debug=True or assert in a kernel)",
    "malloc": "device malloc", "free": "device free",
}


def resolve_externs(program: Program, names: tuple[str, ...] | list[str] | None = None,
                    sources: tuple = ()) -> dict[str, Kernel]:
    """Definitions of the external device functions `names` (default: every `.func`
    `program` declares without defining), plus everything the compiled helper module
    defines. `sources` (a kernel's `link=` list) are searched after each name's own
    `declare_device(link=...)` sources. Raises `UnsupportedCall` for a name no source provides."""
    if names is None:
        names = [n for n, f in program.functions.items() if not f.defined]
    names = sorted(set(names))
    if not names:
        return Externs()
    catalog = _catalog()
    user = Externs()
    for n in [n for n in names if n not in catalog]:
        for src in declared_sources(n):
            user.update_from(_user_functions(src, _arch(program)))
    if sources and any(n not in catalog and n not in user for n in names):
        for src in sources:
            user.update_from(_user_functions(src, _arch(program)))
    missing = [n for n in names if n not in catalog and n not in user]
    if missing:
        raise _missing(program, missing[0])
    names = [n for n in names if n not in user]
    if not names:
        return user
    source = _source(names, catalog)
    with _LOCK:
        funcs = _MEMORY.get(source)
        if funcs is None:
            funcs = _functions(_compiled(source, _arch(program)))
            _MEMORY[source] = funcs
    return Externs({**funcs, **user}, (*funcs.globals, *user.globals))


class Externs(dict):
    """Function name -> definition, with `globals`: the module-scope variables (string
    constants of an `assert`, tables) the defining modules declare, renamed apart
    (`__gpusim_ext_` prefix) so they cannot meet the kernel's own; `link` places them."""

    def __init__(self, funcs=(), globals_: tuple = ()):
        super().__init__(funcs)
        self.globals = tuple(globals_)

    def update_from(self, other: "Externs") -> None:
        self.update(other)
        have = {v.name for v in self.globals}
        self.globals += tuple(v for v in other.globals if v.name not in have)


_GLOBAL_DECL_RE = re.compile(r"\.global\s+(?:\.align\s+\d+\s+)?\.\w+\s+([\w$]+)")


def _functions(ptx: str) -> Externs:
    """The functions a compiled helper module defines, and its module-scope variables."""
    ptx = _GLUED_DECL_RE.sub(r"\1 .", ptx)
    for name in sorted(set(_GLOBAL_DECL_RE.findall(ptx)), key=len, reverse=True):
        ptx = re.sub(r"(?<![\w$])" + re.escape(name) + r"(?![\w$])", "__gpusim_ext_" + name.replace("$", "_S"), ptx)
    module = parse(ptx)
    return Externs({n: f for n, f in module.functions.items() if f.defined},
                   tuple(v for v in module.globals if v.space in ("global", "const")))


# ----------------------------------------------------------------------------- user code
def declared_sources(name: str) -> list:
    """The `link=` files and code objects of the function `cuda.declare_device(name, ...)`
    declared (Numba keeps them with the function's lowering in the CUDA target context)."""
    out: list = []
    for func, overloads in list(cuda_target.target_context._defns.items()):
        if isinstance(func, ExternFunction) and func.name == name:
            for _, impl in overloads.versions:
                for lib in getattr(impl, "libs", ()):
                    out += [f for f in getattr(lib, "_linking_files", ()) if f not in out]
    return out


def _user_functions(src, arch: str) -> dict[str, Kernel]:
    """Functions defined by one linked source: a .cu/.ptx path or a CUSource/PTXSource."""
    kind, text, where = _user_text(src)
    key = f"{kind}:{where}:{text}"
    with _LOCK:
        funcs = _MEMORY.get(key)
        if funcs is None:
            funcs = _functions(_compiled(text, arch, where) if kind == "cu" else text)
            _MEMORY[key] = funcs
    return funcs


def _user_text(src) -> tuple[str, str, str]:
    """(kind 'cu' or 'ptx', source text, include directory) of a linked source."""
    if isinstance(src, (str, os.PathLike)):
        path = Path(src)
        kind = path.suffix.lstrip(".").lower()
        if kind not in ("cu", "ptx"):
            raise UnsupportedCall(f"linked file {path.name}: the simulator links CUDA C++ (.cu) and PTX (.ptx) "
                                  f"sources, not .{kind} (compiled or LTO-IR code it cannot read)")
        return kind, path.read_text(), str(path.parent)
    kind = getattr(src, "kind", "")
    data = getattr(src, "data", None)
    if data is None or kind not in ("cu", "ptx"):
        raise UnsupportedCall(f"linked code {getattr(src, 'name', src)!r} of kind {kind or '?'}: the simulator "
                              "links CUDA C++ and PTX sources only")
    text = data.decode() if isinstance(data, (bytes, bytearray)) else str(data)
    return kind, text, ""


def describe(name: str) -> str:
    """What the external function `name` is, in words."""
    pretty = pretty_name(name)
    entry = _catalog().get(name)
    if entry is not None:
        return f"{pretty} ({name}), a C++ helper from numba-cuda's {entry[0]}"
    if name in _KNOWN:
        return f"{name}, {_KNOWN[name]}"
    if name.startswith("NRT_"):
        return f"{name}, part of Numba's runtime (NRT: memory management in kernels)"
    if name.endswith("_nbst"):
        return f"{pretty} ({name}), a numbast C++ shim that numba-cuda's bindings here do not provide"
    return f"{pretty} ({name})" if pretty != name else name


# ----------------------------------------------------------------------------- catalog
@functools.lru_cache(maxsize=1)
def _catalog() -> dict[str, tuple[str, str, str]]:
    """Extern name -> (source unit, prefix, snippet). Read once per process."""
    base = Path(numba.cuda.__file__).parent
    out: dict[str, tuple[str, str, str]] = {}
    for mod_name in SHIM_MODULES:
        try:
            mod = importlib.import_module(f"numba.cuda._internal.{mod_name}")
            text = Path(mod.__file__).read_text()
        except (ImportError, OSError):
            continue
        prefix = getattr(mod, "shim_prefix", "")
        for lit in _SNIPPET_RE.findall(text):
            snippet = ast.literal_eval(lit)
            m = _DEFINES_RE.search(snippet)
            if m is not None:
                out.setdefault(m.group(1), (mod_name, prefix, snippet))
    for rel in LIBRARY_SOURCES:
        try:
            text = (base / rel).read_text()
        except OSError:
            continue
        for name in _DEFINES_RE.findall(text):
            out.setdefault(name, (rel, text, ""))
    return out


def _source(names: list[str], catalog: dict) -> str:
    """One translation unit defining `names`: prefixes, then the snippets by name. Every
    shim module's prefix comes as soon as one shim is needed: some float16 shims take a
    `__nv_bfloat16`, whose header only the bfloat16 prefix includes."""
    units = {catalog[n][0] for n in names}
    prefixes = {u: p for u, p, _ in catalog.values()}
    order = [u for u in SHIM_MODULES if u in prefixes] if units & set(SHIM_MODULES) else []
    order += sorted(units - set(SHIM_MODULES))
    snippets = [catalog[n][2] for n in names if catalog[n][2]]
    return "\n".join([*(prefixes[u] for u in order), *snippets]) + "\n"


def _missing(program: Program, name: str) -> UnsupportedCall:
    line, caller = 0, ""
    for fn in (*program.kernels.values(), *program.functions.values()):
        for ins in fn.instructions:
            if ins.opcode == "call" and any(getattr(o, "name", None) == name for o in ins.operands):
                line, caller = ins.ptx_line, fn.name
                break
        if line:
            break
    where = f" (called at PTX line {line}, from {pretty_name(caller)})" if line else ""
    return UnsupportedCall(f"kernel calls {describe(name)}{where}, which the simulator cannot link: "
                           "only numba-cuda's float16/bfloat16/fp8 and reshape helpers are compiled in",
                           callee=name, ptx_line=line)


# ----------------------------------------------------------------------------- compiling
def _arch(program: Program) -> str:
    m = re.search(r"sm_(\d+)", program.target or "")
    return f"compute_{m.group(1) if m else '90'}"


def nvrtc_version() -> tuple[int, int]:
    err, major, minor = nvrtc.nvrtcVersion()
    return int(major), int(minor)


def _cache_path(source: str, arch: str) -> Path | None:
    if os.environ.get("GPUSIM_DISK_CACHE", "1") == "0":
        return None

    try:
        nc = metadata.version("numba-cuda")
    except metadata.PackageNotFoundError:
        nc = "?"
    key = repr((CACHE_FORMAT, arch, nvrtc_version(), nc, source))
    return cache_dir() / "externs" / f"{hashlib.sha256(key.encode()).hexdigest()}.ptx"


def _compiled(source: str, arch: str, include: str = "") -> str:
    """PTX of `source` for `arch`, from the disk cache or NVRTC."""
    path = _cache_path(include + "\n" + source if include else source, arch)
    if path is not None:
        text = read_text_entry(path)             # None when missing or corrupt (then rebuilt)
        if text is not None and ".func" in text:
            return text
    ptx = _nvrtc(source, arch, include)
    if path is not None:
        write_entry(path, ptx)
    return ptx


def include_dirs() -> list[str]:
    """numba-cuda's bundled fp16/bf16/fp8 headers, the CUDA toolkit's include directory, CCCL's."""
    base = Path(numba.cuda.__file__).parent
    dirs = [str(base / "include" / str(nvrtc_version()[0]))]
    try:
        inc = get_cuda_paths()["include_dir"].info
        if inc:
            dirs.append(str(inc))
    except Exception:                  # no toolkit headers found: the bundled ones may suffice
        pass
    # <mma.h> includes "crt/mma.h", which ships in its own wheel (nvidia-cuda-crt): an include dir
    # without it (a venv holding only nvidia-cuda-runtime) is followed by a toolkit's that has it
    if not any((Path(d) / "crt" / "mma.h").is_file() for d in dirs):
        for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
            if home and (Path(home) / "include" / "crt" / "mma.h").is_file():
                dirs.append(str(Path(home) / "include"))
                break
    try:                               # CCCL (libcu++: <cuda/std/...>, <cuda/barrier>), as numba-cuda adds it
        found = pathfinder.locate_nvidia_header_directory("cccl")
        cccl = found.abs_path if found is not None else None
    except Exception:
        cccl = None
    if cccl is None and len(dirs) > 1 and (Path(dirs[-1]) / "cccl").is_dir():
        cccl = str(Path(dirs[-1]) / "cccl")
    if cccl:
        dirs.append(str(cccl))
    return dirs


def _nvrtc(source: str, arch: str, include: str = "") -> str:
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"gpusim_externs.cu", 0, [], [])
    _check(nvrtc, err, "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={arch}".encode(), b"-rdc=true"]
        opts += [f"-I{d}".encode() for d in ([include] if include else []) + include_dirs()]
        (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if res != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            err, n = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * n
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise UnsupportedCall("NVRTC could not compile the device source for the simulator:\n"
                                  + log.decode(errors="replace").strip())
        err, n = nvrtc.nvrtcGetPTXSize(prog)
        _check(nvrtc, err, "nvrtcGetPTXSize")
        buf = b" " * n
        (err,) = nvrtc.nvrtcGetPTX(prog, buf)
        _check(nvrtc, err, "nvrtcGetPTX")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return buf.rstrip(b"\0").decode()


def _check(nvrtc, err, what: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise UnsupportedCall(f"NVRTC failed in {what}: {err}")
