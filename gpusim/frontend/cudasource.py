"""CUDA C++ as a `KernelSource` (`source.py`):
`gpusim.CudaSource(text_or_path, "kernel", options=("-std=c++17",))`.

The source is compiled with NVRTC (`cuda.bindings.nvrtc`, no GPU and no driver needed) to
PTX, which then takes `PtxSource`'s path (`ptxsource.ptx_kernel`; arguments as
`rawargs.py` passes them). NVRTC is given:
- `--gpu-architecture=compute_XY` from the preset's compute capability, `compute_90a` for the
  Hopper presets (an H100/H200 runs sm_90a's architecture-specific instructions: wgmma,
  setmaxnreg; `__CUDA_ARCH_FEAT_SM90_ALL` is defined as with nvcc -arch=sm_90a); an `-arch` in
  `options` is refused: the preset decides; `-lineinfo` (so every report shows the .cu
  lines), the caller's `options`, and the include directories of the CUDA pip packages
  (`externs.include_dirs`: numba-cuda's bundled headers, `nvidia/cu13/include`, CCCL);
- the kernel as a name expression: `"saxpy"` (an `extern "C"` or a C++ kernel) or a
  template instance `"scale<float, 128>"`; NVRTC's lowered (mangled) name is the `.entry`.

The program's file name is the .cu path when one is given; source text is written once to
`<cache dir>/cuda-src/<sha256 of the text>.cu` (so reports and error messages can show
its lines). Compiled PTX is cached by content: in memory, and on disk under
`<cache dir>/cuda/<sha256>.json`, keyed by the source text, file name, kernel, options,
architecture, include directories and the NVRTC version (`GPUSIM_DISK_CACHE=0`: off).

A compile error is one `UnsupportedKernel` line naming the kernel, the .cu line and NVRTC's
message (the rest of NVRTC's log is kept in the exception's `log`).

Sources: NVRTC User Guide (nvrtcAddNameExpression, nvrtcGetLoweredName, supported
options); CUDA C++ Programming Guide "Execution Configuration" (dynamic shared memory).
"""
from __future__ import annotations

import hashlib
import json
import linecache
import os
import re
import threading
from pathlib import Path

from gpusim.errors import UnsupportedKernel
from gpusim.frontend.compile import cache_dir
from gpusim.frontend.diskcache import read_text_entry, write_atomic, write_entry
from gpusim.frontend.externs import include_dirs, nvrtc_version
from gpusim.frontend.ptxsource import ptx_kernel, read_text
from gpusim.frontend.rawargs import marshal_raw
from gpusim.frontend.source import CompiledKernel, Marshalled

CACHE_FORMAT = 1
_DIAG_RE = re.compile(r"^(.*?)\((\d+)\): (catastrophic error|error|warning)[^:]*: (.*)$", re.M)
_MEMORY: dict[str, tuple[str, tuple[str, ...]]] = {}
_LOCK = threading.Lock()


