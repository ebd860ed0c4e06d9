"""GPU specs (frozen parts lists) and named presets."""
from gpusim.specs.gpu import GPUSpec
from gpusim.specs.limits import LaunchLimits
from gpusim.specs.presets import PRESETS, get

__all__ = ["GPUSpec", "LaunchLimits", "PRESETS", "get"]
