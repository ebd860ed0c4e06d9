"""The front-end seam: every kernel language compiles to one `CompiledKernel`.

A kernel language (Numba, a PTX file, CUDA C++ through NVRTC) is a `KernelSource`:
- `compile(spec, args)`: the kernel compiled for the GPU's compute capability and the
  launch's arguments, as a frozen `CompiledKernel`;
- `marshal(compiled, args, memory)`: the arguments placed in the simulated device memory
  and turned into the raw bytes of the entry's `.param`s (`Marshalled`), following the
  language's ABI;
- `after_launch(prepared)`: what the language's runtime does once the kernel ends (Numba:
  its runtime statistics and `debug=True` exceptions); nothing for most.

What crosses the seam downward is language-neutral: PTX text and its `.entry` name, the
compute capability, the kernel's arguments as `KernelParam`s (for messages), the source
file its `.loc` lines point into, the `.param` bytes and array ranges (`Marshalled`). The
functional core, the SASS mapping (`sass/`) and the timing model read only these; no
module below `gpusim.frontend` knows which language a kernel came from.

`CompiledKernel.program` / `.kernel` parse the PTX once, with the PTX-level runtime the
simulator supplies (`printf.py`: `vprintf`; `cg.py`: grid sync; `nrt.py`: Numba's
runtime, present only in PTX that calls it) and device functions inlined (`link.py`).
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

import numpy as np

from gpusim.frontend import cg, nrt, sass
from gpusim.frontend.link import link
from gpusim.frontend.printf import instrument as define_printf
from gpusim.frontend.rejections import isa_error
from isa.errors import IsaError
from isa.parser import parse

# PTX ISA "Kernel Function Parameter Attributes": `.param .u64 .ptr{.space}{.align N} name` says what a
# pointer parameter points to; it changes no value, so it is dropped before parsing.
PTR_ATTRIBUTE = re.compile(r"(\.param\s+\.[bu]64)\s+\.ptr(?:\s+\.(?:global|shared|const|local))?(?:\s+\.align\s+\d+)?")


@dataclass(frozen=True)
class KernelParam:
    """One argument of the kernel as its language declares it."""
    name: str                        # the parameter's name in the source ('x', 'n', 'vecadd_param_0')
    type: str                        # the language's type, as text ('array(float32, 1d, C)', '.u64')


@dataclass(frozen=True)
class StaticResources:
    """What one thread of the kernel occupies, from ptxas (or an estimate from the PTX)."""
    registers_per_thread: int
    registers_source: str            # 'ptxas' or 'ptx-estimate'
    local_bytes_per_thread: int


@dataclass(frozen=True, kw_only=True)
class CompiledKernel:
    """A kernel compiled for one compute capability (and, for typed languages, one set of
    argument types): everything below the seam needs, and nothing language-specific."""
    language: str                    # 'numba', 'ptx', 'cuda'
    name: str                        # the kernel's name in messages and reports
    ptx: str
    entry: str                       # the `.entry` name in `ptx` (mangled for C++)
    cc: tuple[int, int]
    source_file: str                 # the file the kernel's `.loc` lines point into ('' if none)
    first_line: int = 0              # line of the kernel's definition in `source_file` (0: unknown)
    params: tuple[KernelParam, ...] = ()
    link: tuple = field(default=(), compare=False)    # sources defining external device functions (externs.py)
    assembler: str | None = None     # the ptxas the language's own stack assembles with (Triton's); None: gpusim's

    def describe_arg(self, index: int) -> str:
        """'argument 2 (x)' for messages."""
        if 0 <= index < len(self.params):
            return f"argument {index} ({self.params[index].name})"
        return f"argument {index}"

    @cached_property
    def sass_ptx(self) -> str:
        """The PTX that ptxas assembles for the kernel's SASS: with Numba's runtime (NRT)
        defined as the simulator runs it (`nrt.py`; ptxas links `malloc`/`free` itself), so
        that its lines are those of the parsed program; the PTX itself otherwise."""
        return nrt.instrument(self.ptx) if nrt.uses_nrt(self.ptx) else self.ptx

    @cached_property
    def program(self):
        """The parsed PTX module (`isa.program.Program`), parsed once."""
        ptx = PTR_ATTRIBUTE.sub(r"\1", self.ptx)        # `.param .u64 .ptr .align 1 p`: a hint only
        # vprintf defined: printf writes a FIFO; grid sync; Numba's runtime (NRT) on the device heap
        text = nrt.instrument(cg.instrument(define_printf(ptx)))
        try:
            return parse(text)
        except IsaError as e:               # unreadable PTX: the source line from the text's .loc
            raise isa_error(e, self, text) from None

    @cached_property
    def cooperative(self) -> bool:
        """Whether the kernel synchronizes its whole grid (launched cooperatively, `cg.py`): found
        once (a search of the PTX text on every launch of a cached kernel otherwise)."""
        return cg.uses_grid_group(self.ptx)

    @cached_property
    def kernel(self):
        """The parsed entry (`isa.program.Kernel`), device-function calls inlined."""
        try:
            prog = self.program
            k = prog.kernels[self.entry] if self.entry in prog.kernels else prog.kernel()
            return link(prog, k, self.link)      # inline device-function calls (fp16 shims, link= code)
        except IsaError as e:
            raise isa_error(e, self) from None

    @cached_property
    def line_table(self) -> dict[int, tuple[str, int]]:
        """PTX line -> (source file, line) for every instruction of the entry with a `.loc`."""
        return {ins.ptx_line: (ins.loc.file, ins.loc.line) for ins in self.kernel.instructions if ins.loc}

    @property
    def static_resources(self) -> StaticResources:
        """Registers and local memory per thread: ptxas's numbers when it is installed, else
        an estimate from the PTX register declarations (an upper bound)."""
        key = (self.ptx, self.entry)
        with _LOCK:
            hit = _RESOURCES.get(key)
        if hit is None:
            try:
                if not sass.have_ptxas():
                    raise RuntimeError("no ptxas")
                info = sass.ptxas_info(self.ptx, self.entry, self.cc, ptxas=self.assembler)
                hit = StaticResources(info.registers_per_thread, "ptxas", info.local_bytes)
            except Exception:                    # no ptxas, or it refused this PTX: the estimate
                hit = StaticResources(sass.estimate_registers_from_ptx(self.kernel), "ptx-estimate", 0)
            with _LOCK:
                _RESOURCES[key] = hit
        return hit


_RESOURCES: dict = {}
_LOCK = threading.Lock()


@dataclass
class Marshalled:
    """A launch's arguments in device memory: the `.param` bytes and what to copy back."""
    params: dict[str, bytes]                          # PTX param name -> little-endian bytes
    copyback: list[tuple[np.ndarray, int]]            # host array (maybe a view) <- device address, after launch
    records: list[tuple[np.ndarray, np.void]] = field(default_factory=list)   # (1-element buffer, record)
    arrays: list[list[tuple[int, int]]] = field(default_factory=list)   # per argument: its arrays' (address, nbytes)
    keep: list = field(default_factory=list)          # host arrays behind captured ranges, alive until copied back

    def copy_back(self, mem) -> None:
        """Device -> host for every writable argument. A non-contiguous view is filled from
        its C-ordered device buffer through a contiguous temporary; records field by field."""
        for host, addr in self.copyback:
            if host.flags.c_contiguous or host.flags.f_contiguous:
                mem.copy_back(addr, host)
            else:
                tmp = np.empty(host.shape, host.dtype)
                mem.copy_back(addr, tmp)
                host[...] = tmp
        for buf, rec in self.records:
            for name in rec.dtype.names:
                rec[name] = buf[0][name]


@runtime_checkable
class KernelSource(Protocol):
    """A kernel in some language, ready to be compiled for a GPU (see module doc)."""
    language: str
    name: str

    def compile(self, spec, args: tuple) -> CompiledKernel: ...

    def marshal(self, compiled: CompiledKernel, args: tuple, memory) -> Marshalled: ...

    def after_launch(self, prepared) -> None: ...


_SOURCE_TYPES: dict[type, bool] = {}


def is_source(kernel: Any) -> bool:
    """Whether `kernel` is a `KernelSource` (rather than a Numba kernel or function): its class
    defines the protocol's methods and it has a name. (The protocol's own isinstance check
    walks its members on every call, tens of microseconds a launch; a class's methods are
    looked at once.)"""
    t = type(kernel)
    methods = _SOURCE_TYPES.get(t)
    if methods is None:
        methods = _SOURCE_TYPES[t] = all(callable(getattr(t, m, None)) for m in ("compile", "marshal", "after_launch"))
    return methods and hasattr(kernel, "name")
