"""Named GPU presets. Every number cites its source; variants come from
`dataclasses.replace`, never by editing a preset.

Sources:
- [H100-WP] NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 3.
- [A100-WP] NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 3.
- [V100-WP] NVIDIA Tesla V100 GPU Architecture whitepaper (2017), Table 1.
- [H200-DS] NVIDIA H200 Tensor Core GPU datasheet (2024): same GH100 die as H100 SXM5.
- [CUDA-PG] CUDA C++ Programming Guide, "Technical Specifications per Compute Capability".
"""
from __future__ import annotations

from gpusim.errors import ConfigError
from gpusim.specs.gpu import GPUSpec
from gpusim.specs.limits import LaunchLimits

H100 = GPUSpec(
    name="h100", marketing_name="NVIDIA H100 SXM5 80GB", compute_capability=(9, 0),           # [H100-WP]
    limits=LaunchLimits(max_shared_bytes_per_block_optin=227 * 1024),                         # [CUDA-PG] CC 9.0
)
H200 = GPUSpec(
    name="h200", marketing_name="NVIDIA H200 SXM 141GB", compute_capability=(9, 0),           # [H200-DS]
    limits=LaunchLimits(max_shared_bytes_per_block_optin=227 * 1024),                         # [CUDA-PG] CC 9.0
)
A100 = GPUSpec(
    name="a100", marketing_name="NVIDIA A100 SXM4 80GB", compute_capability=(8, 0),           # [A100-WP]
    limits=LaunchLimits(max_shared_bytes_per_block_optin=163 * 1024),                         # [CUDA-PG] CC 8.0
)
V100 = GPUSpec(
    name="v100", marketing_name="NVIDIA Tesla V100 SXM2 32GB", compute_capability=(7, 0),     # [V100-WP]
    limits=LaunchLimits(max_shared_bytes_per_block_optin=96 * 1024),                          # [CUDA-PG] CC 7.0
)

PRESETS: dict[str, GPUSpec] = {p.name: p for p in (H100, H200, A100, V100)}


def get(name: str | GPUSpec) -> GPUSpec:
    """The preset named `name` (case-insensitive), or `name` itself if it is a spec."""
    if isinstance(name, GPUSpec):
        return name
    try:
        return PRESETS[str(name).lower()]
    except KeyError:
        raise ConfigError(f"unknown GPU preset {name!r}; known presets: {', '.join(sorted(PRESETS))}") from None