class CudaSource:
    """A CUDA C++ kernel: `gpusim.launch(gpusim.CudaSource(src, "kernel"), grid, block, args)`."""
    language = "cuda"

    def __init__(self, text_or_path, kernel: str, options: tuple | list = ()) -> None:
        if not isinstance(kernel, str) or not kernel.strip():
            raise UnsupportedKernel(f"CudaSource: the kernel is named by a string (\"saxpy\", \"scale<float, 128>\"), "
                                    f"got {kernel!r}")
        self.name = kernel.strip()
        if isinstance(options, str) or not all(isinstance(o, str) for o in options):
            raise UnsupportedKernel(f"kernel {self.name}: options must be a tuple of strings (\"-std=c++17\", "
                                    f"\"-DN=4\"), got {options!r}")
        for o in options:
            if o.startswith(("-arch", "--gpu-architecture", "-gencode")):
                raise UnsupportedKernel(f"kernel {self.name}: option {o!r}: the architecture comes from the GPU "
                                        "preset (gpu=...); leave -arch out")
        self.options = tuple(options)
        self.text, path = read_text(text_or_path, "CudaSource")
        self.path = path or source_file(self.text)

    def __repr__(self) -> str:
        return f"CudaSource({self.path!s}, {self.name!r})"

    def compile(self, spec, args: tuple) -> CompiledKernel:
        cc = spec.compute_capability
        ptx, entry = compile_cuda(self.text, self.path, self.name, self.options, cc)
        ptx = user_locations(ptx, include_dirs())
        return ptx_kernel(ptx, entry, self.name, cc, self.language, source_file=self.path,
                          first_line=kernel_line(self.text, self.name), names=param_names(self.text, self.name))

    def marshal(self, compiled: CompiledKernel, args: tuple, memory) -> Marshalled:
        return marshal_raw(compiled, args, memory)

    def after_launch(self, prepared) -> None:
        """Nothing: CUDA C++'s device runtime (printf) is simulated in PTX."""


_LOC_LINE = re.compile(r"^(\s*)\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)$")
_INLINED_AT = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
_FILE_LINE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', re.M)
_FUNC_START = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(?:entry|func)\b")


def user_locations(ptx: str, system_dirs) -> str:
    """`ptx` with every `.loc` that points into a CUDA toolkit header (`system_dirs`: the include
    directories NVRTC is given, `externs.include_dirs`) moved to the user's line it was inlined
    at: the `.loc`'s `inlined_at` location when that is in the user's files, else the user's
    line before it in the same function (a header function inlined into another one). So `wmma::load_matrix_sync(...)` or `__float2half(x)`
    is reported, counted and drawn on the .cu line that calls it, not in `crt/mma.hpp` (the
    header's code keeps its header lines where it is not inlined into user code). Each `.loc`
    stays on its PTX line, so PTX line numbers (and ptxas's line table) do not move."""
    roots = tuple(str(d).rstrip("/") + "/" for d in system_dirs)
    system = {int(m.group(1)) for m in _FILE_LINE.finditer(ptx) if m.group(2).startswith(roots)}
    if not system:
        return ptx
    out, last = [], None
    for line in ptx.splitlines(True):
        m = _LOC_LINE.match(line)
        if m is None:
            if _FUNC_START.match(line):
                last = None
            out.append(line)
            continue
        if int(m.group(2)) not in system:
            last = m.group(2, 3, 4)
        else:
            ia = _INLINED_AT.search(m.group(5))
            where = ia.group(1, 2, 3) if ia is not None and int(ia.group(1)) not in system else last
            last = where
            if where is not None:
                line = f"{m.group(1)}.loc\t{where[0]} {where[1]} {where[2]}\n"
        out.append(line)
    return "".join(out)


def source_file(text: str) -> str:
    """A file holding `text`, named by its content, for line lookups (module doc)."""
    path = cache_dir().parent / "cuda-src" / f"{hashlib.sha256(text.encode()).hexdigest()[:24]}.cu"
    try:
        if not path.is_file() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
    except OSError:                          # no writable cache: lines come from linecache's copy below
        pass
    linecache.cache[str(path)] = (len(text), None, text.splitlines(True), str(path))
    return str(path)


def kernel_line(text: str, name: str) -> int:
    """The line of the kernel's `__global__` declaration (0 if not found)."""
    base = re.escape(name.split("<")[0].strip())
    m = re.search(r"__global__[^;{]*?\b" + base + r"\s*\(", text)
    return text.count("\n", 0, m.start()) + 1 if m else 0


