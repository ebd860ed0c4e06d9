"""Point a kernel written against `gpusim.cuda` at `numba.cuda`, so Numba can type it.

Numba types `cuda.threadIdx`, `cuda.shared.array`, ... only when `cuda` *is* the
`numba.cuda` module object (numba_cuda/numba/cuda/cudadecl.py registers its
templates under `key = types.Module(cuda)`), and it calls a device function only
when the callee is a Numba `CUDADispatcher`. A program that did `from gpusim import
cuda` holds the drop-in module and drop-in dispatchers instead. `retarget(fn)`
returns a copy of `fn` (same code object, hence the same file and line numbers in
the PTX `.loc` lines) whose globals and closure cells map:

- the `gpusim.cuda` module to `numba.cuda`, its public submodules (`gpusim.cuda.random`) to
  numba-cuda's of the same name;
- every device function (a drop-in dispatcher with `device=True`, or a Numba
  device dispatcher) to a fresh `numba.cuda.jit(device=True, lineinfo=True)`
  dispatcher of its own retargeted `py_func`, recursively (self-recursion included),
  so that device code carries `.loc` lines too (`retarget(fn, lineinfo=False)`: with the
  device function's own options, for the plain compilation whose code gpusim runs).

A function that references none of these is returned unchanged. The copies are
built fresh on every call, from the globals as they are now; callers cache the PTX,
not the copies.

Does not model: references that go through another module's attribute
(`helpers.dev_fn(x)` where `helpers` is a user module) are not rewritten; the
drop-in module and dispatchers also expose `_numba_type_` so Numba can type them
there anyway. Host-side `numba.njit` functions are left as they are.

Sources: numba-cuda 0.30 `cudadecl.py` (module-keyed templates), `decorators.py`
(`jit`: eager compilation of explicit signatures through `compile_device`).
"""
from __future__ import annotations

import importlib
import types
from typing import Any

import numba.cuda
from numba import cuda
from numba.cuda.core import sigutils, typeinfer
from numba.cuda.dispatcher import CUDADispatcher

DEVICE_JIT_OPTIONS = ("inline", "forceinline", "fastmath", "opt", "debug")


