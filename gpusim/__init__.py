"""gpusim: a GPU architecture simulator with an executable reference.

    import gpusim
    result = gpusim.launch(kernel, grid, block, args, gpu="h100")
    result.metrics["smsp__inst_executed.sum"]

Layers: `isa` (what a PTX program means) <- `gpusim` (executing it; timing in
issue 3) <- `programs`, `validate`, `notebooks`. `from gpusim import cuda` is a
drop-in for `numba.cuda` that runs kernels here (`gpusim.cupy`: for CuPy).
"""
import importlib
import isa  # noqa: F401  (first: numba's disk cache stamped by import closure, `isa.numba_cache`)
from gpusim.api import launch, prepare
from gpusim.frontend.cudasource import CudaSource
from gpusim.frontend.ptxsource import PtxSource
from gpusim.frontend.tensormap import TensorMap
from gpusim.errors import (BarrierError, ConfigError, GpusimError, KernelError, LaunchError, MemoryAccessError,
                           UnsupportedKernel)
from gpusim.multi import System
from gpusim.result import LineStats, Result
from gpusim.specs import PRESETS, GPUSpec
from gpusim import sweep                     # gpusim.sweep(...) runs a design-space sweep (a callable module)

__all__ = ["launch", "prepare", "CudaSource", "PtxSource", "TensorMap", "sweep", "System", "Result", "LineStats", "GPUSpec", "PRESETS", "GpusimError", "LaunchError", "KernelError",
           "MemoryAccessError", "BarrierError", "ConfigError", "UnsupportedKernel"]
__version__ = "0.1.0"


def __getattr__(name: str):
    """`gpusim.cuda` and `gpusim.cupy`, the drop-ins, on first use: they sit above `gpusim.api`
    (which this module imports) and are not loaded by `import gpusim`; `from gpusim import cuda`
    imports the submodule itself."""
    if name in ("cuda", "cupy"):
        return importlib.import_module(f"gpusim.{name}")
    raise AttributeError(f"module 'gpusim' has no attribute {name!r}")
