"""Launch limits of a GPU: what CUDA refuses at launch time.

Sources: CUDA C++ Programming Guide, "Features and Technical Specifications",
Table "Technical Specifications per Compute Capability" (CUDA 12.x/13.x): max
threads per block 1024, max block dims 1024 x 1024 x 64, max grid dims
(2^31-1) x 65535 x 65535, warp size 32; shared memory per block 48 KB static and
the opt-in maximum per compute capability (7.0: 96 KB, 8.0: 163 KB, 9.0: 227 KB).
"""
from __future__ import annotations

from dataclasses import dataclass

from gpusim.errors import ConfigError
from gpusim.specs.fields import bounded, check_ranges


@dataclass(frozen=True)
class LaunchLimits:
    warp_size_threads: int = 32                    # threads per warp
    max_threads_per_block: int = bounded(1024, 32, 4096)  # threads in one block
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_shared_bytes_per_block_static: int = bounded(48 * 1024, 1, 64 * 1024 * 1024)
    max_shared_bytes_per_block_optin: int = bounded(227 * 1024, 1, 64 * 1024 * 1024)  # shared memory one block may opt in to

    def __post_init__(self) -> None:
        if self.warp_size_threads != 32:
            raise ConfigError(f"warp_size_threads must be 32 (got {self.warp_size_threads}); the SIMT core is 32 lanes wide")
        for f in ("max_threads_per_block", "max_shared_bytes_per_block_static", "max_shared_bytes_per_block_optin"):
            if getattr(self, f) <= 0:
                raise ConfigError(f"{f} must be positive (got {getattr(self, f)})")
        if self.max_shared_bytes_per_block_optin < self.max_shared_bytes_per_block_static:
            raise ConfigError("max_shared_bytes_per_block_optin must be >= max_shared_bytes_per_block_static")
        check_ranges(self)
