"""Sampled simulation: which lines of a shared footprint the whole GPU's L2 would hold.

The problem. Sampled timing simulates a few SMs with their share of the L2 (`memory/system.py`:
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
- Residency (LRU, the other blocks' touches spread over the kernel): a line stays in the
  whole L2 for a share w of the kernel after its last touch, where the lines touched
  within w fill the L2's C distinct lines,
      sum over shared regions of touched_r(w) + sum over streams of min(D, m D w) = C
  (w = 1 when everything fits). How a shared region's lines are touched within w depends
  on how its blocks find them:
  * irregular regions (gathers and scatters through an index, a hash): each line's
    touches fall at random grid positions, Che's approximation: touched_r(w) =
    D (1 - exp(-m w)); a line is in the whole L2 when one of the other m - 1 blocks
    touched it within w before, and not before the kernel started: at grid position tau
    (block / grid blocks) the probability is p(tau) = 1 - exp(-(m - 1) * min(tau, w));
  * regular regions (a block's lines of the region at one stride of more than one line:
    a matmul's column strip of B): the grid walks the region in order and comes back to
    a line once every 1/m of the grid (a matmul's B once per block row), so
    touched_r(w) = D min(1, m w) and a line is held exactly when its reuse distance
    fits: p(tau) = 1 if 1/m <= min(tau, w), else 0. A cyclic walk over more than the L2
    holds gets no hits under LRU, where Che's approximation would give it a share of
    them (matmul_tiled 4096^3 on an H200: 16.9 GB of DRAM reads measured, one 64 MB B
    per block row; with Che's 5.9 GB were predicted).
  Blocks of one wave (the whole GPU's SMs times the blocks each holds, dealt out
  together) run at the same time and walk their loops in step: a block's touch of a line
  follows those of a random share of its own wave, not only of its lower-numbered blocks,
  so a block takes p averaged over its wave's span of tau (a grid of one wave, a GEMM of
  256 tiles on 132 SMs: every block (m - 1) / m of its shared lines held, where tau = its
  number would give the first SMs' blocks none; the GPU reads each line once). A line
  first touched within the block's own wave is in flight, not held (`warm_state`): the
  blocks reach it together, one fetches it from DRAM and the others wait for that fetch
  (the share's entry is ready when the DRAM would return that fetch, `HBM.peek_read`,
  booking nothing: a GEMM's k step waits for its tile's slowest fetch, docs/mechanisms_24.md
  section 21); a line
  touched by earlier waves is held where the window holds it for a wave's time, not only
  for the gap to the sharer (that block ran a wave before: a row-major GEMM's B walked by
  64 blocks a line, gap 1/64 of the grid, whose waves of 23% outlast the window of 3%, is
  fetched once a wave, as the H200 read it for cuda_wmma_f16 at 4096^3: 203 MB).
  Convoys: the blocks of a wave that share a line drift apart (their durations differ), so
  their touches of it come as far apart as the blocks' positions say, and beyond the
  residency window each fetches it again. While the DRAM is congested (`HBM.congested`:
  reads wait in its queues at least as long as its latency) that drift reverses: a block
  ahead waits for its misses while those behind it hit what it fetched and catch up, so the
  blocks that share lines run in convoys, and a touch by any of the wave's other blocks
  comes with this one's: a regular region's line is fetched once a wave (1 - gap / wave of
  its touches in flight), an irregular one's by the first of a Poisson number of the wave's
  touches (1 - (1 - e^-x) / x, x = extra touches within the wave). The congestion decides
  per miss, so the DRAM traffic settles where the DRAM is just congested: the TMA GEMM at
  8192^3 read 5.7 GB of DRAM on the H100 (3.35 TB/s: congested without convoys) and 10.9 GB
  on the H200 (4.8 TB/s: not), 13.6 and 12.9 without convoys in the model, 2.6 with them always.
  A region is regular when, over the run's blocks, at least `REGULAR_SHARE` of the
  gaps between a block's consecutive lines of it are that block's commonest gap, and
  that gap is more than one line. Contiguous runs of lines (a tile, a row, random
  columns within a row: held-out gather_cols) are shared by neighbouring blocks at
  once rather than once per walk of the grid, and keep Che's approximation.
- The L2 (`memory/l2_slices.py`) asks on a miss of its share: `warm(line, tau)` draws the line's fixed
  uniform hash u(line) against p(tau), so runs are deterministic. A warm line is filled
  without DRAM traffic (whole, except in a region the sampled blocks only store to: there
  the whole L2 holds the bytes the other blocks wrote, and a partial store finds its sector
  not whole, `SharedFootprint.whole`) and takes no share of the phantom stand-ins; a warm dirty line
  evicted from the share is kept (no write-back: the whole L2 would still hold it).

Not modelled: timing structure within the kernel beyond that (blocks that share lines at
the same time are taken as spread evenly over the grid), the near/far copies'
exact capacity (C counts a line once plus half a line for its far copy), and lines
outside the array arguments (local memory, constants).
"""
from __future__ import annotations

