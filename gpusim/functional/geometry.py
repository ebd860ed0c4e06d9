"""A launch's shape: grid, block and thread-block cluster dimensions, and the block and
thread coordinates of linear ids (blocks in cluster order when the launch has clusters).

Sources: CUDA C++ Programming Guide, "Thread Hierarchy" and "Thread Block Clusters"; PTX ISA,
"Special Registers" (%ctaid, %cluster_ctarank).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Geometry:
    """A launch's shape. With thread-block clusters (`cluster` != (1, 1, 1)) a block's linear id
    counts in cluster order: the blocks of cluster c are c * cluster_size .. + cluster_size - 1,
    rank r = x + y cx + z cx cy within it, clusters numbered x-fastest over the grid of clusters;
    so the blocks of a cluster are consecutive and a batch of whole clusters holds them all."""
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    cluster: tuple[int, int, int] = (1, 1, 1)
    cluster_explicit: bool = False          # launched with clusters (%is_explicit_cluster)

    @property
    def cluster_size(self) -> int:
        return self.cluster[0] * self.cluster[1] * self.cluster[2]

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // 32)

    @property
    def nblocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def block_coords(self, linear: int) -> tuple[int, int, int]:
        x, y, z = self.ctaid_arrays(np.array([linear], np.int64))
        return (int(x[0]), int(y[0]), int(z[0]))

    def ctaid_arrays(self, linear: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """%ctaid.x, .y, .z of the blocks of linear ids `linear` (class docstring)."""
        gx, gy, _ = self.grid
        if self.cluster == (1, 1, 1):
            return linear % gx, (linear // gx) % gy, linear // (gx * gy)
        cx, cy, cz = self.cluster
        c, r = linear // self.cluster_size, linear % self.cluster_size
        nx, ny = gx // cx, gy // cy
        return ((c % nx) * cx + r % cx, ((c // nx) % ny) * cy + (r // cx) % cy, (c // (nx * ny)) * cz + r // (cx * cy))

    def thread_coords(self, linear: int) -> tuple[int, int, int]:
        bx, by, _ = self.block
        return (linear % bx, (linear // bx) % by, linear // (bx * by))
