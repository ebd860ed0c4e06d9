"""The dispatcher the drop-in's `cuda.jit` returns (numba-cuda's `CUDADispatcher` API);
`jit` itself, the decorator, is in `_jit.py`.

The `Dispatcher`:
- launches with `kernel[grid, block(, stream(, shared_bytes))](*args)` through
  `gpusim.launch` on the preset `gpusim.cuda.set_gpu` chose (the configured launch:
  `_launching.py`); `forall(ntasks, tpb)`
  launches ceil(ntasks / tpb) blocks (tpb 0: 128 threads, where Numba asks the
  occupancy calculator);
- applies `extensions` (objects with `prepare_args(ty, val, stream=, retr=)`, last
  first) and `cuda.In/Out/InOut` argument hints (`In` is not copied back);
- records what it compiled: `overloads` (argument types -> the compiled kernel, whose
  `signature` and `ptx` Numba's tests read), `signatures`, `specialize(*args)` (a
  dispatcher fixed to those argument types), `specialized`, `inspect_asm(sig)` (the
  PTX the simulator runs);
- as a callee from device code (with or without `device=True`), it is typed through a
  Numba device dispatcher of its retargeted function (`retarget.py`).
Other attributes (`inspect_llvm`, `inspect_types`, ...) come from a Numba dispatcher of
the retargeted function compiled for the same argument types (no GPU needed).

Does not model: `inspect_sass`, `get_regs_per_thread`, launch-config-sensitive
recompilation, Numba's on-disk cache (`cache=True` is accepted and ignored).

Sources: numba-cuda 0.30 `dispatcher.py` (`CUDADispatcher`:
`__getitem__`, `forall`, `ForAll`, `specialize`, `extensions`, `_prepare_args`),
`args.py` (`In`, `Out`, `InOut`).
"""
from __future__ import annotations

import functools
import types as _pytypes
import warnings
from typing import Any

import numba.cuda
import numpy as np
from numba.core import types as _nbt
from numba.cuda import config, serialize
from numba.cuda.core import sigutils
from numba.cuda.core.errors import NumbaPerformanceWarning
from numba.cuda.errors import normalize_kernel_dimensions

from gpusim.cuda import _state
from gpusim.cuda._hostcompile import simulated_device
from gpusim.cuda._launching import _ForAll, _Launch
from gpusim.frontend.argtypes import typeof_arg
from gpusim.frontend.compile import compile_kernel, compile_types, run_noted_compiles
from gpusim.frontend.current_launch import ensure_current_launch_config
from gpusim.frontend.retarget import numba_device_dispatcher, retarget
from gpusim.frontend.sass.tools import ptxas_info
from gpusim.launch_plan import max_cooperative_grid_blocks

MISSING_LAUNCH_CONFIG = ("kernel launch configuration was not specified. Use the syntax:\n\n"
                         "kernel_function[blockspergrid, threadsperblock](arg0, arg1, ..., argn)\n\n"
                         "See https://numba.readthedocs.io/en/stable/cuda/kernels.html#kernel-invocation for help.")


def _simulated():
    return simulated_device(_state.cc())