def code_names(code: types.CodeType) -> set[str]:
    """Every global or attribute name a code object (and its nested code) refers to."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= code_names(c)
    return names


def is_dropin_module(v: Any) -> bool:
    return isinstance(v, types.ModuleType) and (v.__name__ == "gpusim.cuda" or v.__name__.startswith("gpusim.cuda."))


def _numba_module(name: str) -> types.ModuleType:
    """numba-cuda's module for the drop-in module `name` (`gpusim.cuda.random` ->
    `numba.cuda.random`); `numba.cuda` for the package and for modules numba-cuda lacks."""
    sub = name[len("gpusim.cuda"):]
    if sub and not sub.startswith("._"):
        try:
            return importlib.import_module("numba.cuda" + sub)
        except ImportError:
            pass
    return numba.cuda


def is_dropin_dispatcher(v: Any) -> bool:
    return getattr(type(v), "_gpusim_dispatcher_", False) is True


def is_numba_device_dispatcher(v: Any) -> bool:
    return isinstance(v, CUDADispatcher) and bool(v.targetoptions.get("device"))


def is_numba_dispatcher(v: Any) -> bool:
    return isinstance(v, CUDADispatcher)


def _needs_swap(v: Any) -> bool:
    return is_dropin_module(v) or is_dropin_dispatcher(v) or is_numba_device_dispatcher(v)


def _cell_value(cell: types.CellType) -> tuple[bool, Any]:
    try:
        return True, cell.cell_contents
    except ValueError:          # an empty cell (a name bound later in the enclosing scope)
        return False, None


class _Retargeter:
    def __init__(self, lineinfo: bool = True) -> None:
        self._lineinfo = lineinfo                            # device functions compiled with line info
        self._functions: dict[int, tuple[Any, Any]] = {}     # id(original) -> (original, copy)
        self._dispatchers: dict[int, tuple[Any, Any]] = {}   # id(original dispatcher) -> (original, numba one)
        self._pending: list[tuple[types.FunctionType, dict, tuple]] = []
        self._eager: list[tuple[Any, list]] = []

    def run(self, fn: types.FunctionType) -> types.FunctionType:
        out = self._shell(fn)
        self.finish()
        return out

    def device(self, dispatcher: Any) -> Any:
        out = self._value(dispatcher)
        self.finish()
        return out

    def finish(self) -> None:
        while self._pending:
            orig, new_globals, new_cells = self._pending.pop()
            for name in code_names(orig.__code__) & new_globals.keys():
                new_globals[name] = self._value(new_globals[name])
            for old, new in zip(orig.__closure__ or (), new_cells):
                ok, v = _cell_value(old)
                if ok:
                    new.cell_contents = self._value(v)
        for disp, sigs in self._eager:
            _compile_signatures(disp, sigs)
        self._eager.clear()

    def _shell(self, fn: types.FunctionType) -> types.FunctionType:
        """The copy of `fn` (created once per run); its references are filled in by `run`."""
        key = id(fn)
        if key in self._functions:
            return self._functions[key][1]
        refs = [fn.__globals__[n] for n in code_names(fn.__code__) if n in fn.__globals__]
        refs += [v for ok, v in map(_cell_value, fn.__closure__ or ()) if ok]
        if not any(_needs_swap(v) for v in refs):
            self._functions[key] = (fn, fn)
            return fn
        new_globals = dict(fn.__globals__)
        new_cells = tuple(types.CellType() for _ in fn.__closure__ or ())
        new = types.FunctionType(fn.__code__, new_globals, fn.__name__, fn.__defaults__, new_cells or None)
        new.__kwdefaults__ = fn.__kwdefaults__
        new.__qualname__ = fn.__qualname__
        new.__module__ = fn.__module__
        new.__doc__ = fn.__doc__
        self._functions[key] = (fn, new)
        self._pending.append((fn, new_globals, new_cells))
        return new

    def _value(self, v: Any) -> Any:
        if is_dropin_module(v):
            return _numba_module(v.__name__)
        if is_dropin_dispatcher(v):         # device=True or not: a call from device code
            return self._device(v, v.py_func, v.targetoptions, v.explicit_signatures if v.device else None)
        if is_numba_device_dispatcher(v):
            return self._device(v, v.py_func, v.targetoptions, None)
        return v

    def _device(self, orig: Any, py_func: types.FunctionType, options: dict, sigs: list | None) -> Any:
        key = id(orig)
        if key in self._dispatchers:
            return self._dispatchers[key][1]
        opts = {k: options[k] for k in DEVICE_JIT_OPTIONS if options.get(k) is not None}
        if not opts.get("debug") and self._lineinfo:
            opts["lineinfo"] = True
        disp = cuda.jit(self._shell(py_func), device=True, **opts)
        self._dispatchers[key] = (orig, disp)
        if is_dropin_dispatcher(orig) and not orig.device:     # a kernel called from device code: Numba
            orig.__dict__.setdefault("_device_compiles", []).append(disp)   # lists those compiles in its overloads
        if sigs:
            self._eager.append((disp, list(sigs)))
        return disp


def _compile_signatures(disp: Any, sigs: list) -> None:
    """What `numba.cuda.jit(sig, device=True)` does eagerly: compile each explicit
    signature, then refuse other argument types (Numba then casts at call sites)."""
    for sig in sigs:
        argtypes, restype = sigutils.normalize_signature(sig)
        with typeinfer.register_dispatcher(disp):
            disp.compile_device(argtypes, restype)
    disp.disable_compile()


def retarget(fn: types.FunctionType, lineinfo: bool = True) -> types.FunctionType:
    """`fn`, or a copy of it whose drop-in references point at numba.cuda (see module doc); with
    `lineinfo=False` its device functions keep their own options (the code a GPU runs).
    Must run where `get_current_device` answers (compile.py pretends a device)."""
    return _Retargeter(lineinfo).run(fn)


def numba_device_dispatcher(dispatcher: Any) -> Any:
    """A Numba device dispatcher for a drop-in device function (retargeted as above)."""
    return _Retargeter().device(dispatcher)
