"""Triton kernels as a `KernelSource` (`source.py`): `gpusim.launch(jit_fn, grid, None, args,
constexprs={"BLOCK_SIZE": 1024}, num_warps=4, num_stages=3, gpu="h100")`.

A `@triton.jit` function is compiled by Triton's own compiler with an explicit CUDA target
(`triton.compile(ASTSource(...), target=GPUTarget("cuda", XY, 32))`, no GPU and no driver
needed) for the preset's compute capability, and its PTX takes `PtxSource`'s path
(`ptxsource.ptx_kernel`, arguments as the CUDA driver passes them: `rawargs.py`).

What Triton's launcher (`triton.runtime.jit.JITFunction.run` and the CUDA driver's launcher)
does, done here on numpy arguments:
- `args` are the kernel's non-constexpr parameters in order (or all its parameters, constexprs
  included); constexpr meta-parameters come from `constexprs=` or the parameter's default;
- the signature is inferred as Triton specialises: an array is `*fp32`, `*fp16`, `*i32` ... by
  its dtype (its address is 256-byte aligned, so it carries Triton's divisibility-by-16
  attribute); a Python or numpy integer is `i32` (or `i64`/`u64` when it does not fit), equal
  to 1 a constexpr (dropped from the entry), a multiple of 16 divisible-by-16; a float is
  `fp32`; a bool `u1`. Parameters marked `do_not_specialize` are not specialised;
- the block is `num_warps * 32` threads (`block` must be None or that), the dynamic shared
  memory is the compiled kernel's `metadata.shared`, the grid a tuple of up to 3 ints or a
  callable of the meta dict (every argument by name, constexprs, num_warps, num_stages);
- the trailing global and profile scratch pointers Triton 3.x appends are passed a zeroed
  buffer of the size the metadata asks for (per program), or null when it asks for none.

Triton emits `.target sm_90a` for every Hopper kernel; PTX that uses no architecture-specific
instruction (`wgmma`, `setmaxnreg`, `tcgen05`) is retargeted to `sm_90`, which is what ptxas
assembles for the preset. An instruction the ISA does not implement is refused by the PTX
parser with its name and the Python line of the kernel. A Triton compile error is one
`UnsupportedKernel` line naming the kernel, the .py line and Triton's message.

`triton.autotune` / `triton.heuristics` wrappers (`triton_autotune.py`): heuristics are evaluated
on the meta dict; autotune configs are run one by one (`gpusim/triton_launch.py` runs them).

Triton is imported only when a Triton kernel is compiled: it is a large optional dependency
(the `triton` extra), and `is_triton` recognises its functions by their class's module.
"""
from __future__ import annotations

import copy
import inspect
import numbers
import os
import re
import threading
from functools import lru_cache

import numpy as np

from gpusim.errors import LaunchError, UnsupportedKernel
from gpusim.frontend.ptxsource import entry_params, ptx_kernel
from gpusim.frontend.rawargs import marshal_raw
from gpusim.frontend.source import CompiledKernel, Marshalled
from gpusim.frontend.triton_autotune import Config

