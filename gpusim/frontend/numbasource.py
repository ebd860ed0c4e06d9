"""Numba, the first `KernelSource` (`source.py`): a `numba.cuda.jit` kernel, a `gpusim.cuda.jit`
drop-in kernel or a plain Python function, compiled by `compile.py` and launched with
Numba's array ABI (`args.py`).

`as_source(kernel)` is how a launch reaches the seam: a `KernelSource` is itself, anything
else is taken as a Numba kernel (`compile.py` refuses what is not one).
"""
from __future__ import annotations

from typing import Any

from gpusim.frontend.args import marshal
from gpusim.frontend.compile import NumbaKernel, compile_kernel
from gpusim.frontend.kernel_exceptions import raise_if_failed
from gpusim.frontend.nrt import harvest
from gpusim.frontend.source import KernelSource, Marshalled, is_source


class NumbaSource:
    """A Numba kernel as a `KernelSource`."""
    language = "numba"

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.name = kernel_name(kernel)

    def compile(self, spec, args: tuple) -> NumbaKernel:
        return compile_kernel(self.kernel, args, cc=spec.compute_capability)

    def marshal(self, compiled: NumbaKernel, args: tuple, memory) -> Marshalled:
        return marshal(compiled, args, memory)

    def after_launch(self, prepared) -> None:
        """numba-cuda's runtime statistics (NRT kernels only); a `debug=True` kernel's exception."""
        harvest(prepared.memory, prepared.layout.symbols)
        raise_if_failed(prepared)


def kernel_name(kernel: Any) -> str:
    f = getattr(kernel, "py_func", kernel)
    return getattr(f, "__qualname__", getattr(f, "__name__", repr(kernel)))


def as_source(kernel: Any) -> KernelSource:
    """`kernel` as a `KernelSource`: itself when it is one, else a Numba kernel."""
    return kernel if is_source(kernel) else NumbaSource(kernel)