class Dispatcher:
    """What `cuda.jit` returns: a kernel to launch with `[grid, block, stream, shared]`,
    or (`device=True`) a device function to call from kernels."""
    _gpusim_dispatcher_ = True

    def __init__(self, py_func: _pytypes.FunctionType, signatures: list | None = None, device: bool = False,
                 options: dict | None = None):
        functools.update_wrapper(self, py_func)
        self.py_func = py_func
        self.explicit_signatures = list(signatures) if signatures else None
        self.device = bool(device)
        opts = dict(options or {})
        opts.setdefault("extensions", [])
        self.targetoptions = {**opts, "device": self.device}
        self.last_result = None
        self._overloads: dict[tuple, Any] = {}
        self.specializations: dict[tuple, Dispatcher] = {}
        self._specialized = False
        self._numba_device = None
        self._shadow = None
        self._launch_config_sensitive = False     # compiles once per launch configuration (launchconfig.py)
        self._lcs_argtypes: set = set()           # argument types whose compilation was marked so

    def __reduce__(self):
        """Pickled as Numba pickles its dispatchers: the function (by value, with Numba's
        pickler) and the options; compiled code is not kept."""
        opts = {k: v for k, v in self.targetoptions.items() if k != "device"}
        return serialize.custom_reduce(type(self), dict(py_func=self.py_func, signatures=self.explicit_signatures,
                                                        device=self.device, options=opts))

    @classmethod
    def _rebuild(cls, py_func, signatures, device, options):
        return cls(py_func, signatures, device, options)

    def __repr__(self) -> str:
        kind = "device function" if self.device else "kernel"
        return f"<gpusim.cuda {kind} {self.py_func.__qualname__}>"

    # ------------------------------------------------------------------ launching
    def __getitem__(self, config: Any) -> _Launch:
        if self.device:
            raise RuntimeError(f"Cannot compile a device function as a kernel: {self.py_func.__qualname__} "
                               "is a device function; call it from a kernel")
        if not isinstance(config, tuple) or len(config) not in (2, 3, 4):
            raise ValueError("must specify at least the griddim and blockdim")
        return self.configure(*config)

    def configure(self, griddim: Any, blockdim: Any, stream: Any = 0, sharedmem: int = 0) -> _Launch:
        griddim, blockdim = normalize_kernel_dimensions(griddim, blockdim)      # Numba's 3-tuples and errors
        if config.CUDA_LOW_OCCUPANCY_WARNINGS and not config.DISABLE_PERFORMANCE_WARNINGS:
            g = griddim if isinstance(griddim, (tuple, list)) else (griddim,)
            try:
                size = int(np.prod([int(v) for v in g]))
            except (TypeError, ValueError):
                size = 128                     # a bad shape: the launch reports it
            if size < 128:                     # numba-cuda's heuristic threshold
                warnings.warn(NumbaPerformanceWarning(f"Grid size {size} will likely result in GPU "
                                                      "under-utilization due to low occupancy."))
        return _Launch(self, griddim, blockdim, stream, int(sharedmem or 0))

    def forall(self, ntasks: int, tpb: int = 0, stream: Any = 0, sharedmem: int = 0) -> _ForAll:
        if ntasks < 0:
            raise ValueError(f"Can't create ForAll with negative task count: {ntasks}")
        return _ForAll(self, ntasks, tpb, stream, sharedmem)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.device:
            raise TypeError(f"device function {self.py_func.__qualname__} can only be called from a kernel")
        raise ValueError(MISSING_LAUNCH_CONFIG)

    def _overload(self, ck: Any) -> _Overload:
        return _Overload(self, ck)

    def _launch_bound(self) -> int | None:
        """The most threads a block may have (`launch_bounds`), or None."""
        return _max_threads(self.targetoptions.get("launch_bounds"))

    def mark_launch_config_sensitive(self) -> None:
        """Mark the compilation in progress as depending on the launch configuration
        (numba-cuda's; called by compiler passes while a launch compiles)."""
        cfg = ensure_current_launch_config()
        if cfg.dispatcher is not self:
            raise RuntimeError("mark_launch_config_sensitive() must be called on the active launch configuration's "
                               "dispatcher")
        cfg._kernel_launch_config_sensitive = True

    # numba-cuda's dispatchers carry their function's code (`self.__code__ = self.func_code`):
    # its target context's `compile_subroutine(builder, dispatcher, sig)` keys on it and compiles
    # the function itself (an @intrinsic calling a device function does this)
    __code__ = property(lambda self: self.py_func.__code__)
    __closure__ = property(lambda self: self.py_func.__closure__)
    __globals__ = property(lambda self: self.py_func.__globals__)
    __defaults__ = property(lambda self: self.py_func.__defaults__)

    @property
    def extensions(self) -> list:
        return self.targetoptions["extensions"]

    # ------------------------------------------------------------------ compilation
    @property
    def overloads(self) -> dict:
        """Argument types -> compiled kernel (device functions: Numba's compile results)."""
        if self.device:
            return self._device_dispatcher().overloads
        out = {}
        if "_lazy_device_compiles" in self.__dict__:             # called from a kernel that came from disk
            run_noted_compiles(self)
        for disp in self.__dict__.get("_device_compiles", ()):   # compiled as a device function (retarget.py)
            out.update(disp.overloads)
        out.update({k: _Overload(self, ck) for k, ck in self._overloads.items()})
        return out

    @property
    def signatures(self) -> list:
        return list(self.overloads)

    @property
    def specialized(self) -> bool:
        return self._specialized

    def compile(self, sig: Any) -> Any:
        """Compile for a signature (or argument types) now; the compiled kernel."""
        argtypes, restype = sigutils.normalize_signature(sig)
        if self.device:
            return self._device_dispatcher().compile_device(tuple(argtypes), restype)
        ck = compile_types(self, tuple(argtypes), _state.cc())
        self._overloads.setdefault(ck.argtypes, ck)
        return ck

    def _compile_for_args(self, args: tuple) -> Any:
        if self._specialized and len(self._overloads) == 1:
            # numba-cuda launches a specialized dispatcher's one kernel whatever the argument types
            # (`CUDADispatcher.call`); each value is passed as the declared type asks
            return next(iter(self._overloads.values()))
        ck = compile_kernel(self, args, _state.cc())
        self._overloads.setdefault(ck.argtypes, ck)
        return ck

    def recompile(self) -> None:
        """Compile every signature compiled so far afresh, reading the globals as they are now
        (numba's `Dispatcher.recompile`; until then a launch reuses what was compiled first)."""
        sigs = list(self._overloads)
        self.__dict__.pop("_gpusim_frozen", None)
        self._overloads.clear()
        for argtypes in sigs:
            self.compile(argtypes)

    def specialize(self, *args: Any) -> Dispatcher:
        if self._specialized:
            raise RuntimeError("Dispatcher already specialized")
        key = tuple(typeof_arg(a) for a in args)
        hit = self.specializations.get(key)
        if hit is None:
            hit = Dispatcher(self.py_func, [key], self.device, self.targetoptions)
            hit.compile(key)
            hit._specialized = True
            self.specializations[key] = hit
        return hit

    def inspect_asm(self, signature: Any = None) -> Any:
        """The PTX the simulator runs, per compiled argument types (or for `signature`)."""
        if self.device:
            with simulated_device(_state.cc()):
                return self._device_dispatcher().inspect_asm(signature)
        if signature is not None:
            argtypes, _ = sigutils.normalize_signature(signature)
            return self.compile(tuple(argtypes)).ptx
        return {k: v.ptx for k, v in self.overloads.items()}

    # ------------------------------------------------------------------ kernel properties (ptxas' report)
    def _compiled_for(self, signature: Any) -> Any:
        if signature is None:
            if len(self._overloads) != 1:
                raise ValueError("signature must be given for a dispatcher with more than one overload")
            return next(iter(self._overloads.values()))
        argtypes, _ = sigutils.normalize_signature(signature)
        return self.compile(tuple(argtypes))

    def _ptxas(self, signature: Any) -> Any:
        ck = self._compiled_for(signature)
        return ck, ptxas_info(ck.ptx, ck.entry, ck.cc)

    def _per_overload(self, signature: Any, fn) -> Any:
        if signature is None and not self._specialized:          # Numba: a dict over the overloads
            return {k: fn(self._ptxas(k)) for k in self._overloads}
        return fn(self._ptxas(signature))

    def get_regs_per_thread(self, signature: Any = None) -> Any:
        return self._per_overload(signature, lambda r: int(r[1].registers_per_thread))

    def get_shared_mem_per_block(self, signature: Any = None) -> Any:
        return self._per_overload(signature, lambda r: int(r[1].shared_bytes_static))

    def get_local_mem_per_thread(self, signature: Any = None) -> Any:
        return self._per_overload(signature, lambda r: int(r[1].local_bytes))

    def get_const_mem_size(self, signature: Any = None) -> Any:
        def const_bytes(r):
            prog = r[0].program
            return int(sum(v.size_bytes for v in prog.globals if v.space == "const"))
        return self._per_overload(signature, const_bytes)

    def get_max_threads_per_block(self, signature: Any = None) -> Any:
        spec = _state.spec()
        most_block = spec.limits.max_threads_per_block

        def most(r):
            by_regs = spec.sm.registers_per_sm // max(1, r[1].registers_per_thread) // 32 * 32
            return int(min(most_block, by_regs, _max_threads(self.targetoptions.get("launch_bounds")) or most_block))
        return self._per_overload(signature, most)

    def _numba_compile_result(self, argtypes: tuple) -> Any:
        """Numba's compile result of this function for `argtypes` (typed as a device function:
        the same typing and lowering, no driver needed)."""
        if self._shadow is None:
            with _simulated():
                self._shadow = numba.cuda.jit(retarget(self.py_func), device=True)
        with _simulated():
            return self._shadow.compile_device(tuple(argtypes))

    def _device_dispatcher(self) -> Any:
        if self._numba_device is None:
            with simulated_device(_state.cc()):
                self._numba_device = numba_device_dispatcher(self)
        return self._numba_device

    @property
    def _numba_type_(self) -> Any:
        """Typing as a callee from device code (reached through another module's attribute)."""
        return _nbt.Dispatcher(self._device_dispatcher())

    def _shadow_attr(self, name: str) -> Any:
        """An attribute of a Numba (device) dispatcher of the same function, compiled for the
        same argument types as this one (`inspect_llvm`, `inspect_types`, ...)."""
        for argtypes in self._overloads:
            self._numba_compile_result(argtypes)
        attr = getattr(self._shadow, name)
        if not callable(attr):
            return attr

        def call(*a: Any, **k: Any) -> Any:
            with _simulated():
                return attr(*a, **k)
        return call

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("py_func", "targetoptions", "overloads"):
            raise AttributeError(name)
        if self.device and name in ("compile_device", "inspect_llvm", "inspect_types", "get_call_template",
                                    "nopython_signatures", "typingctx", "targetctx"):
            attr = getattr(self._device_dispatcher(), name)
            if not callable(attr):
                return attr

            def call(*a: Any, **k: Any) -> Any:
                with simulated_device(_state.cc()):
                    return attr(*a, **k)
            return call
        if name in ("inspect_llvm", "inspect_types", "get_call_template", "typingctx", "targetctx",
                    "nopython_signatures", "get_metadata", "definitions", "_cache"):
            return self._shadow_attr(name)
        raise AttributeError(f"'{type(self).__name__}' object (gpusim.cuda drop-in) has no attribute {name!r}")


