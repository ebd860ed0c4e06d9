"""synccheck: barriers and warp collectives used where they are undefined.

- A `syncthreads` in divergent code: some live threads of a block wait at a barrier
  that others (on another path, or at another barrier) never reach. The functional
  core finds it when the block can make no progress (`BarrierError`); with synccheck
  on, the fault becomes a record ('divergent barrier') and the launch stops there.
- A `syncwarp` / `shfl_*_sync` / `vote` (`all_sync`, `any_sync`, `ballot_sync`) /
  `match` whose membermask names a lane that is live but not converged with the
  calling lanes ('non-converged lane in membermask'; a fault, as above), or a lane
  that has exited or does not exist in the block ('exited lane in membermask': the
  core tolerates it, hardware leaves it undefined; reported, the launch goes on).

Source: NVIDIA compute-sanitizer documentation, "Synccheck Tool"; CUDA C++ Programming
Guide, "Warp Shuffle Functions" (mask must name non-exited threads).
"""
from __future__ import annotations

import numpy as np


class Tool:
    name = "synccheck"

    def __init__(self, san, prepared, uninitialized=()):
        self.san = san

    def batch(self, x, hooks):
        return _Batch(x, hooks)


class _Batch:
    def __init__(self, x, hooks):
        self.x = x
        self.hooks = hooks

    def members(self, op, warps: np.ndarray, membermask: np.ndarray, active: np.ndarray) -> None:
        x = self.x
        live = x.stacks.live_mask(warps, x.launched)
        gone = membermask & ~live & ~active
        bad = np.flatnonzero((gone != 0) & (active != 0))
        if not len(bad):
            return
        w = int(bad[0])
        lane = int(np.flatnonzero((int(gone[w]) >> np.arange(32)) & 1)[0])
        caller = int(np.flatnonzero((int(active[w]) >> np.arange(32)) & 1)[0])
        exists = (int(x.launched[warps[w]]) >> lane) & 1
        state = "has exited" if exists else "does not exist (past the block's last thread)"
        detail = (f"membermask {int(membermask[w]):#010x} names lane {lane}, which {state}; "
                  f"active mask {int(active[w]):#010x}")
        self.hooks.report("synccheck", "exited lane in membermask", "", None,
                          (self.hooks.who(int(warps[w]) * 32 + caller, op.index, "sync"),), detail, len(bad))
