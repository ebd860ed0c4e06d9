"""numba-cuda's host-side libraries, running their kernels in the simulator.

`cuda.vectorize`, `cuda.guvectorize` (ufuncs and generalized ufuncs), `cuda.Reduce` /
`cuda.reduce` and `cuda.random.create_xoroshiro128p_states` are Python code in
numba-cuda that builds kernels with `cuda.jit` and moves data with `cuda.to_device`,
`cuda.device_array`, `kernel.forall`. Here each of those modules
(`numba.cuda.vectorizers`, `numba.cuda.np.ufunc.decorators`,
`numba.cuda.kernels.reduction`) is loaded once more as a private copy whose `cuda` is
the drop-in module, so the same code compiles through `gpusim.cuda.jit` and launches
in the simulator; the few places that build a `DeviceNDArray` from raw device memory
(broadcasting a ufunc argument with zero strides) make a strided view of the host copy
instead. RNG states are initialised on the CPU as numba-cuda does and put in a drop-in
device array.

Sources: numba-cuda 0.30 `vectorizers.py`, `deviceufunc.py`, `np/ufunc/decorators.py`,
`kernels/reduction.py`, `random.py`.
"""
from __future__ import annotations

import functools
import importlib.util
import sys
import types
from typing import Any

import numpy as np
from numba.cuda.core.registry import DelayedRegistry
from numba.np.ufunc import decorators as numba_decorators

from gpusim.cuda._arrays import DeviceArray, host_of


def _private_copy(name: str, alias: str) -> types.ModuleType:
    """numba-cuda's module `name` executed again as `alias`, with the drop-in's one-import
    change (`from numba import cuda` -> `from gpusim import cuda`, wherever it appears)."""
    spec = importlib.util.find_spec(name)
    mod = types.ModuleType(alias)
    mod.__file__ = spec.origin
    mod.__package__ = name.rpartition(".")[0]
    sys.modules[alias] = mod
    source = open(spec.origin).read().replace("from numba import cuda\n", "from gpusim import cuda\n")
    exec(compile(source, spec.origin, "exec"), mod.__dict__)
    return mod


def _strided(ary: Any, shape: tuple, strides: tuple) -> Any:
    h = host_of(ary)
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
    strides = tuple(strides) if isinstance(strides, (tuple, list)) else (int(strides),)
    d = DeviceArray(np.lib.stride_tricks.as_strided(h, shape, strides))   # mutable, as Numba types it
    d._gpusim_init_ = getattr(ary, "_gpusim_init_", None)                # the same memory (initcheck)
    return d


@functools.lru_cache(maxsize=None)
def _vectorizers() -> types.ModuleType:
    v = _private_copy("numba.cuda.vectorizers", "gpusim.cuda._numba_vectorizers")

    def broadcast_device(self, ary, shape):
        missing = len(shape) - ary.ndim
        strides = [0] * missing + list(ary.strides)
        for ax in range(len(shape)):
            if ax >= missing and ary.shape[ax - missing] != shape[ax]:
                strides[ax] = 0
        return _strided(ary, shape, strides)

    def broadcast_scalar_input(self, ary, shape):
        return _strided(ary, shape, (0,))

    def broadcast_add_axis(self, ary, newshape):
        return _strided(ary, newshape, (0,) + tuple(ary.strides))

    v.CUDAUFuncMechanism.broadcast_device = broadcast_device
    v.CUDAGeneralizedUFunc._broadcast_scalar_input = broadcast_scalar_input
    v.CUDAGeneralizedUFunc._broadcast_add_axis = broadcast_add_axis
    return v


@functools.lru_cache(maxsize=None)
def _decorators() -> types.ModuleType:
    v = _vectorizers()
    d = _private_copy("numba.cuda.np.ufunc.decorators", "gpusim.cuda._numba_ufunc_decorators")
    d.Vectorize.target_registry = DelayedRegistry({"cuda": v.CUDAVectorize})
    d.GUVectorize.target_registry = DelayedRegistry({"cuda": v.CUDAGUFuncVectorize})
    return d


def vectorize(*args: Any, **kwargs: Any) -> Any:
    """`numba.cuda.vectorize`: a ufunc whose kernels run in the simulator."""
    return _decorators().vectorize(*args, **kwargs)


def guvectorize(*args: Any, **kwargs: Any) -> Any:
    """`numba.cuda.guvectorize`: a generalized ufunc whose kernels run in the simulator."""
    return _decorators().guvectorize(*args, **kwargs)


@functools.lru_cache(maxsize=None)
def _reduction() -> types.ModuleType:
    return _private_copy("numba.cuda.kernels.reduction", "gpusim.cuda._numba_reduction")


def Reduce(functor: Any) -> Any:  # noqa: N802  (numba's name)
    """`numba.cuda.Reduce`: a reduction whose kernels run in the simulator."""
    return _reduction().Reduce(functor)


reduce = Reduce


def _cuda_vectorize(*args: Any, **kwargs: Any) -> Any:
    return _vectorizers().CUDAVectorize(*args, **kwargs)


def _cuda_guvectorize(*args: Any, **kwargs: Any) -> Any:
    return _vectorizers().CUDAGUFuncVectorize(*args, **kwargs)


def install_numba_targets() -> None:
    """Make `numba.vectorize(..., target="cuda")` / `numba.guvectorize(..., target="cuda")` build
    the simulator's ufuncs, as `gpusim.cuda.vectorize` does: a program that imports the drop-in
    runs its CUDA ufuncs in the simulator even where they are declared through numba's own
    decorators. (Real-GPU Numba ufuncs in the same process then simulate too.)"""
    for registry, impl in ((numba_decorators.Vectorize.target_registry, _cuda_vectorize),
                           (numba_decorators.GUVectorize.target_registry, _cuda_guvectorize)):
        registry.ondemand.pop("cuda", None)
        dict.__setitem__(registry, "cuda", impl)
