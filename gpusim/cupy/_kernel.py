"""`cupy.RawModule` and `cupy.RawKernel`: CUDA C++ compiled with NVRTC as CuPy compiles it,
launched in the simulator.

Compiling: CuPy hands NVRTC the caller's options, `--std=c++17` when they name no
standard (CuPy 14 with CUDA 13, whose CCCL headers need C++17), and `-ftz=true` last.
NVRTC honours the last of repeated options, so every CuPy kernel flushes single-precision
denormals to zero, even one given `--ftz=false`; so does it here (the `.ftz` forms of the
float instructions, executed bit-exact). The architecture comes from the GPU preset
(`gpusim.cupy.set_gpu`); an `-arch` among the options goes to NVRTC as CuPy passes it, and
PTX for a target the preset's GPU cannot run (`sm_90` on an A100) is refused. `-lineinfo` is
added so reports show the .cu lines
(`gpusim.frontend.cudasource`; CuPy's own headers, `#include <cupy/...>`, are not here).
A module compiles once per architecture with all its `name_expressions`; a kernel is then
found as CuPy's `get_function` finds it: a name expression ("f<float>") by its lowered
name, else an entry of that exact name (`extern "C"`, or a mangled name), else the one
C++ kernel of that plain name. `RawModule(path=...)` loads a .ptx file (a .cubin holds
machine code for a real GPU and is refused).

Launching: `kernel(grid, block, args, shared_mem=0, stream=None)` runs `gpusim.launch`
on the preset with the timing and sanitizer choices of `gpusim.cupy` (`set_timing`, or
automatically once the program records an event; `set_check`); grid and block are padded to three dimensions with 1s and each at least 1,
as CuPy pads them; the arguments follow CuPy's rules (`_args.py`); a kernel that calls
`printf` has its output printed when it completes. Dynamic shared memory above the
per-block default (48 KiB less the kernel's static shared memory) needs
`kernel.max_dynamic_shared_size_bytes` raised first, as on a GPU. The launch's Result is
`kernel.last_result` and `gpusim.cupy.last_launch()`.

A `RawKernel` is also a `KernelSource` (`gpusim/frontend/source.py`):
`gpusim.launch(kernel, grid, block, args, ...)` runs it with any launch option.

Refused, with the reason: `backend='nvcc'` (compiled here with NVRTC only), `jitify=True`,
`translate_cucomplex=True` (CuPy's headers), `enable_cooperative_groups=True` (grid-wide
sync in CUDA C++ needs relocatable device code linked with the device runtime, which
gpusim does not link; Numba kernels' `cuda.cg.this_grid()` runs), `get_global` and
texture references.

Sources: CuPy 14 `cupy/_core/raw.pyx` (`RawKernel`, `RawModule`, kernel attributes),
`cupy/cuda/compiler.py` (`_compile_with_cache_cuda`: `-ftz=true`; name expressions),
`cupy/_core/core.pyx` (`assemble_cupy_compiler_options`: the C++ standard),
`cupy/cuda/function.pyx` (`Function.__call__`: padding of grid and block).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from gpusim import api
from gpusim.cupy import _args, _state
from gpusim.cupy._unsupported import refuse
from gpusim.errors import LaunchError, UnsupportedKernel
from gpusim.frontend import printf
from gpusim.frontend.cudasource import compile_module, kernel_line, param_names, source_file
from gpusim.frontend.ptxsource import check_target, entries, ptx_kernel, read_text
from gpusim.frontend.rawargs import marshal_raw
from gpusim.frontend.source import CompiledKernel, Marshalled
from gpusim.functional.memory import DeviceMemory
from gpusim.variable_layout import layout
from gpusim.specs import GPUSpec
from isa.demangle import pretty_name

CPP_STANDARD = "--std=c++17"        # what CuPy 14 adds when the options name no standard
FTZ = "-ftz=true"                   # what CuPy appends to every compile


def cupy_options(options) -> tuple[str, ...]:
    """The NVRTC options CuPy compiles a RawKernel/RawModule with (module doc)."""
    if isinstance(options, str) or not all(isinstance(o, str) for o in options):
        raise UnsupportedKernel(f"RawKernel/RawModule: options must be a tuple of strings, got {options!r:.80}")
    opts = tuple(options)
    if not any("-std=c++" in o for o in opts):
        opts += (CPP_STANDARD,)
    return opts + (FTZ,)


def _check_common(what: str, backend, jitify, translate_cucomplex, enable_cooperative_groups) -> None:
    if backend != "nvrtc":
        raise refuse(f"{what}(backend={backend!r})", "gpusim compiles CUDA C++ with NVRTC only; pass "
                                                     "backend='nvrtc' (CuPy's default)")
    if jitify:
        raise refuse(f"{what}(jitify=True)", "Jitify's header handling is not here; compile with NVRTC "
                                             "(jitify=False, CuPy's default)")
    if translate_cucomplex:
        raise refuse(f"{what}(translate_cucomplex=True)", "it includes CuPy's own complex headers, which are not "
                                                          "here")
    if enable_cooperative_groups:
        raise refuse(f"{what}(enable_cooperative_groups=True)",
                     "grid-wide sync in CUDA C++ needs relocatable device code linked with the CUDA device runtime "
                     "(-rdc, cudadevrt), which gpusim does not link (Numba kernels' cuda.cg.this_grid() runs)")


class RawModule:
    """CuPy's `RawModule` (module doc): CUDA C++ `code` (or a .ptx `path`) whose kernels
    `get_function(name)` returns."""

    def __init__(self, code=None, *, path=None, options=(), backend="nvrtc", translate_cucomplex=False,
                 enable_cooperative_groups=False, name_expressions=None, jitify=False):
        if (code is None) == (path is None):
            raise UnsupportedKernel("RawModule: give the CUDA C++ source as code=... or a .ptx file as path=..., "
                                    "one of the two")
        _check_common("cupy.RawModule", backend, jitify, translate_cucomplex, enable_cooperative_groups)
        if name_expressions is not None and (isinstance(name_expressions, str)
                                             or not all(isinstance(n, str) for n in name_expressions)):
            raise UnsupportedKernel(f"RawModule: name_expressions must be a sequence of strings "
                                    f"(\"f<float>\"), got {name_expressions!r:.80}")
        self.code, self.file_path, self.backend = code, path, backend
        self.options = tuple(options) if not isinstance(options, str) else options
        self.name_expressions = tuple(name_expressions) if name_expressions else None
        self.enable_cooperative_groups = False
        self._options = cupy_options(options) if code is not None else ()
        if path is not None:
            p = os.fspath(path)
            if not p.endswith(".ptx"):
                raise refuse(f"cupy.RawModule(path={p!r})", "a .cubin or .fatbin holds machine code for a real GPU; "
                                                            "gpusim runs PTX: load the .ptx, or pass the CUDA C++ as "
                                                            "code=")
            if not os.path.isfile(p):
                raise UnsupportedKernel(f"RawModule: no file {p} (path= names a .ptx file)")
            self._text, self._path = read_text(Path(p), "RawModule")
        else:
            if not isinstance(code, str):
                raise UnsupportedKernel(f"RawModule: code must be the CUDA C++ source text, got "
                                        f"{type(code).__name__}")
            self._text, self._path = code, source_file(code)
        self._ptx: dict[tuple[int, int], tuple[str, tuple[str, ...]]] = {}
        self._kernels: dict[str, RawKernel] = {}

    def __repr__(self) -> str:
        return f"<gpusim.cupy RawModule {self.file_path or self._path}>"

    def compile(self, log_stream=None) -> None:
        """Compile now, for the preset's architecture (else at the first launch)."""
        self._module_ptx(tuple(_state.spec().compute_capability), "the module")

    def get_function(self, name: str) -> RawKernel:
        """The kernel `name`: a name expression, an `extern "C"` or mangled name (module doc)."""
        if not isinstance(name, str):
            raise UnsupportedKernel(f"RawModule.get_function takes the kernel's name (a string), got {name!r}")
        k = self._kernels.get(name)
        if k is None:
            k = self._kernels[name] = RawKernel._of_module(self, name)
        return k

    def get_global(self, name):
        raise refuse("cupy.RawModule.get_global", "module-scope __device__ variables are placed anew for each "
                                                  "launch; pass the data as a kernel argument")

    def get_texref(self, name):
        raise refuse("cupy.RawModule.get_texref", "texture references have no model in the simulator")

    # ------------------------------------------------------------------ compiling
    def _module_ptx(self, cc: tuple[int, int], what: str) -> tuple[str, tuple[str, ...]]:
        hit = self._ptx.get(cc)
        if hit is None:
            if self.code is None:
                hit = (self._text, ())
            else:
                hit = compile_module(self._text, self._path, self.name_expressions or (), self._options, cc, what)
            self._ptx[cc] = hit
        return hit

    def _entry(self, ptx: str, lowered: tuple[str, ...], name: str) -> str:
        names = self.name_expressions or ()
        if name in names:
            return lowered[names.index(name)]
        found = entries(ptx)
        if name in found:
            return name
        plain = [e for e in found if pretty_name(e) == name]
        if len(plain) == 1:
            return plain[0]
        listed = ", ".join(sorted(found)) or "none"
        hint = (f"; several are named {name}: give the mangled name or a name expression" if plain else
                "; a template instance needs name_expressions=(\"f<float>\",) and get_function(\"f<float>\")")
        raise UnsupportedKernel(f"kernel {name}: the module defines no kernel {name} (its kernels: {listed}){hint}")

    def _compiled(self, name: str, spec) -> CompiledKernel:
        cc = tuple(spec.compute_capability)
        ptx, lowered = self._module_ptx(cc, name)
        check_target(ptx, name, cc, spec.name)            # a .ptx file's, or an -arch option's target
        entry = self._entry(ptx, lowered, name)
        if self.code is None:
            return ptx_kernel(ptx, entry, name, cc, "ptx")
        plain = name if not name.startswith("_Z") else pretty_name(entry).split("::")[-1]
        return ptx_kernel(ptx, entry, name, cc, "cuda", source_file=self._path,
                          first_line=kernel_line(self._text, plain), names=param_names(self._text, plain))


