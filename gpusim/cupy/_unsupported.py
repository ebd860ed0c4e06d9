"""The parts of CuPy the drop-in does not run, each a stand-in that raises one
`UnsupportedKernel` line naming it and why when it is used (called, constructed, or an
attribute of it called), never an AttributeError.

Why each is out: CuPy writes the CUDA C++ of `ElementwiseKernel`, `ReductionKernel` and
`fuse` from its own code generator and headers, which are not here; cuBLAS, cuFFT,
cuSOLVER, cuSPARSE, cuRAND, cuDNN, cuTENSOR, NCCL and CUB/Thrust are NVIDIA's libraries of
precompiled kernels with no source or PTX to simulate. What CuPy hands to them is refused
too: matrix products (`dot`, `matmul` and `@`, `tensordot`, `inner`, `vdot`, `einsum`:
cuBLAS), `cupy.linalg` but `norm` (cuSOLVER and cuBLAS), `cupy.fft` (cuFFT). The rest of
CuPy's array operations run in numpy on the host (`__init__.py`); CuPy runs those with
kernels of its own, which the drop-in does not simulate either, but computes the same.
Textures and CUDA graphs have no model in the simulator.
"""
from __future__ import annotations

import numpy as np

from gpusim.errors import UnsupportedKernel

_RAW = "write the kernel in CUDA C++ as a cupy.RawKernel or RawModule, which gpusim.cupy runs"
_LIBRARY = ("a library of NVIDIA's precompiled kernels, with no source or PTX for the simulator to run; compute it "
            "with numpy on the host, or write the kernel as a cupy.RawKernel")

_BLAS = ("CuPy runs it in cuBLAS, " + _LIBRARY.replace("compute it with numpy on the host",
                                                       "compute it with numpy on the host (cupy.asnumpy(a) @ "
                                                       "cupy.asnumpy(b))"))
MATRIX_PRODUCTS = ("dot", "matmul", "tensordot", "inner", "vdot", "einsum")

WHY = {
    **{f"cupy.{f}": _BLAS for f in MATRIX_PRODUCTS},
    "cupy.ndarray.dot": _BLAS,
    "cupy.ndarray.__matmul__ (@)": _BLAS,
    "cupy.ElementwiseKernel": f"CuPy generates its CUDA C++ from its own templates and headers, not here; {_RAW}",
    "cupy.ReductionKernel": f"CuPy generates its CUDA C++ from its own templates and headers, not here; {_RAW}",
    "cupy.fuse": f"it compiles Python into CUDA C++ with CuPy's code generator, not here; {_RAW}",
    "cupy.cublas": f"cuBLAS is {_LIBRARY}",
    "cupy.linalg": f"cupy.linalg runs cuSOLVER and cuBLAS, {_LIBRARY} (cupy.linalg.norm runs in numpy)",
    "cupy.fft": f"cupy.fft runs cuFFT, {_LIBRARY}",
    "cupy.sparse": f"cupy.sparse runs cuSPARSE, {_LIBRARY}",
    "cupy.cuda.cublas": f"cuBLAS is {_LIBRARY}",
    "cupy.cuda.cufft": f"cuFFT is {_LIBRARY}",
    "cupy.cuda.cusolver": f"cuSOLVER is {_LIBRARY}",
    "cupy.cuda.cusparse": f"cuSPARSE is {_LIBRARY}",
    "cupy.cuda.curand": f"cuRAND is {_LIBRARY} (cupy.random draws with numpy's generators instead)",
    "cupy.cuda.cudnn": f"cuDNN is {_LIBRARY}",
    "cupy.cuda.cutensor": f"cuTENSOR is {_LIBRARY}",
    "cupy.cuda.nccl": f"NCCL is {_LIBRARY}",
    "cupy.cuda.thrust": f"Thrust's kernels are compiled into CuPy, {_LIBRARY}",
    "cupy.cuda.cub": f"CUB's kernels are compiled into CuPy, {_LIBRARY}",
    "cupy.cuda.texture": "texture and surface objects have no model in the simulator",
    "cupy.cuda.graph": "CUDA graphs have no model in the simulator (launches run one by one)",
    "cupy.cuda.jitify": "Jitify's header handling is not here; compile with NVRTC (jitify=False)",
}


def refuse(name: str, why: str | None = None) -> UnsupportedKernel:
    return UnsupportedKernel(f"{name} is not supported by gpusim.cupy: {why or WHY[name]}")


class Unsupported:
    """A stand-in for `name` (module doc): calling it, or calling any attribute of it, raises."""

    def __init__(self, name: str, why: str | None = None):
        self._name, self._why = name, why or WHY[name]

    def __call__(self, *args, **kwargs):
        raise refuse(self._name, self._why)

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unsupported(f"{self._name}.{attr}", self._why)

    def __repr__(self) -> str:
        return f"<{self._name}: not supported by gpusim.cupy>"


def stand_in(name: str) -> Unsupported:
    """The stand-in for a name of `WHY`."""
    return Unsupported(name)


class Linalg:
    """`cupy.linalg`: `norm` in numpy (CuPy computes it with its own reduction kernels);
    everything else refused (module doc)."""

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr == "norm":
            from gpusim.cupy._array import wrap    # a cycle: _array imports this module for its refusals

            def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002  (numpy's name)
                return wrap(np.linalg.norm(x, ord, axis, keepdims))
            return norm
        return Unsupported(f"cupy.linalg.{attr}", WHY["cupy.linalg"])

    def __repr__(self) -> str:
        return "<gpusim.cupy.linalg: norm only>"