import bisect
import math

import numpy as np

from gpusim.timing.payloads import owned_sectors
from gpusim.timing.sampling.sharing_span import sharing_spans, span_sample

HASH_MULT = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1
PARTIAL_HASH_MULT = 0xD6E8FEB86659FD93      # a second draw per sector, independent of HASH_MULT's
COLD, HELD, IN_FLIGHT = 0, 1, 2   # warm_state: not in the whole L2; held; being fetched for a block of the same wave
SHARED_MIN = 2.0           # blocks per line from which a region counts as shared (a halo is not)
REGULAR_SHARE = 0.5        # share of a block's line gaps at its commonest gap from which a region is regular


class SharedFootprint:
    """Per-region sharing degree and the residency probability of its lines."""

    def __init__(self, starts, ends, touches, capacity_lines: float, regular=None, wave_share: float = 0.0,
                 span=None, read=None):
        """`starts`, `ends`: each region's line range; `touches`: the whole grid's
        (block, line) pairs in it; `capacity_lines`: distinct lines the whole L2 holds;
        `regular`: per region, whether the grid walks it in order (default: none does);
        `wave_share`: the share of the grid's blocks the whole GPU runs at once (its SMs
        times the blocks each holds, over the grid's blocks; 0: blocks one after another);
        `span`: per region of those walked in order, the share of the grid within which the
        blocks that touch one line all come (default 1: spread over the whole grid; a
        grouped tile order's A strip: its group of blocks); `read`: per region, whether the
        sampled blocks load from it (default: every region; one they only store to holds, in
        the whole L2, the bytes other blocks wrote, not whole lines: `whole`)."""
        self.wave_share = min(1.0, max(0.0, float(wave_share)))
        self._wave_p: dict[tuple[int, int, bool], float] = {}  # (region, wave, convoy): `probability`
        self._wave_p0: dict[tuple[int, int], float] = {}       # ... at the wave's first position (`warm_state`)
        self.starts = np.asarray(starts, dtype=np.int64)
        self.ends = np.asarray(ends, dtype=np.int64)
        self.lines = np.maximum(self.ends - self.starts, 1).astype(float)
        self.touches = np.asarray(touches, dtype=float)
        m = self.touches / self.lines                          # blocks per line
        self.sharing = np.where(m >= SHARED_MIN, m, 1.0)       # below: a stream's halo, timed with it
        self.regular = (np.zeros(len(self.starts), dtype=bool) if regular is None
                        else np.asarray(regular, dtype=bool))
        self.span = (np.ones(len(self.starts)) if span is None
                     else np.clip(np.asarray(span, dtype=float), 1e-9, 1.0))
        self.read = (np.ones(len(self.starts), dtype=bool) if read is None
                     else np.asarray(read, dtype=bool))
        self.capacity_lines = float(capacity_lines)
        self.dram = np.zeros(len(self.starts))                 # DRAM bursts the simulated share read, per region
        self.window = self._window()                           # w, at most 1
        self._start_list, self._end_list = self.starts.tolist(), self.ends.tolist()
        self._list = list(zip(self.starts.tolist(), self.ends.tolist(),
                              np.maximum(self.sharing - 1.0, 0.0).tolist(),
                              (self.span / self.sharing).tolist(), self.regular.tolist(),
                              self.span.tolist()))

    @property
    def active(self) -> bool:
        return any(extra > 0 for _, _, extra, _, _, _ in self._list)

    def _touched(self, w: float) -> np.ndarray:
        """Per region, the lines touched within the last w of the kernel (`_window`)."""
        lines, shared = self.lines, self.sharing >= SHARED_MIN
        regular = shared & self.regular
        random_walk = lines * np.maximum(self.span * -np.expm1(-self.sharing * w / self.span),
                                         min(1.0, w) * -np.expm1(-self.sharing))
        in_order = lines * np.minimum(1.0, np.maximum(np.minimum(self.span, self.sharing * w), w))
        return np.where(regular, in_order, np.where(shared, random_walk, np.minimum(lines, self.touches * w)))

    def _window(self) -> float:
        """The share of the kernel a line stays in the whole L2 after its last touch (Che's
        characteristic time): the w at which the lines touched within w of the kernel fill
        the capacity, sum over regions of D * (1 - exp(-m w)) (regular: D min(1, m w); one
        whose lines' touches come within a span s of the grid, the grid's groups one after
        another: D min(1, max(min(s, m w), w)); a stream: m D w) = C."""
        if self._touched(1.0).sum() <= self.capacity_lines:
            return 1.0
        lo, hi = 0.0, 1.0
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            if self._touched(mid).sum() > self.capacity_lines:
                hi = mid
            else:
                lo = mid
        return lo

    def share_excess_lines(self, share: float) -> float:
        """Lines of the shared regions that a sample of `share` of the grid's blocks keeps in
        its L2 share beyond that share's part of them. The share is the whole L2's capacity
        times `share`, which is right for what each block touches alone; but the whole L2
        holds a shared region's lines touched within the window w (`_window`) once for every
        block, and the sample's blocks touch most of them within w where many blocks do, not
        `share` of them. Left in the scaled capacity, a gathered 4 MB vector (2^20 floats read
        by every block) fills the 3.6 MB share of an H200's 60 MB L2 that 8 SMs get and evicts
        their own rows between one iteration and the next: a thread-per-row CSR SpMV read its
        matrix from DRAM 4-6 times in sampled simulation and once in full simulation (725 MB
        against 179 MB). Per shared region: the lines touched within w, T (`_touched`), each
        touched k = m w D / T times in it, of which the sample's blocks touch 1 - e^(-k share)
        and the scaled capacity holds `share`: T ((1 - e^(-k share)) - share)."""
        w = self.window
        held = self._touched(w)
        excess = 0.0
        for r, (_a, _b, extra, _gap, _regular, _span) in enumerate(self._list):
            if extra <= 0 or held[r] <= 0:
                continue
            k = self.sharing[r] * w * self.lines[r] / held[r]          # touches of a held line within w
            excess += held[r] * max(0.0, -math.expm1(-k * share) - share)
        return float(excess)

    def count_dram(self, line: int) -> None:
        """The simulated share read a DRAM burst of `line`: per region, for `reuse_uncertainty`."""
        r = bisect.bisect_right(self._start_list, line) - 1
        if r >= 0 and line < self._end_list[r]:
            self.dram[r] += 1

    def reuse_uncertainty(self, simulated_share: float | None, lines_per_burst: float) \
            -> tuple[float, float, int | None]:
        """How much of the re-touch traffic the sample cannot pin down: (line touches whose
        hit or miss it cannot tell, all line touches of the grid, the region most affected).
        Whether the grid walks a shared region at random (Che's approximation) or in order
        (LRU holds a line exactly when its reuse distance fits the L2) is a guess from the
        sample's block gaps (`regular`), and near the capacity knee the two differ by up to
        every re-touch (a 16 MB array read four times by the grid in order with a 16 MB L2:
        every read misses under LRU, Che gives a third of them hits). The blocks that share a
        line are not simulated together, so the sample cannot check the guess: per region,
        the hit fraction the simulated share achieved (1 - the lines its DRAM bursts fetched,
        `dram` times `lines_per_burst`, over its touches, the grid's times `simulated_share`;
        before the run, None: the estimate it uses) is compared with both estimates, and the
        larger difference counts."""
        shared = self.sharing >= SHARED_MIN
        if not shared.any():
            return 0.0, float(self.touches.sum()), None
        walk = SharedFootprint(self.starts, self.ends, self.touches, self.capacity_lines, regular=shared,
                               span=self.span).window
        rand = SharedFootprint(self.starts, self.ends, self.touches, self.capacity_lines, regular=None,
                               span=self.span).window
        extra = np.maximum(self.sharing - 1.0, 0.0) / self.span         # touches per unit of grid within a span
        held = np.minimum(rand, self.span)
        with np.errstate(divide="ignore", invalid="ignore"):
            before = np.where(extra > 0, held + np.expm1(-extra * held) / np.where(extra > 0, extra, 1.0), 0.0)
        # mean over tau (within a span) of 1 - exp(-a min(tau, w))
        che = (before + (self.span - held) * -np.expm1(-extra * held)) / self.span
        gap = self.span / self.sharing
        cyclic = np.where(gap <= walk, 1.0 - 1.0 / self.sharing, 0.0)     # mean over tau of [gap <= min(tau, w')]
        if simulated_share is None:                # before the run: the share will do as the estimate it uses
            simulated = np.where(self.regular, cyclic, che)
        else:
            sim_touches = self.touches * simulated_share
            with np.errstate(divide="ignore", invalid="ignore"):
                simulated = np.where(sim_touches > 0, 1.0 - self.dram * lines_per_burst / np.maximum(sim_touches, 1e-9),
                                     np.where(self.regular, cyclic, che))
            simulated = np.clip(simulated, 0.0, 1.0)
        off = np.maximum(np.abs(simulated - che), np.abs(simulated - cyclic))
        unsure = np.where(shared, self.touches * np.minimum(off, 1.0), 0.0)
        worst = int(np.argmax(unsure)) if unsure.max() > 0 else None
        return float(unsure.sum()), float(self.touches.sum()), worst

    def describe_region(self, r: int, line_bytes: int) -> str:
        """'a 4.2 MB region read 4 times across the grid'"""
        size = self.lines[r] * line_bytes / 1e6
        return f"a {size:,.1f} MB region touched by {self.sharing[r]:.1f} blocks per line across the grid"

    def probability(self, line: int, tau: float, convoy: bool = False) -> float:
        """Whether the whole L2 holds `line` at grid position `tau`, as a probability. The
        blocks of one wave (`wave_share` of the grid, dealt out together) run at the same
        time and walk their loops in step, so a block's touch of a line comes after those
        of a random share of its own wave, not after the wave's lower-numbered blocks only:
        the probability is the mean over the wave's span of grid positions."""
        for r, (a, b, extra, gap, regular, span) in enumerate(self._list):
            if a <= line < b:
                if extra <= 0:
                    return 0.0
                if self.wave_share <= 0.0:
                    return _held(tau, tau, extra, gap, regular, self.window, span)
                wave = int(tau / self.wave_share + 1e-9)
                key = (r, wave, convoy)
                p = self._wave_p.get(key)
                if p is None:
                    t0 = wave * self.wave_share
                    p = self._wave_p[key] = _held(t0, min(1.0, t0 + self.wave_share), extra, gap, regular,
                                                  self.window, span, convoy, self.wave_share)
                return p
        return 0.0

    def blocks_per_line(self, line: int) -> float | None:
        """How many of the grid's blocks touch `line` (1 for a stream's, a halo's), or None
        for a line outside the kernel's array arguments."""
        r = bisect.bisect_right(self._start_list, line) - 1
        if r >= 0 and line < self._end_list[r]:
            return float(self.sharing[r])
        return None

    def whole(self, line: int) -> bool:
        """Whether a warm `line` is held whole in the whole L2: False in a region the blocks
        only store to, where the other blocks' stores left the bytes they wrote (a scatter of
        4-byte stores: every sector partly written, so each further partial store costs its
        slice the ECC granule's read as in full simulation, `l2_writeback.partial_cost`). Where
        the L2 keeps few partly written lines (`l2.partial_lines_per_slice`) such a line holds
        the sectors `held_sectors` draws instead."""
        r = bisect.bisect_right(self._start_list, line) - 1
        return not (r >= 0 and line < self._end_list[r]) or bool(self.read[r])

    def held_sectors(self, line: int, tau: float, spl: int, convoy: bool = False) -> int:
        """The sectors (a bit mask of `spl`) of a line of a store-only region that the whole L2
        holds whole at grid position `tau` where it keeps few partly written lines
        (`L2Slices._complete`): those the other blocks' stores touched while the line was held,
        each completed since. The line's held probability p is 1 - exp(-n) for the n touches
        it expects within the residency window; each touches one sector of `spl`, so a sector
        was touched with probability (1 - exp(-n / spl)) / p given that the line is held,
        drawn per sector."""
        p = self.probability(line, tau, convoy)
        if p >= 1.0:
            return (1 << spl) - 1
        if p <= 0.0:
            return 0
        q = -math.expm1(math.log1p(-p) / spl) / p
        mask = 0
        for k in range(spl):
            if (((line * spl + k) * PARTIAL_HASH_MULT) & MASK64) / 2.0 ** 64 < q:
                mask |= 1 << k
        return mask

    def warm(self, line: int, tau: float) -> bool:
        p = self.probability(line, tau)
        return p > 0.0 and ((line * HASH_MULT) & MASK64) / 2.0 ** 64 < p

    def warm_state(self, line: int, tau: float, convoy: bool = False) -> int:
        """COLD, HELD (the whole L2 holds `line`: touched by blocks of earlier waves) or IN_FLIGHT
        (first touched by a block of the same wave, which runs in step with this one: its fetch
        from DRAM is on its way, and this block's request waits for it without a fetch of its
        own). The same draw as `warm`: a line is IN_FLIGHT where the wave's mean probability
        exceeds the probability at the wave's first position. `convoy`: the DRAM is congested
        (`HBM.congested`), so the blocks that share a line run in convoys and every touch of it
        by the wave's other blocks comes with this one (`_held`)."""
        p = self.probability(line, tau, convoy)
        if p <= 0.0:
            return COLD
        u = ((line * HASH_MULT) & MASK64) / 2.0 ** 64
        if u >= p:
            return COLD
        if self.wave_share <= 0.0:
            return HELD
        wave = int(tau / self.wave_share + 1e-9)
        for r, (a, b, extra, gap, regular, span) in enumerate(self._list):
            if a <= line < b:
                key = (r, wave)
                p0 = self._wave_p0.get(key)           # at the wave's first position
                if p0 is None:
                    t0 = wave * self.wave_share
                    p0 = self._wave_p0[key] = _held(t0, t0, extra, gap, regular, self.window, span,
                                                    wave=self.wave_share)
                return HELD if u < p0 else IN_FLIGHT
        return HELD