class RawKernel:
    """CuPy's `RawKernel(code, name, options=(), ...)` (module doc): a kernel to call as
    `kernel(grid, block, args, shared_mem=0)`."""
    language = "cuda"

    def __init__(self, code, name, options=(), backend="nvrtc", *, translate_cucomplex=False,
                 enable_cooperative_groups=False, jitify=False):
        if not isinstance(name, str) or not name.strip():
            raise UnsupportedKernel(f"RawKernel: the kernel is named by a string, got {name!r}")
        _check_common("cupy.RawKernel", backend, jitify, translate_cucomplex, enable_cooperative_groups)
        self._init(RawModule(code=code, options=options), name.strip())

    @classmethod
    def _of_module(cls, module: RawModule, name: str) -> RawKernel:
        k = cls.__new__(cls)
        k._init(module, name)
        return k

    def _init(self, module: RawModule, name: str) -> None:
        self.module, self.name = module, name
        self.code, self.options, self.backend = module.code, module.options, module.backend
        self.file_path = module.file_path
        self.enable_cooperative_groups = False
        self.last_result = None
        self._compiled_for: dict[tuple[int, int], CompiledKernel] = {}
        self._max_dynamic: int | None = None

    def __repr__(self) -> str:
        return f"<gpusim.cupy RawKernel {self.name}>"

    # ------------------------------------------------------------------ KernelSource
    def compile(self, spec=None, args: tuple = (), log_stream=None) -> CompiledKernel | None:
        """Two callers: CuPy's `kernel.compile(log_stream=None)` compiles now for the preset
        (returns None); the KernelSource's `compile(spec, args)` returns the CompiledKernel."""
        if not isinstance(spec, GPUSpec):
            self._compiled_kernel(_state.spec())
            return None
        return self._compiled_kernel(spec)

    def _compiled_kernel(self, spec) -> CompiledKernel:
        cc = tuple(spec.compute_capability)
        ck = self._compiled_for.get(cc)
        if ck is None:
            ck = self._compiled_for[cc] = self.module._compiled(self.name, spec)
        return ck

    def marshal(self, compiled: CompiledKernel, args: tuple, memory) -> Marshalled:
        return marshal_raw(compiled, _args.convert(compiled, tuple(args)), memory)

    def after_launch(self, prepared) -> None:
        """Nothing: CUDA C++'s device runtime (printf) is simulated in PTX."""

    # ------------------------------------------------------------------ attributes
    def _static_shared(self, spec) -> int:
        ck = self._compiled_kernel(spec)
        return int(layout(ck.program, ck.kernel, DeviceMemory()).static_shared_bytes)

    @property
    def num_regs(self) -> int:
        """Registers per thread (ptxas's, else an estimate from the PTX)."""
        return self._compiled_kernel(_state.spec()).static_resources.registers_per_thread

    @property
    def local_size_bytes(self) -> int:
        return self._compiled_kernel(_state.spec()).static_resources.local_bytes_per_thread

    @property
    def shared_size_bytes(self) -> int:
        """Static shared memory per block."""
        return self._static_shared(_state.spec())

    @property
    def max_threads_per_block(self) -> int:
        return _state.spec().limits.max_threads_per_block

    @property
    def attributes(self) -> dict:
        return {"max_threads_per_block": self.max_threads_per_block, "shared_size_bytes": self.shared_size_bytes,
                "local_size_bytes": self.local_size_bytes, "num_regs": self.num_regs,
                "max_dynamic_shared_size_bytes": self.max_dynamic_shared_size_bytes}

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        """Dynamic shared memory a launch may ask for (CUDA's default: 48 KiB less the static)."""
        if self._max_dynamic is not None:
            return self._max_dynamic
        spec = _state.spec()
        return max(spec.limits.max_shared_bytes_per_block_static - self._static_shared(spec), 0)

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value: int) -> None:
        spec = _state.spec()
        most = spec.limits.max_shared_bytes_per_block_optin - self._static_shared(spec)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
            raise LaunchError(f"kernel {self.name}: max_dynamic_shared_size_bytes must be an int in 0..{most} on "
                              f"{spec.name} (its {spec.limits.max_shared_bytes_per_block_optin}-byte opt-in limit less "
                              f"the kernel's static shared memory), got {value!r} (CUDA_ERROR_INVALID_VALUE)")
        self._max_dynamic = int(value)

    # ------------------------------------------------------------------ launching
    def __call__(self, grid, block, args, *, shared_mem=0, stream=None, enable_cooperative_groups=False):
        if enable_cooperative_groups:
            _check_common("cupy.RawKernel.__call__", "nvrtc", False, False, True)
        g, b = _dims(self.name, "grid", grid), _dims(self.name, "block", block)
        if not isinstance(args, (tuple, list)):
            raise LaunchError(f"kernel {self.name}: args must be a tuple of the kernel's arguments, got "
                              f"{type(args).__name__} {args!r:.60}")
        if isinstance(shared_mem, bool) or not isinstance(shared_mem, int) or shared_mem < 0:
            raise LaunchError(f"kernel {self.name}: shared_mem must be a number of bytes (an int >= 0), got "
                              f"{shared_mem!r}")
        spec = _state.spec()
        ck = self._compiled_kernel(spec)
        if shared_mem > self.max_dynamic_shared_size_bytes:
            raise LaunchError(f"kernel {self.name}: shared_mem={shared_mem} bytes of dynamic shared memory is more "
                              f"than the {self.max_dynamic_shared_size_bytes} it may use on {spec.name}; raise "
                              f"kernel.max_dynamic_shared_size_bytes to {shared_mem} first, as on a GPU "
                              f"(cudaFuncAttributeMaxDynamicSharedMemorySize; CUDA_ERROR_INVALID_VALUE)")
        args = tuple(args)
        st = _state.STATE
        if printf.uses_printf(ck.ptx) and not st.check:
            result = self._launch_printing(g, b, args, shared_mem, spec)
        else:
            result = api.launch(self, g, b, args, gpu=spec, timing=_state.timing(), shared_bytes=shared_mem,
                                check=st.check or None)
        self.last_result = result
        _state.record(result)

    def _launch_printing(self, g, b, args, shared_mem, spec):
        """Run the launch, then print what the kernel printed (as CUDA prints at completion),
        even when it then fails."""
        prepared = api.prepare(self, g, b, args, spec, shared_mem)
        try:
            return api._run(prepared, _state.timing(), api.BATCH_LANES, None, None)
        finally:
            text = printf.lines(prepared.memory, prepared.layout.symbols)
            if text:
                sys.stdout.write(text)
                sys.stdout.flush()


def _dims(name: str, what: str, dims) -> tuple[int, int, int]:
    """`dims` padded to three with 1s, each at least 1 (CuPy's `Function.__call__`)."""
    d = (dims,) if not isinstance(dims, (tuple, list)) else tuple(dims)
    if not 1 <= len(d) <= 3 or any(isinstance(v, bool) or not hasattr(v, "__index__") for v in d):
        raise LaunchError(f"kernel {name}: {what} must be a tuple of 1 to 3 ints, got {dims!r}")
    d = tuple(max(1, int(v)) for v in d)
    return (d + (1, 1))[:3]
