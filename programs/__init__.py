"""The program library: one GPU kernel per module, each a `ProgramSpec` named
`PROGRAM` (see `programs/base.py` for the contract).

    from programs import PROGRAMS, get, load_file
    case = get("reduce_sequential").case("default")      # fresh inputs, seed 0
    case.kernel[case.grid, case.block, 0, case.shared_bytes](*case.args)
    case.check()

`PROGRAMS` maps name -> ProgramSpec for every module of this package that defines
PROGRAM (modules whose name starts with "_" are helpers and skipped), sorted by
name. `load_file(path)` imports a user's own Python file defining PROGRAM.
"""
from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path

from programs.base import Case, ProgramSpec

__all__ = ["PROGRAMS", "Case", "ProgramSpec", "get", "load_file"]


def _discover() -> dict[str, ProgramSpec]:
    found: dict[str, ProgramSpec] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        spec = getattr(module, "PROGRAM", None)
        if spec is None:
            continue
        if not isinstance(spec, ProgramSpec):
            raise TypeError(f"programs/{info.name}.py: PROGRAM is a {type(spec).__name__}, "
                            f"not a ProgramSpec")
        if spec.name != info.name:
            raise ValueError(f"programs/{info.name}.py: PROGRAM.name is {spec.name!r}; "
                             f"it must equal the module name {info.name!r}")
        found[spec.name] = spec
    return dict(sorted(found.items()))


PROGRAMS: dict[str, ProgramSpec] = _discover()


def get(name: str) -> ProgramSpec:
    """The program called `name`; KeyError listing the available names otherwise."""
    try:
        return PROGRAMS[name]
    except KeyError:
        raise KeyError(f"no program named {name!r}; available: {', '.join(PROGRAMS)}") from None


def load_file(path: str | Path) -> ProgramSpec:
    """Import the Python file at `path` and return the ProgramSpec it defines as
    PROGRAM. The file uses `from numba import cuda` and `@cuda.jit` like the modules
    of this package (and may import `programs.base`). A CUDA C++ file (`.cu`) is run through
    the Python file of the same name beside it, which defines its PROGRAM (the kernels are
    `gpusim.CudaSource`s of the .cu: docs/examples/transpose_cuda.py)."""
    path = Path(path).resolve()
    if path.suffix == ".cu":
        sidecar = path.with_suffix(".py")
        if not sidecar.is_file():
            raise FileNotFoundError(f"load_file: {path.name} is CUDA C++; its PROGRAM (inputs, launch, numpy "
                                    f"reference) goes in {sidecar.name} beside it, which defines PROGRAM = "
                                    "ProgramSpec(...) with gpusim.CudaSource kernels (docs/examples/transpose_cuda.py)")
        path = sidecar
    if not path.is_file():
        raise FileNotFoundError(f"load_file: no such file: {path}")
    module_name = f"programs._user_{path.stem}_{abs(hash(str(path))):x}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"load_file: cannot import {path} (not a Python file?)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module          # numba and dataclasses look modules up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    program = getattr(module, "PROGRAM", None)
    if not isinstance(program, ProgramSpec):
        del sys.modules[module_name]
        found = "nothing" if program is None else f"a {type(program).__name__}"
        raise TypeError(f"load_file: {path} must define PROGRAM = ProgramSpec(...); "
                        f"found {found}")
    return program