def _held(t0: float, t1: float, extra: float, gap: float, regular: bool, window: float, span: float = 1.0,
          convoy: bool = False, wave: float = 0.0) -> float:
    """The mean over grid positions tau in [t0, t1] of the probability that the whole L2
    holds a line touched by `extra` other blocks (class docstring): in order (`regular`),
    1 where its reuse distance `gap` fits min(tau, w); at random, 1 - exp(-extra min(tau, w)).
    Within a `span` of the grid shorter than the grid (its touches come within it, the spans
    one after another): past the first span, the mean over a span; the touches come 1 / span
    times as often. `wave`: the share of the grid run at once; a regular region's line last
    touched by a block of an earlier wave was touched a wave's time before, which the window
    must hold too (not only `gap`)."""
    if span < 1.0:                 # a span like the one the line's touches are in: its own from the start
        t0, t1 = (0.0, span) if t0 >= span else (t0, min(t1, span))
        extra = extra / span
    if convoy and t1 > t0:         # a convoy: the wave's other touches of the line come with this one
        wave = t1 - t0
        in_wave = (max(0.0, 1.0 - gap / wave) if regular
                   else 1.0 - (-math.expm1(-extra * wave)) / (extra * wave) if extra * wave > 0 else 0.0)
    else:
        in_wave = 0.0
    if regular:
        if gap > window:
            return in_wave
        # a block in the first `gap` of its wave (t0 its wave's first position) was preceded by
        # one of an earlier wave, whose touch came a wave's time before (the blocks of a wave run
        # at once), not `gap`: held only where that fits the window too
        earlier = max(gap, wave) <= window
        if t1 <= t0:
            return 1.0 if gap <= t0 and earlier else 0.0
        first = max(0.0, min(t1, t0 + gap) - max(t0, gap)) if earlier else 0.0
        return max(in_wave, min(1.0, (first + max(0.0, t1 - t0 - gap)) / (t1 - t0)))
    if t1 <= t0:
        return -math.expm1(-extra * min(t0, window))
    total = 0.0
    lo, hi = t0, min(t1, window)
    if hi > lo:                                   # integral of 1 - exp(-extra t) over [lo, hi]
        total += (hi - lo) + (math.exp(-extra * hi) - math.exp(-extra * lo)) / extra
    if t1 > max(t0, window):
        total += (t1 - max(t0, window)) * -math.expm1(-extra * window)
    return max(in_wave, total / (t1 - t0))


