"""Warp collectives (shfl.sync, vote.sync, activemask, match.sync, __syncwarp) and CTA
barriers (bar.sync, bar.red) of the functional core.

Collectives act on the 32 lanes of each warp of the step. A `.sync` collective's
membermask must name only lanes that are active or no longer live (exited, or past
the block's last thread): a live lane that is named but not converged with the
others would make Volta+ hardware wait for it, and cannot arrive under stack-based
reconvergence, so it is reported (`BarrierError`) rather than hung.

A lane that executes a `.sync` collective its membermask does not name, and a shuffle
reading a lane the mask does not name, are undefined in PTX; here the collective is
computed over the lanes that execute it and a shuffle gives the source lane's register
as it stands (DEVIATIONS.md; synccheck reports both, through the `members` and
`shuffle` hooks).

A CTA barrier releases when every live thread of the block waits at it. A block
whose live threads cannot all arrive (some are suspended on a divergent path, or
wait at a different barrier) is reported with the lines involved. A grid barrier
(`this_grid().sync()`; every call site counts as the same barrier, as the runtime's
counter-based grid sync does) releases when every block of the launch waits at one;
blocks at CTA barriers are released first. A block that finished without arriving
is reported as a deadlock.

`bar.warp.sync` (`cuda.syncwarp()`) inside a divergent branch, naming lanes that took
the other side and already wait at the reconvergence point (they have no code left to
run before it, so no other `bar.warp.sync` to meet): those lanes count as arrived, and
the calling lanes go on. PTX (sm_70+) makes the caller wait until the named lanes
execute a `bar.warp.sync`; those lanes cannot before reconverging, and Volta+ hardware
completes such code (numba-cuda's `cuda.Reduce` kernel calls `syncwarp()` under
`if tid < 2`). It costs nothing functionally: lanes of a warp run in lockstep here, so
memory ordering among them holds anyway. Named lanes still to run their side of the
branch are reported as before.

Source: PTX ISA, "shfl.sync", "vote.sync", "activemask", "match.sync", "bar.warp.sync",
"bar, barrier"; CUDA C++ Programming Guide, "Warp Shuffle Functions", "Synchronization Functions".
"""
from __future__ import annotations

import numpy as np
from numba import njit

from gpusim.functional import barrier_kernels

U32 = np.dtype(np.uint32)
BOOL = np.dtype(np.bool_)
FULL = np.uint32(0xFFFFFFFF)
LANE = np.arange(32, dtype=np.uint32)
GRID_KEY = -2                   # what every grid-barrier site counts as when matching a block's barriers


