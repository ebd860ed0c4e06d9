"""The special registers of one batch of blocks (PTX `%tid`, `%ctaid`, `%laneid`, `%warpid`,
`%smid`, the lane masks, the cluster ids; `%ntid`, `%nctaid`, `%nsmid`, the clocks, the
shared-memory sizes): per-lane ones computed over the whole batch on first read and kept,
uniform ones from the launch. `%clock`, `%clock64` and `%globaltimer` count the batch's steps
(the functional core has no time).

Sources: PTX ISA, "Special Registers".
"""
from __future__ import annotations

import numpy as np

from gpusim.errors import KernelError
from gpusim.functional.cluster import cluster_lane_values, cluster_uniform_values
from gpusim.functional.state import convert


class SpecialRegisters:
    """`x`: the batch's executor (its geometry, blocks, step count, load/store unit, lane span)."""

    def __init__(self, x, lane_arrays: dict | None = None):
        self.x = x
        # the per-lane ones computed so far: `lane_arrays` where given (the executor's batch state keeps them)
        self._lane_arrays: dict[str, np.ndarray] = {} if lane_arrays is None else lane_arrays

    def lanes(self, name: str) -> np.ndarray:
        """The per-lane special register `name` over the batch (uint32), computed on first use."""
        x = self.x
        arr = self._lane_arrays.get(name)
        if arr is None:
            lane = np.arange(x.nlanes, dtype=np.int64)
            t = lane % (x.wpc * 32)
            bx, by, _ = x.geo.block
            l31 = (lane & 31).astype(np.uint64)
            one = np.uint64(1)
            vals = {
                "%tid.x": lambda: t % bx, "%tid.y": lambda: (t // bx) % by, "%tid.z": lambda: t // (bx * by),
                "%ctaid.x": lambda: x.geo.ctaid_arrays(self._ctas())[0],
                "%ctaid.y": lambda: x.geo.ctaid_arrays(self._ctas())[1],
                "%ctaid.z": lambda: x.geo.ctaid_arrays(self._ctas())[2],
                "%laneid": lambda: lane & 31, "%warpid": lambda: t >> 5,
                "%smid": lambda: self._ctas() % x.sm_count,
                "%lanemask_eq": lambda: one << l31,
                "%lanemask_lt": lambda: (one << l31) - one,
                "%lanemask_le": lambda: (one << (l31 + one)) - one,
                "%lanemask_ge": lambda: ~((one << l31) - one),
                "%lanemask_gt": lambda: ~((one << (l31 + one)) - one),
            }
            if name not in vals:
                vals.update(cluster_lane_values(x.geo, self._ctas))
                vals.update({k: (lambda v=v: np.full(x.nlanes, v)) for k, v in cluster_uniform_values(x.geo).items()})
            if name not in vals:
                raise KernelError("unsupported special register", kernel=x.kernel_name, detail=name)
            arr = self._lane_arrays[name] = np.asarray(vals[name]()).astype(np.uint32)
        return arr

    def _ctas(self) -> np.ndarray:
        x = self.x
        lane = np.arange(x.nlanes, dtype=np.int64)
        return x.block_ids[lane // (x.wpc * 32)]

    def read(self, name: str, want: np.dtype):
        """Special register `name` as type `want`: one value, or the span's lanes."""
        x = self.x
        g = x.geo
        uniform = {
            "%ntid.x": g.block[0], "%ntid.y": g.block[1], "%ntid.z": g.block[2],
            "%nctaid.x": g.grid[0], "%nctaid.y": g.grid[1], "%nctaid.z": g.grid[2],
            "%nwarpid": 4 * 16, "%nsmid": x.sm_count, "%gridid": 1,
            "%clock": x.steps, "%clock64": x.steps, "%globaltimer": x.steps * 1000,
            "%globaltimer_lo": x.steps * 1000, "%globaltimer_hi": 0,
            "%dynamic_smem_size": x.lsu.shared_bytes, "%total_smem_size": x.lsu.shared_bytes,
            **cluster_uniform_values(g),
        }
        if name in uniform:
            return want.type(uniform[name]) if want.kind != "f" else want.type(uniform[name])
        st = x.state
        v = self.lanes(name)[st.lo:st.hi]
        return v if v.dtype == want else convert(v, want)