def shared_footprint(arrays, streams_by_block, grid_blocks: int, sectors_per_line: int,
                     capacity_lines: float, wave_blocks: int = 0, spread=None,
                     resolution_blocks: int = 1) -> SharedFootprint | None:
    """The SharedFootprint of a launch from the streams of a run of sampled blocks
    (`functional_streams.WarpStream` lists), or None when no region is shared. `arrays`:
    `Marshalled.arrays` (each argument's (address, bytes) list); `wave_blocks`: the blocks
    the whole GPU runs at once (0: taken as one after another); `spread`: (block, streams)
    of the timed blocks from across the grid, from which the span of a regular region's
    sharing is read (`sharing_spans`), `resolution_blocks` apart at most (a round)."""
    shift = sectors_per_line.bit_length() - 1 + 5              # byte address -> line
    ranges = sorted({(addr >> shift, (addr + nbytes - 1 >> shift) + 1)
                     for arr in arrays if arr for addr, nbytes in arr if nbytes > 0})
    if not ranges or not streams_by_block:
        return None
    starts = np.array([a for a, _ in ranges], dtype=np.int64)
    ends = np.array([b for _, b in ranges], dtype=np.int64)
    pairs = np.zeros(len(ranges))
    gaps = np.zeros(len(ranges))                 # per region: gaps between a block's consecutive lines
    common = np.zeros(len(ranges))               # ... of them at the block's commonest gap
    lsh = sectors_per_line.bit_length() - 1
    seen = []
    for lines in _blocks_lines(streams_by_block, lsh):
        if lines.size == 0:
            continue
        idx = np.searchsorted(starts, lines, side="right") - 1
        ok = (idx >= 0) & (lines < ends[np.maximum(idx, 0)])
        pairs += np.bincount(idx[ok], minlength=len(ranges))
        seen.append(lines[ok])
        _count_gaps(lines[ok], idx[ok], gaps, common)
    read = np.zeros(len(ranges), dtype=bool)     # per region: whether the blocks load from it
    for lines in _blocks_lines(streams_by_block, lsh, stores=False):
        idx = np.searchsorted(starts, lines, side="right") - 1
        ok = (idx >= 0) & (lines < ends[np.maximum(idx, 0)])
        read[idx[ok]] = True
    touches = pairs * grid_blocks / len(streams_by_block)
    if seen:                                   # sharing among the run's own blocks is simulated with them
        union = np.unique(np.concatenate(seen))
        distinct = np.bincount(np.searchsorted(starts, union, side="right") - 1, minlength=len(ranges))
        touches = touches / np.maximum(pairs / np.maximum(distinct, 1), 1.0)
    regular = common >= REGULAR_SHARE * np.maximum(gaps, 1.0)
    span = None
    if spread:
        spread = [spread[i] for i in span_sample(len(spread))]      # the blocks sharing_spans compares
        lines = _blocks_lines([st for _, st in spread], lsh)
        span = sharing_spans(starts, ends, [(b, ls) for (b, _), ls in zip(spread, lines)], grid_blocks,
                             resolution_blocks)
    fp = SharedFootprint(starts, ends, touches, capacity_lines, regular=regular,
                         wave_share=wave_blocks / grid_blocks if grid_blocks else 0.0, span=span, read=read)
    return fp if fp.active else None


