"""The whole-chip spec: a frozen parts list of a GPU, with units in field names.

A preset (`presets/`) is one value of this type whose numbers cite their sources;
a hypothetical GPU is `dataclasses.replace` of one, or `overrides.apply(spec, {...})`
from a TOML file or `--set sm.count=64` strings. Nothing in the simulator holds a
hardware number outside a spec, so a calibrated preset can replace any number
without code changes.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpusim.errors import ConfigError
from gpusim.frontend.sass.opcodes import NEWEST_TABLE_CC, table_arch
from gpusim.specs.interconnect import NCCLSpec, NVLinkSpec, PCIeSpec, SystemSpec
from gpusim.specs.limits import LaunchLimits
from gpusim.specs.tensor import TensorSpec
from gpusim.specs.fields import bounded, check_ranges
from gpusim.specs.parts import ClockSpec, HBMSpec, L1Spec, L2Spec, LaunchSpec, NoCSpec, SMSpec


@dataclass(frozen=True)
class GPUSpec:
    name: str                                    # preset name, e.g. 'h100'
    marketing_name: str                          # e.g. 'NVIDIA H100 SXM5 80GB'
    compute_capability: tuple[int, int]          # PTX target sm_XY
    sm_count: int = bounded(132, 1, 1024)        # streaming multiprocessors
    clocks: ClockSpec = field(default_factory=ClockSpec)
    sm: SMSpec = field(default_factory=SMSpec)
    l1: L1Spec = field(default_factory=L1Spec)
    l2: L2Spec = field(default_factory=L2Spec)
    hbm: HBMSpec = field(default_factory=HBMSpec)
    noc: NoCSpec = field(default_factory=NoCSpec)
    launch: LaunchSpec = field(default_factory=LaunchSpec)
    tensor: TensorSpec = field(default_factory=TensorSpec)
    limits: LaunchLimits = field(default_factory=LaunchLimits)
    nvlink: NVLinkSpec = field(default_factory=NVLinkSpec)
    pcie: PCIeSpec = field(default_factory=PCIeSpec)
    system: SystemSpec = field(default_factory=SystemSpec)
    nccl: NCCLSpec = field(default_factory=NCCLSpec)
    source: str = ""                             # where this spec's numbers come from (preset, calibration, file)

    def __post_init__(self) -> None:
        if not self.name:
            raise ConfigError("GPUSpec.name must not be empty")
        if len(self.compute_capability) != 2:
            raise ConfigError(f"compute_capability must be (major, minor), got {self.compute_capability}")
        if table_arch(self.compute_capability) is None:
            cc = ".".join(map(str, self.compute_capability))
            raise ConfigError(f"compute_capability {cc} is newer than gpusim's SASS tables (up to "
                              f"{'.'.join(map(str, NEWEST_TABLE_CC))}: sm_70, sm_80, sm_90): its opcodes, pipes and "
                              f"latencies are not modelled (gpusim/frontend/sass/opcodes.py)")
        if not (isinstance(self.sm_count, int) and self.sm_count > 0):
            raise ConfigError(f"GPUSpec.sm_count must be a positive integer, got {self.sm_count!r} (valid range 1..1024)")
        if self.system.topology != "pcie" and self.nvlink.links == 0 and self.system.gpu_count > 1:
            raise ConfigError(f"system.topology {self.system.topology!r} joins GPUs by NVLink, but nvlink.links is 0; "
                              f"use system.topology=pcie")
        if self.system.topology == "direct" and self.system.gpu_count > 1 \
                and self.nvlink.links < self.system.gpu_count - 1:
            raise ConfigError(f"system.topology 'direct' with {self.system.gpu_count} GPUs needs at least one NVLink "
                              f"to each peer ({self.system.gpu_count - 1}); nvlink.links is {self.nvlink.links}")
        check_ranges(self)

    @property
    def cycle_ns(self) -> float:
        return 1000.0 / self.clocks.sm_clock_mhz

    @property
    def hbm_bytes_per_cycle(self) -> float:
        """HBM bandwidth in bytes per SM clock cycle."""
        return self.hbm.bandwidth_GBps / self.clocks.sm_clock_mhz * 1000.0

    def in_sm_cycles(self) -> GPUSpec:
        """This spec with the bandwidths of an L2 on its own clock (`clocks.l2_clock_mhz`: the
        slices' read and write bandwidth and the partition fabric's, per L2 cycle) restated per
        SM cycle at `clocks.sm_clock_mhz`, and `l2_clock_mhz` 0; the spec itself where the L2
        runs at the SM clock. What the timing units, the roofline and the bound read
        (timing/clock_domain.py); a second restatement changes nothing."""
        l2_mhz = self.clocks.l2_clock_mhz
        if l2_mhz <= 0:
            return self
        ratio = l2_mhz / self.clocks.sm_clock_mhz            # L2 cycles a SM cycle
        l2 = self.l2
        return replace(
            self, clocks=replace(self.clocks, l2_clock_mhz=0.0),
            l2=replace(
                l2, bandwidth_bytes_per_cycle_per_slice=l2.bandwidth_bytes_per_cycle_per_slice * ratio,
                write_bandwidth_bytes_per_cycle_per_slice=l2.write_bandwidth_bytes_per_cycle_per_slice * ratio,
                fabric_bandwidth_bytes_per_cycle=l2.fabric_bandwidth_bytes_per_cycle * ratio))