def _source_lanes(op, lane: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """shfl.sync's source lane for each of `lane` (int64) with operands b and c (int64, scalars or
    per lane), and whether it is in range (else a lane reads its own value): PTX ISA 9.7.8.6."""
    clamp = c & 31
    seg = (c >> 8) & 31
    maxl = (lane & seg) | (clamp & ~seg)
    minl = lane & seg
    mode = next(m for m in op.mods if m in ("up", "down", "bfly", "idx"))
    if mode == "up":
        j = lane - b
        ok = j >= maxl
    elif mode == "down":
        j = lane + b
        ok = j <= maxl
    elif mode == "bfly":
        j = lane ^ b
        ok = j <= maxl
    else:
        j = minl | (b & ~seg)
        ok = j <= maxl
    return np.where(ok, j, lane), ok


@njit(cache=True, nogil=True)
def _permute(a, j, out):
    """out[32 w + l] = a[32 w + j[l]] for every warp w of the span: a uniform shuffle's sources."""
    for w in range(0, len(out), 32):
        for lane in range(32):
            out[w + lane] = a[w + j[lane]]


def pack_lanes(bits: np.ndarray) -> np.ndarray:
    """Bool array over whole warps -> one uint32 lane mask per warp."""
    return np.packbits(bits.reshape(-1, 32), axis=1, bitorder="little").view(np.uint32).ravel()


def unpack_lanes(masks: np.ndarray) -> np.ndarray:
    """uint32 lane masks per warp -> bool array over their lanes (the masks' bytes unpacked, low
    bit first: lane 0 is bit 0 on a little-endian host, as `pack_lanes` packs them)."""
    return np.unpackbits(np.ascontiguousarray(masks, np.uint32).view(np.uint8), bitorder="little").view(np.bool_)


class Collectives:
    def __init__(self, x):
        self.x = x
        self.red_pred: np.ndarray | None = None        # bar.red predicate per lane of the batch
        self._red: bool | None = None                   # whether the kernel has a bar.red (_reductions)
        self._shfl_lanes: dict = {}                     # (op, b, c) -> a uniform shfl's (source lanes, in range)

    # ------------------------------------------------------------------ helpers
    def _check_members(self, op, membermask, active: np.ndarray, parked_ok: bool = False) -> None:
        """Every live lane named in membermask must be active in its warp (`parked_ok`:
        or, for bar.warp.sync, waiting at a reconvergence point with no code left to run
        before it, see `run`)."""
        x = self.x
        warps = x.span_warps()
        live = x.stacks.live_mask(warps, x.launched)
        if type(membermask) is np.ndarray:
            mm = np.bitwise_or.reduce(np.where(unpack_lanes(active).reshape(-1, 32), membermask.reshape(-1, 32),
                                               np.uint32(0)), axis=1)
        else:
            mm = np.uint32(membermask)
        if x.san is not None:
            x.san.members(op, warps, np.broadcast_to(mm, active.shape) & np.uint32(0xFFFFFFFF), active, membermask)
        missing = mm & live & ~active
        if parked_ok and (missing != 0).any():
            missing = missing & x.stacks.pending_lanes(warps)
        bad = np.flatnonzero((missing != 0) & (active != 0))
        if len(bad):
            w = int(bad[0])
            lane = int(np.flatnonzero(unpack_lanes(missing[w:w + 1]))[0])
            x.fail_collective(op, int(warps[w]), lane,
                              f"membermask {int(mm if np.ndim(mm) == 0 else mm[w]):#010x} names lane {lane}, which is "
                              f"live but not converged with the calling lanes (active mask {int(active[w]):#010x}); "
                              f"it would have to arrive from another path (Volta+ independent scheduling), which "
                              f"stack-based reconvergence cannot do")

    def _active(self, g) -> np.ndarray:
        """Active lane mask per warp of the span, with the guard applied."""
        x = self.x
        masks = x.span_masks
        if g is not None:
            if type(g) is np.ndarray:
                masks = masks & pack_lanes(g)
            elif not g:
                masks = np.zeros_like(masks)
        return masks

    def _whole_warps(self, active: np.ndarray) -> bool:
        """Whether every warp of the span is wholly active or wholly not (the step's own mask: as
        `BatchState.warp_runs` found it)."""
        st = self.x.state
        if active is self.x.span_masks:
            return st.m is None or st.warp_runs() is not None
        return bool(((active == FULL) | (active == 0)).all())

    def _write(self, slot, val, active_masks):
        """Write `val` to the lanes of `active_masks` (None: every active lane of the span)."""
        if slot is None:
            return
        every = active_masks is None or active_masks is self.x.span_masks     # the step's own mask: write applies it
        self.x.state.write(slot, val, None if every else unpack_lanes(active_masks))

    # ------------------------------------------------------------------ ops
    def run(self, op, g) -> None:
        x = self.x
        st = x.state
        active = self._active(g)
        vals = [f(st, x) for f in op.srcs]
        if op.kind == "syncwarp":
            self._check_members(op, vals[0], active, parked_ok=True)
            if x.san is not None:
                mm = vals[0]
                mm = np.repeat(np.broadcast_to(np.asarray(mm, np.uint32), active.shape), 32) if \
                    type(mm) is not np.ndarray else mm.astype(np.uint32)
                part = np.flatnonzero(unpack_lanes(active) & ((mm >> np.tile(LANE, len(active))) & 1).astype(bool))
                x.san.syncwarp(op, part + st.lo)
            return
        if op.kind == "activemask":
            self._write(op.dsts[0], np.repeat(active, 32), active)
            return
        if x.san is not None or not self._whole_warps(active):   # else no active warp can miss a lane
            self._check_members(op, vals[-1], active)
        if op.kind == "shfl":
            self._shfl(op, vals, active)
        elif op.kind == "vote":
            self._vote(op, vals, active)
        elif op.kind == "match":
            self._match(op, vals, active)

    def _shfl(self, op, vals, active) -> None:
        st = self.x.state
        span = st.hi - st.lo
        a, b, c = vals[0], vals[1], vals[2]
        uniform = type(b) is not np.ndarray and type(c) is not np.ndarray and self.x.san is None
        every = None if (active == FULL).all() else active          # None: every lane of the span writes
        if uniform:                                    # one source lane per lane of a warp, the same in every warp
            key = (op, int(b), int(c))
            hit = self._shfl_lanes.get(key)
            if hit is None:
                hit = self._shfl_lanes[key] = _source_lanes(op, LANE.astype(np.int64), np.int64(b), np.int64(c))
            j, ok = hit
            if type(a) is np.ndarray and a.shape[0] == span:
                d = np.empty(span, a.dtype)
                _permute(a, j, d)
            else:                                      # one value in every lane: each lane's source holds it too
                d = st.full(a, U32)
            self._write(op.dsts[0], d, every)
            if len(op.dsts) > 1:
                self._write(op.dsts[1], np.tile(np.broadcast_to(ok, (32,)), span // 32), every)
            return
        lane = np.tile(LANE, span // 32).astype(np.int64)
        j, ok = _source_lanes(op, lane, np.asarray(b, np.int64), np.asarray(c, np.int64))
        if self.x.san is not None:
            self.x.san.shuffle(op, j, active, vals[-1])
        src = (np.arange(span) & ~31) + j
        d = st.full(a, U32)[src]
        self._write(op.dsts[0], d, every)
        if len(op.dsts) > 1:
            self._write(op.dsts[1], np.broadcast_to(ok, (span,)).copy(), every)

    def _vote(self, op, vals, active) -> None:
        st = self.x.state
        span = st.hi - st.lo
        p = np.broadcast_to(np.asarray(vals[0], bool), (span,))
        bits = pack_lanes(p) & active
        if "ballot" in op.mods:
            res = np.repeat(bits, 32)
        elif "all" in op.mods:
            res = np.repeat(bits == active, 32)
        elif "any" in op.mods:
            res = np.repeat(bits != 0, 32)
        else:                                  # uni
            res = np.repeat((bits == 0) | (bits == active), 32)
        self._write(op.dsts[0], res, active)

    def _match(self, op, vals, active) -> None:
        st = self.x.state
        a = st.full(vals[0], np.asarray(vals[0]).dtype).reshape(-1, 32)
        act = unpack_lanes(active).reshape(-1, 32)
        eq = (a[:, :, None] == a[:, None, :]) & act[:, None, :]
        masks = np.packbits(eq.reshape(-1, 32), axis=1, bitorder="little").view(np.uint32).ravel()
        if "all" in op.mods:
            same = (masks.reshape(-1, 32) == np.repeat(active, 32).reshape(-1, 32)) | ~act
            allsame = same.all(axis=1)
            self._write(op.dsts[0], np.repeat(np.where(allsame, active, 0).astype(np.uint32), 32), active)
            if len(op.dsts) > 1:
                self._write(op.dsts[1], np.repeat(allsame, 32), active)
        else:
            self._write(op.dsts[0], masks, active)

    # ------------------------------------------------------------------ barriers
    def barrier_red_arrive(self, op) -> None:
        x = self.x
        st = x.state
        if self.red_pred is None:
            self.red_pred = np.zeros(x.nlanes, bool)
        p = op.pred(st, x)
        self.red_pred[st.lo:st.hi] = np.broadcast_to(np.asarray(p, bool), (st.hi - st.lo,))

    def release(self, blocked: np.ndarray, wait_at: np.ndarray, arrived: np.ndarray) -> None:
        """Release every block whose live warps all wait (called when no warp can run)."""
        x = self.x
        stacks = x.stacks
        if x.cluster_waits is None and x.grid_barriers is None and x.san is None and not self._reductions():
            if not barrier_kernels.release_blocked(blocked, wait_at, arrived, stacks.depth, stacks.pc, stacks.mask,
                                                   x.exit_only, x.launched, stacks.exited, x.wpc,
                                                   np.empty(x.nctas, np.int64)):
                return                                   # CTA barriers only: released in one compiled pass
        w = np.flatnonzero(blocked)
        if x.cluster_waits is not None:                  # cluster waits release by phase (cluster.py)
            at_cluster = np.isin(wait_at[w], x.cluster_waits)
            if at_cluster.any():
                released = x.cluster_unit().recheck()
                still = w[at_cluster][arrived[w[at_cluster]] != 0]
                w = w[~at_cluster]
                w = w[~np.isin(w // x.wpc, still // x.wpc)]     # a CTA barrier needs every warp of its block
                if not len(w):
                    if not released:
                        x.cluster_unit().deadlock()
                    return
        top = arrived[w] | stacks.lanes_at(w, x.exit_only)
        live = stacks.live_mask(w, x.launched)
        short = np.flatnonzero(top != live)
        if len(short):
            k = w[short[0]]
            missing = int(live[short[0]] & ~top[short[0]])
            lane = int(np.flatnonzero(unpack_lanes(np.array([missing], np.uint32)))[0])
            x.fail_barrier(int(k), int(wait_at[k]), lane, "divergent barrier: these threads wait at the barrier "
                           "while other live threads of their warp are on a different path and can never arrive")
        cta = w // x.wpc
        at = wait_at[w]
        grid = None
        if x.grid_barriers is not None:                  # every grid.sync() site is one barrier
            grid = np.isin(at, x.grid_barriers)
            key = np.where(grid, GRID_KEY, at)
        else:
            key = at
        first = np.full(x.nctas, -1, np.int64)
        first[cta[::-1]] = key[::-1]
        diff = np.flatnonzero(key != first[cta])
        if len(diff):
            k = w[diff[0]]
            x.fail_barrier(int(k), int(wait_at[k]), None, "threads of one block wait at different barriers "
                           f"(PTX instructions {int(wait_at[w[np.flatnonzero(cta == cta[diff[0]])[0]]])} and "
                           f"{int(wait_at[k])}); __syncthreads and this_grid().sync() must be reached by all "
                           "threads of the block at the same call")
        if grid is not None and grid.any():
            if not grid.all():                           # blocks at CTA barriers go first; the grid waits
                keep = ~grid
                w, cta, at = w[keep], cta[keep], at[keep]
            else:
                self._check_grid(w, cta)
        # Blocks whose warps have all exited but some wait would be a bug; all waiting blocks release now.
        for b in np.unique(at):
            op = x.barrier_op(int(b))
            if op is not None and op.red is not None:
                self._reduce(op, w[at == b])
        arrived[w] = 0
        if x.san is not None:
            x.san.barrier(np.unique(cta), grid is not None and bool(grid.all()))

    def _reductions(self) -> bool:
        """Whether any barrier of the kernel is a bar.red (its release computes the reduction)."""
        if self._red is None:
            self._red = any(getattr(b, "red", None) is not None for b in self.x._barriers.values())
        return self._red

    def _check_grid(self, w: np.ndarray, cta: np.ndarray) -> None:
        """Every block of the launch waits at a grid barrier: this batch must hold the whole
        grid, and no block may have finished without arriving (on a GPU the others would wait
        for it forever)."""
        x = self.x
        if x.first_block != 0 or x.nctas != x.geo.nblocks:
            x.fail_barrier(int(w[0]), int(x.wait_at[w[0]]), None,
                           f"this_grid().sync() needs all {x.geo.nblocks} blocks of the grid running at once "
                           f"(a cooperative launch), but this batch runs blocks {x.first_block} to "
                           f"{x.first_block + x.nctas - 1}; run the launch with the whole grid in one batch")
        waiting = np.zeros(x.nctas, bool)
        waiting[cta] = True
        if not waiting.all():
            gone = int(np.flatnonzero(~waiting)[0])
            x.fail_barrier(int(w[0]), int(x.wait_at[w[0]]), None,
                           f"grid barrier deadlock: block {x.geo.block_coords(x.first_block + gone)} finished "
                           "without reaching this_grid().sync(), which the other blocks wait at; every block "
                           "of a cooperative grid must reach each grid sync")

    def _reduce(self, op, warps: np.ndarray) -> None:
        x = self.x
        lanes_ok = unpack_lanes(x.stacks.live_mask(warps, x.launched)).reshape(-1, 32)
        lane_ids = (warps[:, None] * 32 + np.arange(32)).reshape(-1, 32)
        p = self.red_pred[lane_ids] & lanes_ok
        cta = warps // x.wpc
        per_cta_count = np.bincount(cta, weights=p.sum(axis=1), minlength=x.nctas).astype(np.int64)
        per_cta_live = np.bincount(cta, weights=lanes_ok.sum(axis=1), minlength=x.nctas).astype(np.int64)
        if op.red == "popc":
            val = per_cta_count[cta].astype(np.uint32)
        elif op.red == "and":
            val = per_cta_count[cta] == per_cta_live[cta]
        else:
            val = per_cta_count[cta] > 0
        x.write_warps(op.dst, warps, np.repeat(val, 32), lanes_ok.ravel())