def _count_gaps(lines: np.ndarray, idx: np.ndarray, gaps: np.ndarray, common: np.ndarray) -> None:
    """Add one block's line gaps per region (`lines` sorted, `idx` their regions) to `gaps`,
    and those at the block's commonest gap in that region to `common` where that gap is a
    stride (more than one line)."""
    if lines.size < 2:
        return
    d = np.diff(lines)
    r = idx[1:]
    same = r == idx[:-1]
    for region in np.unique(r[same]).tolist():
        g = d[same & (r == region)]
        gaps[region] += g.size
        values, counts = np.unique(g, return_counts=True)
        top = int(counts.argmax())
        if values[top] > 1:                         # a stride, not a contiguous run of lines
            common[region] += counts[top]


def _blocks_lines(blocks, lsh: int, stores: bool = True) -> list[np.ndarray]:
    """Per block of `blocks` (each a list of its warps' streams), the distinct lines its warps touch,
    sorted (loads, stores unless `stores` is False, atomics, bulk and tensor copies: a TMA GEMM's tiles
    of A and B are shared across the grid like an LDGSTS GEMM's). Read together (`payloads.owned_sectors`: a batch's step
    once for all its blocks) and deduplicated in one sort."""
    owner, sectors = owned_sectors(((visit[2] for st in streams for visit in st.visits if visit[2])
                                    for streams in blocks), copies=True, stores=stores)
    lines = sectors >> lsh
    order = np.lexsort((lines, owner))
    owner, lines = owner[order], lines[order]
    first = np.r_[True, (owner[1:] != owner[:-1]) | (lines[1:] != lines[:-1])] if lines.size else np.zeros(0, bool)
    owner, lines = owner[first], lines[first]
    return np.split(lines, np.searchsorted(owner, np.arange(1, len(blocks))))
