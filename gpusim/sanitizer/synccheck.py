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
- A `.sync` collective executed by a lane its own membermask does not name ('caller
  not in membermask': `shfl_xor_sync(0xFFFF, ...)` by all 32 lanes, any collective with
  mask 0). PTX: "the behavior of shfl.sync [vote.sync, match.sync, bar.warp.sync] is
  undefined if the executing thread is not in the membermask".
- A shuffle whose source lane the reading lane's membermask does not name, whether that
  lane is active or not ('shuffle source not in membermask': lanes 0-15 running
  `shfl_sync(0xFFFF, v, 20)`). PTX: "results are undefined if a thread sources a
  register from an inactive thread or a thread that is not in membermask".

compute-sanitizer's synccheck reports the last two as "Barrier error detected. Invalid
arguments". Both are records only: the launch goes on with gpusim's defined result (a
collective computes over the lanes that execute it, whatever their masks say; a shuffle
gives the source lane's register as it stands, active or not), which hardware does not
promise (DEVIATIONS.md, "warp collectives outside their membermask"). A shuffle whose
source lane is out of range (`up`/`down` past the segment) reads its own value, as PTX
defines, and is not reported. A lane that is itself not in its membermask is reported
once, as a caller, not again for its source.

One record per instruction and kind, with the first lane found and a count of lanes.

Source: PTX ISA, "shfl.sync", "vote.sync", "match.sync", "bar.warp.sync"; NVIDIA
compute-sanitizer documentation, "Synccheck Tool"; CUDA C++ Programming Guide, "Warp
Shuffle Functions" (mask must name non-exited threads).
"""
from __future__ import annotations

import numpy as np

from gpusim.functional.collectives import unpack_lanes


class Tool:
    name = "synccheck"

    def __init__(self, san, prepared, uninitialized=()):
        self.san = san

    def batch(self, x, hooks):
        return _Batch(x, hooks)


def _lane_masks(masks, n: int) -> np.ndarray:
    """The membermask of each of `n` span lanes (a uniform value or one per lane), as uint64."""
    m = np.asarray(masks)
    m = m.astype(np.uint64) if m.dtype.kind in "ui" else m.astype(np.int64).astype(np.uint64)
    return np.broadcast_to(m & np.uint64(0xFFFFFFFF), (n,))


def _bit(masks: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return ((masks >> lane.astype(np.uint64)) & np.uint64(1)) != 0


class _Batch:
    def __init__(self, x, hooks):
        self.x = x
        self.hooks = hooks

    def members(self, op, warps: np.ndarray, membermask: np.ndarray, active: np.ndarray, lane_masks) -> None:
        x = self.x
        live = x.stacks.live_mask(warps, x.launched)
        gone = membermask & ~live & ~active
        bad = np.flatnonzero((gone != 0) & (active != 0))
        if len(bad):
            w = int(bad[0])
            lane = int(np.flatnonzero((int(gone[w]) >> np.arange(32)) & 1)[0])
            caller = int(np.flatnonzero((int(active[w]) >> np.arange(32)) & 1)[0])
            exists = (int(x.launched[warps[w]]) >> lane) & 1
            state = "has exited" if exists else "does not exist (past the block's last thread)"
            detail = (f"membermask {int(membermask[w]):#010x} names lane {lane}, which {state}; "
                      f"active mask {int(active[w]):#010x}")
            self.hooks.report("synccheck", "exited lane in membermask", "", None,
                              (self.hooks.who(int(warps[w]) * 32 + caller, op.index, "sync"),), detail, len(bad))
        act = unpack_lanes(active)
        lane = np.arange(len(act)) & 31
        lm = _lane_masks(lane_masks, len(act))
        out = np.flatnonzero(act & ~_bit(lm, lane))
        if len(out):
            k = int(out[0])
            detail = (f"lane {k & 31} executes it with membermask {int(lm[k]):#010x}, which does not name it "
                      "(undefined in PTX; compute-sanitizer: 'Invalid arguments'); gpusim computes the collective "
                      "over the lanes that execute it")
            self.hooks.report("synccheck", "caller not in membermask", "", None,
                              (self.hooks.who(int(warps[0]) * 32 + k, op.index, "sync"),), detail, len(out))

    def shuffle(self, op, src: np.ndarray, active: np.ndarray, lane_masks) -> None:
        """Shuffle lanes of the span read lane `src` of their warp (their own lane where the
        source is out of range)."""
        act = unpack_lanes(active)
        lane = np.arange(len(act)) & 31
        lm = _lane_masks(lane_masks, len(act))
        src = np.broadcast_to(np.asarray(src, np.int64), (len(act),))
        bad = np.flatnonzero(act & _bit(lm, lane) & (src != lane) & ~_bit(lm, src))
        if not len(bad):
            return
        k = int(bad[0])
        j = int(src[k])
        state = "active" if act[(k & ~31) + j] else "inactive"
        detail = (f"lane {k & 31} reads lane {j} ({state}), which its membermask {int(lm[k]):#010x} does not name "
                  "(undefined in PTX; compute-sanitizer: 'Invalid arguments'); gpusim gives that lane's register "
                  "as it stands")
        self.hooks.report("synccheck", "shuffle source not in membermask", "", None,
                          (self.hooks.who(self.x.span_w0 * 32 + k, op.index, "sync"),), detail, len(bad))