def param_names(text: str, name: str) -> tuple[tuple[str, str], ...]:
    """(name, C++ type) of each parameter of the kernel's declaration, as written, with the
    template arguments of a name expression put in ("scale<float>": `T* x` -> `float* x`,
    so that an array of another element type is refused); () if not found."""
    base = re.escape(name.split("<")[0].strip())
    m = re.search(r"__global__[^;{]*?\b" + base + r"\s*\(([^)]*)\)", text)
    if m is None or not m.group(1).strip() or m.group(1).strip() == "void":
        return ()
    bound = _template_arguments(text, m.start(), name)
    out = []
    for decl in m.group(1).split(","):
        decl = decl.split("=")[0].strip()
        p = re.match(r"(.*?)([A-Za-z_]\w*)\s*(\[[^\]]*\])?$", decl, re.S)
        if p is None:
            return ()
        ctype = " ".join(p.group(1).split())
        if bound:
            ctype = re.sub(r"\b[A-Za-z_]\w*\b", lambda w: bound.get(w.group(0), w.group(0)), ctype)
        out.append((p.group(2), ctype + (p.group(3) or "")))
    return tuple(out)


def _template_arguments(text: str, kernel_at: int, name: str) -> dict[str, str]:
    """{template parameter: argument} of a name expression ("scale<float, 128>") for the
    `template <typename T, int N>` just before the kernel at `kernel_at`; {} when unknown."""
    if "<" not in name:
        return {}
    m = None
    for m in re.finditer(r"template\s*<([^<>]*)>", text[:kernel_at]):
        pass
    if m is None or text[m.end():kernel_at].strip():
        return {}
    params = [re.findall(r"[A-Za-z_]\w*", p)[-1:] for p in m.group(1).split(",")]
    args = _split_top(name[name.index("<") + 1:name.rindex(">")])
    if len(params) != len(args) or not all(params):
        return {}
    return {p[0]: a for p, a in zip(params, args)}


def _split_top(s: str) -> list[str]:
    """`s` split at the commas outside <> and ()."""
    out, depth, cur = [], 0, ""
    for ch in s:
        depth += 1 if ch in "<(" else -1 if ch in ">)" else 0
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + [cur.strip()] if cur.strip() else out


ARCH_SPECIFIC = ((9, 0),)        # compute capabilities whose presets compile for the 'a' target (module doc)


def compile_cuda(text: str, path: str, name: str, options: tuple, cc: tuple[int, int]) -> tuple[str, str]:
    """(PTX, lowered entry name) of kernel `name` in `text`, from the caches or NVRTC."""
    ptx, lowered = _compiled(text, path, name, (name,), options, cc, key_names=name)
    return ptx, lowered[0]


def compile_module(text: str, path: str, names: tuple[str, ...], options: tuple, cc: tuple[int, int],
                   what: str) -> tuple[str, tuple[str, ...]]:
    """(PTX of the whole program, the lowered name of each name expression in `names`), as a
    module compiled once for several kernels (CuPy's `RawModule(name_expressions=...)`); `what`
    names the kernel that asked, in messages. Cached as `compile_cuda` is."""
    return _compiled(text, path, what, tuple(names), options, cc, key_names=("module", tuple(names)))


def _compiled(text: str, path: str, what: str, names: tuple, options: tuple, cc: tuple[int, int],
              key_names) -> tuple[str, tuple[str, ...]]:
    arch = f"compute_{cc[0]}{cc[1]}" + ("a" if tuple(cc) in ARCH_SPECIFIC else "")
    dirs = tuple(include_dirs()) + ((str(Path(path).parent),) if path else ())
    key = repr((CACHE_FORMAT, nvrtc_version(), arch, dirs, options, path, key_names, text))
    digest = hashlib.sha256(key.encode()).hexdigest()
    with _LOCK:
        hit = _MEMORY.get(digest)
        if hit is not None:
            return hit
    disk = None if os.environ.get("GPUSIM_DISK_CACHE", "1") == "0" else cache_dir().parent / "cuda" / f"{digest}.json"
    raw = read_text_entry(disk) if disk is not None else None
    if raw is not None:
        try:
            ptx, lowered = json.loads(raw)
            hit = (ptx, tuple(lowered) if isinstance(lowered, list) else (lowered,))
        except ValueError:
            hit = None
    if hit is None:
        hit = _nvrtc(text, path, what, names, options, arch, dirs)
        if disk is not None:
            disk.parent.mkdir(parents=True, exist_ok=True)
            write_entry(disk, json.dumps([hit[0], hit[1][0] if key_names == what else list(hit[1])]))
    with _LOCK:
        _MEMORY[digest] = hit
    return hit


