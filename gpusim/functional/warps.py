"""Per-warp SIMT reconvergence stacks, held as arrays over all warps of a batch.

Each warp owns a stack of entries (pc, reconvergence pc, active mask); the top entry
is what the warp runs next. This is the classic immediate-post-dominator (IPDOM)
stack of pre-Volta NVIDIA GPUs and of GPGPU-Sim:

- a uniform branch moves the top entry's pc;
- a divergent branch at block B turns the top entry into the reconvergence entry
  (pc = ipdom(B)) and pushes the not-taken then the taken side, each with
  reconvergence pc ipdom(B): the taken side runs first;
- an entry whose pc reaches its reconvergence pc, or whose mask becomes empty
  (its lanes exited), is popped, so the side below runs, and finally the
  reconvergence entry with the lanes of both sides;
- exiting lanes are cleared from every entry of their warp.

Masks are 32-bit integers (bit i = lane i). All updates are vectorized over the
warps taking a step together.

Differences from Volta+ independent thread scheduling (ITS): on Volta and later a
warp's diverged paths may interleave and reconverge only where the compiler places
`BSYNC`/`__syncwarp`, so intra-warp producer/consumer spin loops make progress there
and would loop forever here (the watchdog reports that: `watchdog.py`). For programs
whose result does not depend on the interleaving of a warp's diverged paths (every
data-race-free program using `__syncthreads`/`__syncwarp` correctly) the results are
identical; the counts of executed warp instructions equal those of a stack machine
reconverging at immediate post-dominators, which is also what Volta+ hardware does
for structured code compiled by ptxas.

Sources: Fung et al., "Dynamic Warp Formation and Scheduling for Efficient GPU
Control Flow", MICRO 2007 (IPDOM stack); NVIDIA Volta whitepaper (2017), section
"Independent Thread Scheduling".
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from gpusim.functional import stack_kernels as K

EXIT = -1                    # isa.cfg.EXIT: the virtual exit block
FULL_MASK = np.uint32(0xFFFFFFFF)


class WarpStacks:
    """The reconvergence stacks of `n` warps; row w, column d is stack level d of warp w."""

    def __init__(self, initial_masks: np.ndarray, entry_pc: int, depth_hint: int = 8):
        n = len(initial_masks)
        self.pc = np.full((n, depth_hint), EXIT, np.int32)
        self.rpc = np.full((n, depth_hint), EXIT, np.int32)
        self.mask = np.zeros((n, depth_hint), np.uint32)
        self.pc[:, 0] = entry_pc
        self.mask[:, 0] = initial_masks
        self.depth = np.where(initial_masks != 0, 1, 0).astype(np.int32)
        self.exited = np.zeros(n, np.uint32)

    def copy(self) -> "WarpStacks":
        """A stack of the same entries, its own arrays."""
        out = WarpStacks.__new__(WarpStacks)
        out.pc, out.rpc, out.mask, out.depth, out.exited = (self.pc.copy(), self.rpc.copy(), self.mask.copy(),
                                                             self.depth.copy(), self.exited.copy())
        return out

    # ------------------------------------------------------------------ queries
    def top_pc(self) -> np.ndarray:
        """pc of each warp's top entry (EXIT for finished warps)."""
        d = np.maximum(self.depth - 1, 0)
        top = self.pc[np.arange(len(d)), d]
        return np.where(self.depth > 0, top, EXIT)

    def top_mask(self, warps: np.ndarray) -> np.ndarray:
        return self.mask[warps, self.depth[warps] - 1]

    def top_mask_all(self) -> np.ndarray:
        """Top-entry mask of every warp (0 for finished warps)."""
        d = self.depth
        m = self.mask[np.arange(len(d)), np.maximum(d - 1, 0)]
        return np.where(d > 0, m, np.uint32(0))

    def pending_lanes(self, warps: np.ndarray) -> np.ndarray:
        """Per warp, the lanes of entries below the top that still have code to run before
        their reconvergence pc: sibling paths not yet run (a mask disjoint from the top's;
        reconvergence entries contain the top's lanes) whose pc is not already there."""
        d = self.depth[warps]
        top = self.mask[warps, np.maximum(d - 1, 0)]
        below = np.arange(self.pc.shape[1])[None, :] < (d - 1)[:, None]
        m = self.mask[warps]
        pend = below & ((m & top[:, None]) == 0) & (self.pc[warps] != self.rpc[warps])
        return np.bitwise_or.reduce(np.where(pend, m, np.uint32(0)), axis=1)

    def live_mask(self, warps: np.ndarray, launched: np.ndarray) -> np.ndarray:
        """Lanes of `warps` that were launched and have not exited."""
        return launched[warps] & ~self.exited[warps]

    # ------------------------------------------------------------------ updates
    def goto(self, warps: np.ndarray, pc: int | np.ndarray) -> None:
        """Move the top entry of each warp in `warps` to `pc`."""
        if type(pc) is int and type(warps) is np.ndarray and warps.dtype == np.int64:
            K.goto(self.pc, self.depth, warps, pc)          # one block for all: the compiled loop
            return
        self.pc[warps, self.depth[warps] - 1] = pc

    def lowest_runnable(self, arrived: np.ndarray) -> tuple[int, np.ndarray] | None:
        """(the lowest block a runnable warp's top entry is at, the runnable warps there), or None
        when every warp has finished or waits at a barrier (a runnable warp: an entry left and no
        lane of its top entry among `arrived`, the lanes waiting at a barrier)."""
        out = np.empty(len(self.depth), np.int64)
        b, k = K.lowest_runnable(self.depth, self.pc, self.mask, arrived, out)
        return (int(b), out[:k]) if k else None

    def branch(self, warps: np.ndarray, masks: np.ndarray, taken: np.ndarray,
               target: int, fallthrough: int, reconverge: int) -> int:
        """A conditional branch for `warps` with active `masks` and `taken` lane masks.
        Returns the number of warps that diverged."""
        if type(target) is int and type(fallthrough) is int and type(reconverge) is int and \
                type(warps) is np.ndarray and warps.dtype == np.int64:
            n = K.branch(self.pc, self.rpc, self.mask, self.depth, warps, masks, taken, target, fallthrough,
                         reconverge)                     # one compiled pass, unless a stack must grow
            if n >= 0:
                return n
        all_taken = taken == masks
        none_taken = taken == 0
        div = ~(all_taken | none_taken)
        top = self.depth[warps] - 1
        self.pc[warps, top] = np.where(all_taken, target, fallthrough)
        if not div.any():
            return 0
        w = warps[div]
        t = taken[div]
        m = masks[div]
        d = self.depth[w]
        need = int(d.max()) + 2
        if need > self.pc.shape[1]:
            self._grow(need)
        self.pc[w, d - 1] = reconverge                 # the reconvergence entry keeps the whole mask
        self.pc[w, d] = fallthrough
        self.rpc[w, d] = reconverge
        self.mask[w, d] = m & ~t
        self.pc[w, d + 1] = target
        self.rpc[w, d + 1] = reconverge
        self.mask[w, d + 1] = t
        self.depth[w] = d + 2
        return len(w)

    def exit_lanes(self, warps: np.ndarray, lanes: np.ndarray) -> None:
        """Lanes `lanes` (per warp) of `warps` finish: clear them from every entry."""
        if type(warps) is np.ndarray and warps.dtype == np.int64 and type(lanes) is np.ndarray \
                and lanes.dtype == np.uint32:
            K.exit_lanes(self.exited, self.mask, warps, lanes)   # one compiled pass
            return
        self.exited[warps] |= lanes
        self.mask[warps] &= ~lanes[:, None]

    def settle(self, warps: np.ndarray) -> None:
        """Pop entries that reached their reconvergence pc or have no lanes left."""
        if type(warps) is np.ndarray and warps.dtype == np.int64:
            K.settle(self.pc, self.rpc, self.mask, self.depth, warps)
            return
        w = warps
        while len(w):
            d = self.depth[w]
            live = d > 0
            w, d = w[live], d[live]
            top = d - 1
            pop = (self.pc[w, top] == self.rpc[w, top]) | (self.mask[w, top] == 0)
            if not pop.any():
                return
            w = w[pop]
            self.depth[w] -= 1

    def lanes_at(self, warps: np.ndarray, pc_in_set: np.ndarray) -> np.ndarray:
        """Per warp, the lanes of stack entries whose pc is in the set (`pc_in_set`
        is a bool table indexed by block, with one extra slot at the end for EXIT)."""
        d = self.depth[warps]
        pcs = self.pc[warps]
        live = np.arange(pcs.shape[1])[None, :] < d[:, None]
        hit = pc_in_set[pcs] & live
        return np.bitwise_or.reduce(np.where(hit, self.mask[warps], np.uint32(0)), axis=1)

    def yield_to_sibling(self, warps: np.ndarray, arrived: np.ndarray) -> None:
        """For warps whose top entry waits at a barrier (lanes in `arrived`) while the
        entry below is a sibling path (same reconvergence pc) of other lanes, swap the
        two so the sibling runs first: it may exit or reach the barrier too. This is
        what lets `if (t >= n) return; __syncthreads();` complete, as on hardware."""
        d = self.depth[warps]
        ok = d >= 2
        w, d = warps[ok], d[ok]
        if not len(w):
            return
        top, below = d - 1, d - 2
        mb = self.mask[w, below]
        can = (mb != 0) & ((mb & arrived[w]) == 0) & (self.rpc[w, top] == self.rpc[w, below])
        w, top, below = w[can], top[can], below[can]
        for arr in (self.pc, self.rpc, self.mask):
            a, b = arr[w, top].copy(), arr[w, below].copy()
            arr[w, top], arr[w, below] = b, a

    def _grow(self, need: int) -> None:
        extra = max(need, 2 * self.pc.shape[1]) - self.pc.shape[1]
        n = self.pc.shape[0]
        self.pc = np.concatenate([self.pc, np.full((n, extra), EXIT, np.int32)], axis=1)
        self.rpc = np.concatenate([self.rpc, np.full((n, extra), EXIT, np.int32)], axis=1)
        self.mask = np.concatenate([self.mask, np.zeros((n, extra), np.uint32)], axis=1)


def starting_stacks(wpc: int, tpb: int, nctas: int) -> tuple[np.ndarray, WarpStacks]:
    """(each warp's launched lanes, the stacks) a batch of `nctas` blocks of `tpb` threads (`wpc`
    warps) starts from: each warp's launched lanes at the entry block. For small batches made once
    (`_kept`) and the stacks copied: the lanes are read by the batches, never written."""
    if nctas * wpc > 1024:
        return _starting(wpc, tpb, nctas)
    launched, stacks = _kept(wpc, tpb, nctas)
    return launched, stacks.copy()


def _starting(wpc: int, tpb: int, nctas: int) -> tuple[np.ndarray, WarpStacks]:
    last = tpb - 32 * (wpc - 1)
    per_block = np.full(wpc, FULL_MASK, np.uint32)
    per_block[-1] = np.uint32((1 << last) - 1) if last < 32 else FULL_MASK
    launched = np.tile(per_block, nctas)
    return launched, WarpStacks(launched.copy(), entry_pc=0)


_kept = lru_cache(maxsize=64)(_starting)
