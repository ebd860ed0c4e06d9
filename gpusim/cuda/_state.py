"""What the drop-in's launches share: the GPU preset (`set_gpu`), the timing model on or off
(`set_timing`) and the sanitizer tools (`set_check`), process-wide, as numba-cuda's current
device is. Every other module of the drop-in reads them here.
"""
from __future__ import annotations

from gpusim import specs
from gpusim.sanitizer import normalize

_GPU: str | specs.GPUSpec = "h100"
_TIMING: bool = False
_CHECK: tuple = ()


def set_gpu(gpu: str | specs.GPUSpec) -> None:
    """Choose the preset (or a GPUSpec) that later launches run on."""
    global _GPU
    specs.get(gpu)                        # ConfigError for an unknown name
    _GPU = gpu


def get_gpu() -> str | specs.GPUSpec:
    return _GPU


def spec() -> specs.GPUSpec:
    """The GPUSpec of the chosen preset."""
    return specs.get(_GPU)


def cc() -> tuple[int, int]:
    """The chosen preset's compute capability (what Numba's device queries answer)."""
    return tuple(spec().compute_capability)


def set_timing(on: bool = True) -> None:
    """Make later launches also run the timing model (`Result.metrics['gpu__time_duration.sum']`)."""
    global _TIMING
    _TIMING = bool(on)


def timing() -> bool:
    return _TIMING


def set_check(*tools: str) -> None:
    """Run later launches under sanitizer tools (`gpusim.sanitizer`; none: off); each
    launch's findings are in `kernel.last_result.hazards`."""
    global _CHECK
    _CHECK = normalize(tools)


def check() -> tuple:
    return _CHECK
