"""The whole-chip spec: a frozen parts list of a GPU, with units in field names.

Issue 2 needs the launch limits; the timing units (SMs, pipelines, caches, HBM)
join here as sub-specs so that a preset reads like a parts list and a calibrated
preset can replace any number with `dataclasses.replace`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gpusim.errors import ConfigError
from gpusim.specs.limits import LaunchLimits


@dataclass(frozen=True)
class GPUSpec:
    name: str                                    # preset name, e.g. 'h100'
    marketing_name: str                          # e.g. 'NVIDIA H100 SXM5 80GB'
    compute_capability: tuple[int, int]          # PTX target sm_XY
    limits: LaunchLimits = field(default_factory=LaunchLimits)

    def __post_init__(self) -> None:
        if not self.name:
            raise ConfigError("GPUSpec.name must not be empty")
        if len(self.compute_capability) != 2:
            raise ConfigError(f"compute_capability must be (major, minor), got {self.compute_capability}")