class _Overload:
    """One compiled kernel as `overloads[argtypes]` shows it: gpusim's CompiledKernel (ptx,
    signature, entry, ...), and for Numba's compile-result internals (`_type_annotation`,
    `library`, ...) the same kernel compiled by a Numba dispatcher (built when first asked)."""

    def __init__(self, dispatcher: Dispatcher, ck: Any):
        self._dispatcher, self._ck = dispatcher, ck

    def __getattr__(self, name: str) -> Any:
        try:
            return getattr(self._ck, name)
        except AttributeError:
            pass
        if name == "inspect_asm":
            return lambda cc=None: self._ck.ptx
        cres = self._dispatcher._numba_compile_result(self._ck.argtypes)
        if name == "inspect_llvm":
            return lambda: cres.library.get_llvm_str()
        if name == "_codelibrary":
            return cres.library
        try:
            return getattr(cres, name[1:] if name in ("_type_annotation",) else name)
        except AttributeError:
            raise AttributeError(f"compiled kernel {self._ck.name}{self._ck.argtypes} has no attribute {name!r} "
                                 "in gpusim's drop-in (nor has Numba's compile result)") from None

    def __repr__(self) -> str:
        return f"<gpusim overload {self._ck.name}{self._ck.argtypes}>"

    @property
    def launch_config_sensitive(self) -> bool:
        return self._ck.argtypes in self._dispatcher._lcs_argtypes

    def max_cooperative_grid_blocks(self, blockdim: Any, dynsmemsize: int = 0) -> int:
        """Most blocks of `blockdim` a cooperative launch of this kernel may have on the
        simulated GPU: occupancy's blocks per SM x SMs (numba-cuda `_Kernel`; `cg.py`)."""
        return max_cooperative_grid_blocks(self._ck, _state.spec(), blockdim, dynsmemsize)


def _max_threads(launch_bounds: Any) -> int | None:
    if launch_bounds is None:
        return None
    lb = launch_bounds if isinstance(launch_bounds, (tuple, list)) else (launch_bounds,)
    return int(lb[0]) if lb else None

