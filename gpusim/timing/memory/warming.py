"""Sampled simulation: which lines of a shared footprint the whole GPU's L2 would hold.

The problem. Sampled timing simulates a few SMs with their share of the L2 (`system.py`:
capacity scaled by the SM fraction). That is right for data each block touches alone
(streams, tiles), and wrong for data that blocks all over the grid touch: a 16 MB array
scattered into or gathered from by every block stays in the whole GPU's 60 MB L2, warm
from the other SMs' accesses, but it cannot fit the sampled 3.6 MB share, and the few
simulated blocks touch each line too rarely to warm it themselves. Random gathers and
scatters then come out 2x too slow with 4-10x the DRAM traffic.

What is modelled (an estimate from the sampled blocks, no extra execution):
- Regions: the kernel's array arguments (address ranges of `D` lines each).
- Sharing: over the first run of simulated blocks (consecutive blocks, timed together),
  each block's distinct lines in each region (pairs) and the run's distinct lines. The
  sharing among the run's own blocks (pairs / distinct: a stencil's neighbours, tiles of
  one block row) is simulated with them; the rest, with blocks elsewhere in the grid, is
  m = pairs * grid blocks / sampled blocks / D / (pairs / distinct) blocks per line. A
  region is shared when m >= 2 (a stream has m = 1: each line is one block's; a
  stencil's halo a little more, and its neighbours run at the same time, within the
  sample).
- Residency (LRU by Che's approximation, the other blocks' touches spread evenly over the
  kernel): a line stays in the whole L2 for a share w of the kernel after its last touch,
  where the lines touched within w fill the L2's C distinct lines,
      sum over shared regions of D * (1 - exp(-m w)) + sum over streams of min(D, m D w) = C
  (w = 1 when everything fits). A line of a region touched by m blocks is then in the
  whole L2 when one of the other m - 1 blocks touched it within w before, and not before
  the kernel started: at grid position tau (block / grid blocks) the probability is
      p(tau) = 1 - exp(-(m - 1) * min(tau, w)).
- The L2 (`l2.py`) asks on a miss of its share: `warm(line, tau)` draws the line's fixed
  uniform hash u(line) against p(tau), so runs are deterministic. A warm line is filled
  without DRAM traffic and takes no share of the phantom stand-ins; a warm dirty line
  evicted from the share is kept (no write-back: the whole L2 would still hold it).

Not modelled: timing structure within the kernel (blocks that share lines at the same
time, like a matmul's concurrent tiles, are taken as spread evenly), the near/far copies'
exact capacity (C counts a line once plus half a line for its far copy), and lines
outside the array arguments (local memory, constants).
"""
from __future__ import annotations

import math

import numpy as np

HASH_MULT = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1
SHARED_MIN = 2.0           # blocks per line from which a region counts as shared (a halo is not)


class SharedFootprint:
    """Per-region sharing degree and the residency probability of its lines."""

    def __init__(self, starts, ends, touches, capacity_lines: float):
        """`starts`, `ends`: each region's line range; `touches`: the whole grid's
        (block, line) pairs in it; `capacity_lines`: distinct lines the whole L2 holds."""
        self.starts = np.asarray(starts, dtype=np.int64)
        self.ends = np.asarray(ends, dtype=np.int64)
        self.lines = np.maximum(self.ends - self.starts, 1).astype(float)
        self.touches = np.asarray(touches, dtype=float)
        m = self.touches / self.lines                          # blocks per line
        self.sharing = np.where(m >= SHARED_MIN, m, 1.0)       # below: a stream's halo, timed with it
        self.capacity_lines = float(capacity_lines)
        self.window = self._window()                           # w, at most 1
        self._list = list(zip(self.starts.tolist(), self.ends.tolist(),
                              np.maximum(self.sharing - 1.0, 0.0).tolist()))

    @property
    def active(self) -> bool:
        return any(a > 0 for _, _, a in self._list)

    def _window(self) -> float:
        """The share of the kernel a line stays in the whole L2 after its last touch (Che's
        characteristic time): the w at which the lines touched within w of the kernel fill
        the capacity, sum over regions of D * (1 - exp(-m w)) (a stream: m D w) = C."""
        lines, shared = self.lines, self.sharing >= SHARED_MIN

        def touched(w: float) -> float:
            return float(np.where(shared, lines * -np.expm1(-self.sharing * w),
                                  np.minimum(lines, self.touches * w)).sum())

        if touched(1.0) <= self.capacity_lines:
            return 1.0
        lo, hi = 0.0, 1.0
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            if touched(mid) > self.capacity_lines:
                hi = mid
            else:
                lo = mid
        return lo

    def probability(self, line: int, tau: float) -> float:
        """Whether the whole L2 holds `line` at grid position `tau`, as a probability."""
        for a, b, extra in self._list:
            if a <= line < b:
                return -math.expm1(-extra * min(tau, self.window)) if extra > 0 else 0.0
        return 0.0

    def warm(self, line: int, tau: float) -> bool:
        p = self.probability(line, tau)
        return p > 0.0 and ((line * HASH_MULT) & MASK64) / 2.0 ** 64 < p


def shared_footprint(arrays, streams_by_block, grid_blocks: int, sectors_per_line: int,
                     capacity_lines: float) -> SharedFootprint | None:
    """The SharedFootprint of a launch from the streams of a run of sampled blocks
    (`trace.WarpStream` lists), or None when no region is shared. `arrays`:
    `Marshalled.arrays` (each argument's (address, bytes) list)."""
    shift = sectors_per_line.bit_length() - 1 + 5              # byte address -> line
    ranges = sorted({(addr >> shift, (addr + nbytes - 1 >> shift) + 1)
                     for arr in arrays if arr for addr, nbytes in arr if nbytes > 0})
    if not ranges or not streams_by_block:
        return None
    starts = np.array([a for a, _ in ranges], dtype=np.int64)
    ends = np.array([b for _, b in ranges], dtype=np.int64)
    pairs = np.zeros(len(ranges))
    lsh = sectors_per_line.bit_length() - 1
    seen = []
    for streams in streams_by_block:
        lines = _block_lines(streams, lsh)
        if lines.size == 0:
            continue
        idx = np.searchsorted(starts, lines, side="right") - 1
        ok = (idx >= 0) & (lines < ends[np.maximum(idx, 0)])
        pairs += np.bincount(idx[ok], minlength=len(ranges))
        seen.append(lines[ok])
    touches = pairs * grid_blocks / len(streams_by_block)
    if seen:                                   # sharing among the run's own blocks is simulated with them
        union = np.unique(np.concatenate(seen))
        distinct = np.bincount(np.searchsorted(starts, union, side="right") - 1, minlength=len(ranges))
        touches = touches / np.maximum(pairs / np.maximum(distinct, 1), 1.0)
    fp = SharedFootprint(starts, ends, touches, capacity_lines)
    return fp if fp.active else None


def _block_lines(streams, lsh: int) -> np.ndarray:
    """The distinct lines one block's warps touch (loads, stores, atomics)."""
    parts = []
    for st in streams:
        for visit in st.visits:
            mem = visit[2]
            if not mem:
                continue
            for payload in mem.values():
                if isinstance(payload, tuple):
                    payload = payload[0]
                if isinstance(payload, np.ndarray) and payload.size:
                    parts.append(payload.astype(np.int64, copy=False) >> lsh)
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
