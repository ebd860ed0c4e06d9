"""GPU specs (frozen parts lists) and named presets."""
from gpusim.specs.gpu import GPUSpec
from gpusim.specs.limits import LaunchLimits
from gpusim.specs.overrides import resolve
from gpusim.specs.presets import PRESETS, describe, get

__all__ = ["GPUSpec", "LaunchLimits", "PRESETS", "get", "resolve", "describe"]