def _nvrtc(text: str, path: str, name: str, names: tuple, options: tuple, arch: str, dirs: tuple) \
        -> tuple[str, tuple[str, ...]]:
    try:
        from cuda.bindings import nvrtc            # lazy: a heavy optional dependency, imported on first CUDA compile
    except ImportError as e:
        raise UnsupportedKernel(f"kernel {name}: CUDA C++ needs NVRTC (cuda.bindings.nvrtc, the cuda-bindings "
                                f"package), which cannot be imported: {e}") from None
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    err, prog = nvrtc.nvrtcCreateProgram(text.encode(), (path or "kernel.cu").encode(), 0, [], [])
    if err != ok:
        raise UnsupportedKernel(f"kernel {name}: NVRTC could not take the source ({err.name})")
    try:
        for n in names:
            (err,) = nvrtc.nvrtcAddNameExpression(prog, n.encode())
        opts = [f"--gpu-architecture={arch}", "-lineinfo", *options, *(f"-I{d}" for d in dirs)]
        (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        err, n = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * n
        nvrtc.nvrtcGetProgramLog(prog, log)
        log_text = log.rstrip(b"\0 ").decode(errors="replace")
        if res != ok:
            if "__nv_name_map" in log_text and not any("__nv_name_map" not in m.group(1)
                                                       for m in _DIAG_RE.finditer(log_text)):
                raise _no_kernel(name, path, names)
            raise _compile_error(name, text, path, log_text)
        lowered = []
        for n in names:
            err, low = nvrtc.nvrtcGetLoweredName(prog, n.encode())
            if err != ok:
                raise _no_kernel(name, path, names)
            lowered.append(low.decode())
        err, n = nvrtc.nvrtcGetPTXSize(prog)
        buf = b" " * n
        nvrtc.nvrtcGetPTX(prog, buf)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return buf.rstrip(b"\0").decode(), tuple(lowered)


def _no_kernel(name: str, path: str, names: tuple = ()) -> UnsupportedKernel:
    if len(names) > 1:
        return UnsupportedKernel(f"kernel {name}: some name expression of {', '.join(names)} names no kernel that "
                                 f"{path} defines (name each as declared: \"saxpy\", or a template instance "
                                 "\"scale<float, 128>\")")
    return UnsupportedKernel(f"kernel {name}: {path} defines no kernel {name} (name it as declared: \"saxpy\", or a "
                             "template instance \"scale<float, 128>\")")


def _compile_error(name: str, text: str, path: str, log: str) -> UnsupportedKernel:
    """One line: the kernel, the .cu line with its code, NVRTC's first error message."""
    errors = [m for m in _DIAG_RE.finditer(log) if "error" in m.group(3)]
    if not errors:
        first = next((ln.strip() for ln in log.splitlines() if ln.strip()), "no message")
        e = UnsupportedKernel(f"kernel {name}: NVRTC could not compile {path}: {first}")
    else:
        m = errors[0]
        file, line, msg = m.group(1), int(m.group(2)), m.group(4).strip()
        where = path if Path(file).name == Path(path).name else file
        code = text.splitlines()[line - 1].strip() if where == path and 0 < line <= text.count("\n") + 1 else ""
        more = f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        e = UnsupportedKernel(f"kernel {name}: {where}:{line}: {msg}" + (f" [{code}]" if code else "") +
                              f" (NVRTC){more}")
    e.log = log
    return e