_DTYPES = {"float32": "fp32", "float16": "fp16", "float64": "fp64", "bfloat16": "bf16", "int8": "i8",
           "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32",
           "uint64": "u64", "bool": "i1", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5"}
_SCALAR = {"i32": np.int32, "i64": np.int64, "u64": np.uint64, "fp32": np.float32, "u1": np.bool_}
_ARCH_SPECIFIC = re.compile(r"^\s*(?:@!?%\w+\s+)?(?:wgmma|setmaxnreg|tcgen05)\.", re.M)
_TARGET = re.compile(r"^(\s*\.target\s+sm_\d+)a\b", re.M)
_MEMORY: dict[tuple, tuple[str, object]] = {}
_LOCK = threading.Lock()


def is_triton(kernel) -> bool:
    """Whether `kernel` is a Triton function (`@triton.jit`, autotune or heuristics wrapped)."""
    return any(c.__module__.split(".")[0] == "triton" for c in type(kernel).__mro__)


class TritonSource:
    """One launch of a `@triton.jit` function, its arguments bound (module doc)."""
    language = "triton"

    def __init__(self, fn, args, config: Config, heuristics: list = ()) -> None:
        self.fn, self.name, self.config = fn, fn.__name__, config
        params = fn.params
        consts = dict(config.constexprs)
        unknown = set(consts) - {p.name for p in params}
        if unknown:
            raise LaunchError(f"kernel {self.name}: constexprs names {', '.join(sorted(unknown))}, which "
                              f"{self.name} does not take (its parameters: {', '.join(fn.arg_names)})")
        args = list(args)
        runtime = [p for p in params if not p.is_constexpr]
        self._all_given = len(args) == len(params)
        if self._all_given:                     # every parameter given positionally
            for p, a in zip(params, args):
                if p.is_constexpr:
                    consts.setdefault(p.name, a)
            args = [a for p, a in zip(params, args) if not p.is_constexpr]
        if len(args) != len(runtime):
            raise LaunchError(f"kernel {self.name} takes {len(runtime)} non-constexpr argument"
                              f"{'s' if len(runtime) != 1 else ''} ({', '.join(p.name for p in runtime)}) but the "
                              f"launch passed {len(args)}")
        self._runtime = tuple(p.name for p in runtime)
        self.meta = dict(zip(self._runtime, args))
        for h in heuristics:
            for k, f in h.items():
                consts[k] = f({**self.meta, **consts})
        for p in params:
            if p.is_constexpr and p.name not in consts:
                default = p._param.default
                if default is inspect.Parameter.empty:
                    raise LaunchError(f"kernel {self.name}: constexpr {p.name} has no value: pass "
                                      f"constexprs={{{p.name!r}: ...}}")
                consts[p.name] = default
        self.meta.update(consts)
        self.meta.update(num_warps=config.num_warps, num_stages=config.num_stages)
        self.signature, self.constants, self.attrs, self.values = {}, {}, {}, []
        for i, p in enumerate(params):
            if p.is_constexpr:
                self.signature[p.name] = "constexpr"
                self.constants[(i,)] = consts[p.name]
                continue
            ty, value, divisible = self._specialise(p, self.meta[p.name])
            self.signature[p.name] = ty
            if ty == "constexpr":
                self.constants[(i,)] = value
                continue
            if divisible:
                self.attrs[(i,)] = [["tt.divisibility", 16]]
            self.values.append((p.name, ty, value))
        self.file, self.first_line = _source_of(fn)
        self._keys: dict = {}                   # compute capability -> `compiled_triton`'s key

    def unbound(self) -> "TritonSource":
        """A copy holding none of this launch's arrays (None in their places: what a kept source
        must not keep alive), for `rebound`."""
        out = copy.copy(self)
        out.meta = {k: None if isinstance(v, np.ndarray) else v for k, v in self.meta.items()}
        out.values = [(n, ty, None if ty[0] == "*" else v) for n, ty, v in self.values]
        return out

    def rebound(self, args) -> "TritonSource":
        """This launch's source for another launch with arguments of the same kinds
        (`launch_template.argument_key`: every scalar the same, arrays of the same dtype, shape
        and layout, so the same specialisation): a copy holding `args`' arrays, its compiled
        kernel's key shared."""
        out = TritonSource.__new__(TritonSource)        # (a shallow copy: `copy.copy`'s protocol costs more)
        out.__dict__.update(self.__dict__)
        args = list(args)
        if self._all_given:
            args = [a for p, a in zip(self.fn.params, args) if not p.is_constexpr]
        out.meta = meta = dict(self.meta)
        meta.update(zip(self._runtime, args))
        out.values = [(n, ty, meta[n] if ty[0] == "*" else v) for n, ty, v in self.values]
        return out

    def _specialise(self, p, a) -> tuple[str, object, bool]:
        """(Triton type, value, divisible by 16) of one runtime argument, as Triton's launcher
        (`specialize_impl`) decides them."""
        t = type(a)
        if t is int or t is np.int32 or t is np.int64:      # the common scalars first (the ABC checks below cost more)
            return self._integer(p, int(a))
        if isinstance(a, np.ndarray):
            ty = _DTYPES.get(a.dtype.name)
            if ty is None:
                raise LaunchError(f"kernel {self.name}: argument {p.name} is a {a.dtype} array, which Triton has no "
                                  f"pointer type for")
            if not a.flags.c_contiguous:
                raise LaunchError(f"kernel {self.name}: argument {p.name} is a non-contiguous {a.dtype} array of shape "
                                  f"{a.shape}: the kernel addresses it by the strides you pass, so pass "
                                  f"np.ascontiguousarray(...) (or the base array and its strides)")
            return "*" + ty, a, not p.do_not_specialize_on_alignment
        if isinstance(a, (bool, np.bool_)):
            return "u1", bool(a), False
        if isinstance(a, (numbers.Integral, np.integer)):
            return self._integer(p, int(a))
        if isinstance(a, (numbers.Real, np.floating)):
            return "fp32", float(a), False
        if a is None:
            return "constexpr", None, False
        raise LaunchError(f"kernel {self.name}: argument {p.name} is {type(a).__name__} {a!r:.40}: pass a numpy "
                          "array (a pointer), an int, a float or a bool")

    @staticmethod
    def _integer(p, v: int) -> tuple[str, object, bool]:
        """`_specialise` of an integer argument `v`."""
        if v == 1 and not p.do_not_specialize:
            return "constexpr", 1, False
        ty = "i32" if -2**31 <= v < 2**31 else "u64" if 2**63 <= v < 2**64 else "i64"
        return ty, v, v % 16 == 0 and not p.do_not_specialize and not p.do_not_specialize_on_alignment

    def __repr__(self) -> str:
        return f"TritonSource({self.name}, {self.signature})"

    def grid(self, grid) -> tuple[int, int, int]:
        """The launch grid: a tuple of up to 3 ints, or a callable of the meta dict (as Triton's)."""
        g = grid(dict(self.meta)) if callable(grid) else grid
        if type(g) is tuple and 1 <= len(g) <= 3 and all(type(x) is int for x in g):
            return g + (1,) * (3 - len(g))
        if isinstance(g, (numbers.Integral, np.integer)):
            g = (g,)
        if not isinstance(g, (tuple, list)) or not 1 <= len(g) <= 3 or not all(
                isinstance(x, (numbers.Integral, np.integer)) and not isinstance(x, bool) for x in g):
            raise LaunchError(f"kernel {self.name}: the grid must be a tuple of 1 to 3 ints (or a callable of the "
                              f"meta dict returning one), got {g!r:.60}")
        return tuple(int(x) for x in g) + (1,) * (3 - len(g))

    def compiled_triton(self, cc: tuple[int, int]) -> tuple[str, object]:
        """(PTX, Triton's metadata) for compute capability `cc`, compiled once per specialisation."""
        key = self._keys.get(cc)
        if key is None:                     # (bind and compile both ask: the key is made once a launch)
            key = self._keys[cc] = (self.fn.cache_key, tuple(self.signature.items()),
                                    repr(sorted(self.constants.items())), repr(sorted(self.attrs.items())),
                                    self.config.num_warps, self.config.num_stages, self.config.maxnreg, tuple(cc))
        with _LOCK:
            hit = _MEMORY.get(key)
        if hit is None:
            hit = self._compile(cc)
            with _LOCK:
                _MEMORY[key] = hit
        return hit

    def _compile(self, cc: tuple[int, int]) -> tuple[str, object]:
        try:
            import triton                   # lazy: a large optional dependency (the `triton` extra), only for Triton kernels
            from triton.backends.compiler import GPUTarget  # triton, as above
            from triton.compiler import ASTSource  # triton, as above
        except ImportError as e:
            raise UnsupportedKernel(f"kernel {self.name}: Triton kernels need triton, which cannot be imported ({e}): "
                                    "pip install -e '.[triton]'") from None
        src = ASTSource(self.fn, dict(self.signature), constexprs=dict(self.constants), attrs=dict(self.attrs))
        try:
            options = {"num_warps": self.config.num_warps, "num_stages": self.config.num_stages}
            if self.config.maxnreg is not None:
                options["maxnreg"] = self.config.maxnreg
            k = triton.compile(src, target=GPUTarget("cuda", cc[0] * 10 + cc[1], 32), options=options)
        except Exception as e:            # Triton's CompilationError, or an error of its MLIR passes
            raise self._compile_error(e) from None
        ptx = k.asm["ptx"]
        if not _ARCH_SPECIFIC.search(ptx):      # nothing sm_90a-only: what ptxas assembles for the preset
            ptx = _TARGET.sub(r"\1", ptx)
        return ptx, k.metadata

    def _compile_error(self, e: Exception) -> UnsupportedKernel:
        msg = getattr(e, "error_message", None) or str(e).strip().splitlines()[-1:] or [type(e).__name__]
        msg = msg if isinstance(msg, str) else msg[0]
        node = getattr(e, "node", None)
        where = f"{self.file}:{self.first_line + node.lineno - 1}: " if node is not None and \
            getattr(node, "lineno", None) else ""
        return UnsupportedKernel(f"kernel {self.name}: {where}{msg.strip()} (Triton could not compile it)")

    def bind(self, spec, grid, block, shared_bytes: int) -> tuple[tuple, tuple, tuple, int]:
        """(grid, block, PTX-order arguments, dynamic shared bytes) of the launch on `spec`."""
        ptx, md = self.compiled_triton(spec.compute_capability)
        threads = self.config.num_warps * 32
        if block is not None and tuple(np.atleast_1d(block).tolist()) not in ((threads,), (threads, 1), (threads, 1, 1)):
            raise LaunchError(f"kernel {self.name}: a Triton kernel's block is num_warps * 32 = {threads} threads; "
                              f"pass block=None (got {block!r})")
        if shared_bytes:
            raise LaunchError(f"kernel {self.name}: a Triton kernel's shared memory comes from its compiled metadata "
                              f"({md.shared} bytes); pass shared_bytes=0")
        g = self.grid(grid)
        return g, (threads, 1, 1), self.arguments(md, g), int(md.shared)

    def arguments(self, md, grid: tuple) -> tuple:
        """The PTX-order arguments of a launch of `grid` (x, y, z) blocks: the runtime ones (scalars
        as their Triton types' numpy scalars), then the scratch buffers Triton's metadata `md` asks for."""
        nblocks = grid[0] * grid[1] * grid[2] * getattr(md, "num_ctas", 1)
        args = [_SCALAR[ty](v) if ty in _SCALAR else v for _, ty, v in self.values]
        for what in ("global_scratch", "profile_scratch"):
            size = getattr(md, f"{what}_size", None)
            if size is None:
                continue
            if size:
                buf = np.zeros(size * nblocks, np.uint8)
                buf.flags.writeable = False     # Triton's own scratch: nothing to copy back
                args.append(buf)
            else:
                args.append(0)                  # null, as Triton's launcher passes when none is needed
        return tuple(args)

    def compile(self, spec, args: tuple) -> CompiledKernel:
        ptx, _ = self.compiled_triton(spec.compute_capability)
        names = tuple((n, ty) for n, ty, _ in self.values)
        return ptx_kernel(ptx, self.name, self.name, spec.compute_capability, self.language, source_file=self.file,
                          first_line=self.first_line, names=names + _scratch_names(ptx, self.name, len(names)),
                          assembler=_triton_ptxas(spec.compute_capability))

    def template_key(self, spec) -> tuple:
        """What of this source a launch's plan depends on (`gpusim.launch_template`): the
        specialisation Triton compiles, for the preset's compute capability."""
        cc = spec.compute_capability
        k = self._keys.get(cc)
        if k is None:
            self.compiled_triton(cc)
            k = self._keys[cc]
        return ("triton", self.name, k)

    def marshal(self, compiled: CompiledKernel, args: tuple, memory) -> Marshalled:
        return marshal_raw(compiled, args, memory)

    def after_launch(self, prepared) -> None:
        """Nothing: Triton kernels have no device runtime gpusim must finish."""


@lru_cache(maxsize=256)
def _source_of(fn) -> tuple[str, int]:
    """(source file, first line) of a `@triton.jit` function (found once: `inspect` reads the
    file system)."""
    return (inspect.getsourcefile(fn.fn) or "",
            getattr(fn, "starting_line_number", 0) or inspect.getsourcelines(fn.fn)[1])


@lru_cache(maxsize=256)
def _scratch_names(ptx: str, entry: str, given: int) -> tuple:
    """Names of the trailing parameters Triton appends (scratch pointers)."""
    extra = len(entry_params(ptx, entry)) - given
    return (("global_scratch", "*i8"), ("profile_scratch", "*i8"))[:max(extra, 0)]


def _triton_ptxas(cc: tuple[int, int]) -> str | None:
    """The ptxas Triton assembles with for `cc` (its bundled one, or `TRITON_PTXAS_PATH`): on the
    measured machines Triton 3.6's, CUDA 12.8.93 (docs/toolchain.md)."""
    return _ptxas_for(cc, os.environ.get("TRITON_PTXAS_PATH"))


@lru_cache(maxsize=16)
def _ptxas_for(cc: tuple[int, int], env: str | None) -> str | None:
    """`_triton_ptxas` for `cc` with TRITON_PTXAS_PATH `env` (found once: Triton looks on disk)."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas  # here: triton is optional, imported with the kernel's compile
        params = inspect.signature(get_ptxas).parameters
        return (get_ptxas(cc[0] * 10 + cc[1]) if params else get_ptxas()).path    # Triton 3.6 takes the arch
    except Exception:                     # another Triton layout: gpusim's own ptxas
        return None
