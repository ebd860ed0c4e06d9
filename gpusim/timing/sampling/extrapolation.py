"""What the timing engine extrapolates in sampled mode, and how far to trust it.

The engine (`timing/engine.py`) times a subset of the SMs over a subset of their blocks
(`sample_blocks.sampled_blocks`) and, within a long loop, a subset of its iterations (loop sampling,
`issue_stream.py`). From what it simulated:
- the kernel's cycles (`cycles`): the simulated time (to the last block's end or the
  last memory operation's drain), plus the cycles loop sampling left out (`_loop_stretch`),
  plus the blocks of the simulated SMs' share that were not timed at the steady-state rate
  per block after the first wave: the blocks' finishing rate between the first wave's end and
  the last timed block's (both block ends; the drain after the last block, stores and
  reductions still queued below the L1s, is in the simulated time once, not in every
  extrapolated block: taken to the drain, a backlog of reductions at saturated L2 slices,
  23% of a 1M-bin histogram's simulated time, made it 30% slower than full simulation);
  unless a few long blocks, not that rate, set the simulated
  end (`_straggler`: the longest block outlasts the time after the first wave, or the slots
  stood mostly idle in it), or the waves after the first kept in step, idle at their tails
  (`unsteady_share`; the whole grid's blocks fall out of step), where the share's end is a
  replay of the timed durations on the SMs' slots (`_replayed_cycles`: held-out 2's
  `spmv_warp_row/powerlaw`, whose 16-wave sample ends on one long row's block: 489 us at the
  rate, 330 us replayed, 304 us in full simulation, 314 us on the H200); never less than the
  simulated SMs' share of the DRAM
  moving the extrapolated DRAM bytes (`_dram_floor_cycles`; a store stream's left-out part
  writes back every sector it makes dirty: its kept iterations' stores went into the L2
  faster than their write-backs left, and scaled alone those made a 2 GB write stream 7%
  faster than timing its whole loop, now 2%), nor than their share of the
  L2 slices looking up the extrapolated L2 reads and writes at peak (`_l2_floor_cycles`: the
  loop's kept iterations can set a rate of issue that the left-out ones' L2 traffic could
  not sustain: 2.1 times the slices' peak on the TMA GEMM at 4096^3);
- whether the rate had settled (`unsettled_pct`: waves in step, or a rate from two block ends
  that the rate fitted to every end disagrees with over the extrapolated blocks, a rate still in
  its start transient): the engine times an unsettled sample again with more waves in 'auto'
  mode (`engine.TimingEngine.run`);
- a standard error of that extrapolation (`_sampling_error`,
  `timing__sampling_error_pct`), from the spread of the simulated blocks' durations (of the
  remaining waves, and of the blocks of the SMs not simulated, taken as the timed ones), plus
  how far the rate rests on two block ends (`block_spread.fitted_rate`: the rate fitted to every end after
  the first wave, against the two-end one, over the extrapolated blocks);
- what the sample cannot see (`reuse_note`): where the L2 hit rate of data that blocks
  far apart in the grid share depends on whether its reuse distance fits the L2, the
  sampled SMs (which do not run those blocks together) rely on an estimate of the whole
  L2 (`sampling/warming.py`) that cannot tell a random walk (Che's approximation) from an
  in-order one (LRU: all or nothing at the capacity knee). The line touches whose hit or
  miss the two disagree on, times the line size, bound the DRAM bytes the sample may have
  wrong (`timing__sampling_dram_error_pct` adds them to the statistical error); their
  transfer time at the DRAM's peak bounds the time it may have wrong (added to
  `timing__sampling_error_pct`). When they exceed `UNCERTAIN_SHARE` of the grid's line
  touches (or, after the run, `UNCERTAIN_DRAM_SHARE` of its DRAM bytes),
  `timing__sampling_note` says so, and in 'auto' mode a launch of at most
  `FULL_FALLBACK_WARPS` warps and `functional_budget` PTX warp instructions is simulated in
  full instead (`engine.TimingEngine`); with `TimingOptions.denser_sample_factor` above 1, a
  larger one with up to that many times the SMs (`denser_sms`): the blocks of one wave that
  share lines then run together in the sample more often, and the sample sees their reuse
  itself (whether such blocks stay in step, and so share their fetches, is what no estimate
  from a few SMs can tell: an H100 running the TMA GEMM at 8192^3 reads B 41 times, an H200
  80 times, for 128 block rows). Off by default: with 4, the tensor set's DRAM reads come
  out far closer to the GPU's (MAPE 110% -> 43% on the H100), but the mma.sync and wmma
  GEMMs' durations, already short of the GPU's, shorter still (their remaining error is
  elsewhere), held-out durations a little worse, at 2-3x the time of those launches
  (benchmarks/results/denser_sample_experiment.json);
- the memory system scaled to the sampled SMs' share (fewer L2 slices and DRAM channels
  queue differently from the whole): not derived but measured, `SCALING_TIME_PCT` and
  `SCALING_DRAM_PCT` times the share of SMs not simulated, the largest differences of
  sampled to full simulation over benchmarks/sampling_error.py's programs (time up to
  3.7%, DRAM bytes up to 0.8%), rounded up.
Every estimate is a percentage of the sampled prediction. Measured against full simulation:
benchmarks/sampling_error.py (results in benchmarks/results/sampling_error.json).

A unit the engine (`engine.TimingEngine`) builds with each launch plan and owns: it is given
what it reads (the simulated SMs, the block times `TimingStats`, the memory system, the issue
streams, the footprint) and the sample's shape (`SampleShape`), keeps its own state (the timed
straggler), and answers its questions: before the run, the engine's `reuse_note`,
`full_affordable` and `denser_sms`; after it, the metrics builder's (`metrics_builder.py`) `cycles`, `errors` and
`reuse_note`.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from gpusim.timing.sampling.block_spread import fitted_rate, slots_after_first_wave, statistical_error, unsteady_share
from gpusim.timing.sampling.loop_rate import loop_rates
from gpusim.timing.sampling.phases import phase_floor_cycles
from gpusim.timing.sampling.sample_blocks import place_in_round, sampled_blocks


UNCERTAIN_SHARE = 0.1           # share of the grid's line touches whose hit or miss the sample cannot tell
FULL_FALLBACK_WARPS = 1 << 17    # 'auto' mode: such a launch is simulated in full up to this many warps
UNCERTAIN_DRAM_SHARE = 0.25     # ... or of its DRAM bytes (after the run)
SCALING_TIME_PCT = 5.0           # sampled mode: the scaled memory system's own error, time (module docstring)
SCALING_DRAM_PCT = 2.0           # ... and DRAM bytes
IDLE_SLOTS_FACTOR = 2.0          # straggler: the time after the first wave over the slots' busy time (`_straggler`)


@dataclass(frozen=True)
class SampleShape:
    """What a launch's sample is: the timing mode ('full' or 'sampled'), the grid's blocks and
    warps per block, the SMs simulated, the blocks they would run (`blocks_share`) and those
    timed (`blocks_simulated`), the blocks an SM holds at once (`blocks_per_sm`) and one wave
    of the simulated SMs (`wave_blocks`); PTX warp instructions of block 0
    (`block_ptx_work`), the 32-byte global sectors a block's bulk and tensor copies moved on
    average over the blocks executed so far (`block_bulk_sectors`: each costs the simulator
    about what a warp instruction does, functional and timing, where one TMA copy is hundreds
    of them) and the functional budget (`TimingOptions`)."""
    mode: str
    nblocks: int
    warps_per_block: int
    sms_simulated: int
    blocks_share: int
    blocks_simulated: int
    blocks_per_sm: int
    wave_blocks: int
    block_ptx_work: int
    functional_budget: int | None
    block_bulk_sectors: float = 0.0


class Extrapolation:
    """What a sampled launch extrapolates and how far to trust it (module docstring): a unit
    of `TimingEngine`, built once the engine has its SMs, memory system and footprint."""

    def __init__(self, spec, shape: SampleShape, stats, sms, memory, issue, footprint):
        self.spec = spec
        self.shape = shape
        self.stats = stats            # engine.TimingStats: the timed blocks' start and end cycles
        self.sms = sms
        self.memory = memory
        self.issue = issue            # issue_stream.IssueStreams: what loop sampling kept and left out
        self.footprint = footprint    # warming.SharedFootprint or None
        self.straggler_cycles = 0.0   # set by `cycles`: the timed straggler's duration (`_straggler`), else 0
        self.in_step = 0.0            # set by `cycles`: the slots' idle share where waves kept in step and the
        #                               share was replayed (`unsteady_share`, no straggler), else 0
        self.rate_disagreement = 0.0  # set by `cycles`: cycles the two-end and fitted rates differ by (`fitted_rate`)

    # the sample's shape, by the names the formulas use
    mode = property(lambda self: self.shape.mode)
    sms_simulated = property(lambda self: self.shape.sms_simulated)
    blocks_share = property(lambda self: self.shape.blocks_share)
    blocks_simulated = property(lambda self: self.shape.blocks_simulated)
    wave_blocks = property(lambda self: self.shape.wave_blocks)
    bps = property(lambda self: self.shape.blocks_per_sm)

    def _reuse(self, ran: bool = True) -> tuple[float, float, int | None]:
        """warming.reuse_uncertainty of the footprint; before the run (`ran` False) against
        Che's estimate, as the share has fetched nothing yet."""
        fp = self.footprint
        if fp is None or self.mode != "sampled":
            return 0.0, 0.0, None
        h = self.spec.hbm
        return fp.reuse_uncertainty(self.blocks_simulated / self.shape.nblocks if ran else None,
                                    h.access_granularity_bytes / self.spec.l2.line_bytes)

    def reuse_note(self, ran: bool = True, dram_bytes: float | None = None, time_ns: float | None = None) -> str:
        """'' or a sentence: the sample cannot see a reuse distance (module docstring); after
        the run also when the bytes it cannot tell are `UNCERTAIN_DRAM_SHARE` of `dram_bytes`
        and (given the kernel's `time_ns`) their transfer at the DRAM's peak would take at least
        `SCALING_TIME_PCT` of it: a few uncertain lines of a kernel that hardly touches the DRAM
        change neither its time nor its bytes by more than the scaled memory's own error."""
        unsure, total, region = self._reuse(ran)
        late = (f"a timed block lasted {self.straggler_cycles:,.0f} cycles, and such blocks, not the blocks' rate, "
                "set the sample's end: where they start in the whole grid, which sets its end, a sample "
                f"of {self.sms_simulated} SMs cannot see") if ran and self.straggler_cycles else ""
        unsteady = self.unsteady_share() if ran and not late else 0.0
        if unsteady:
            late = (f"after the first wave the timed blocks kept the sample's slots busy {100 * (1 - unsteady):.0f}% "
                    "of the time (waves in step, idle at their tails): the share was replayed from the timed "
                    "blocks' durations on its slots, out of step as the whole grid's are, and may be up to "
                    f"{100 * unsteady:.0f}% fast; more waves (TimingOptions.max_waves; mode='auto' times four times "
                    "the waves where it can) or mode='full' settle it")
        if region is None:
            return late
        unsure_bytes = unsure * self.spec.l2.line_bytes
        bytes_per_ns = self.spec.hbm_bytes_per_cycle / self.spec.cycle_ns
        if unsure < UNCERTAIN_SHARE * max(total, 1.0) and not (
                dram_bytes and unsure_bytes >= UNCERTAIN_DRAM_SHARE * dram_bytes
                and (time_ns is None or 100.0 * unsure_bytes / bytes_per_ns >= SCALING_TIME_PCT * time_ns)):
            return late
        spec = self.spec
        l2_mb = spec.l2.size_bytes / 1e6
        what = self.footprint.describe_region(region, spec.l2.line_bytes)
        return (f"{100 * unsure / total:.0f}% of the line touches are re-reads of {what}, whose L2 hits depend on "
                f"whether its reuse distance fits the {l2_mb:,.1f} MB L2, which a sample of {self.sms_simulated} SMs "
                "cannot see" + (f"; {late}" if late else ""))

    def full_affordable(self) -> bool:
        """Whether simulating every block stays within FULL_FALLBACK_WARPS warps and the
        functional budget (PTX warp instructions estimated from block 0, and a warp
        instruction's worth for each sector its bulk copies move)."""
        sh = self.shape
        budget = sh.functional_budget
        return (sh.nblocks * sh.warps_per_block <= FULL_FALLBACK_WARPS
                and (budget is None or (sh.block_ptx_work + sh.block_bulk_sectors) * sh.nblocks <= budget))

    def denser_sms(self, factor: int) -> int:
        """The SMs a denser sample simulates where the full fallback is not affordable: up to
        `factor` times this sample's, as many as one wave of their blocks' functional work (PTX
        warp instructions of block 0 and the sectors a block's bulk copies move, as in
        `full_affordable`) keeps within the functional budget; 0 when that is no more SMs than
        now. More SMs run more of a wave's blocks together, so the sample itself sees the reuse
        of the lines they share while they run (a GEMM's B strips read by the block rows one
        wave holds: on an H100 the TMA GEMM at 8192^3 reads B 41 times, not once per block row,
        because blocks that wait on the same DRAM fetches stay in step)."""
        sh = self.shape
        n_sm = self.spec.sm_count
        want = min(n_sm, factor * sh.sms_simulated)
        work = (sh.block_ptx_work + sh.block_bulk_sectors) * sh.blocks_per_sm
        if sh.functional_budget is not None and work > 0:
            want = min(want, int(sh.functional_budget // work))
        return want if want > sh.sms_simulated else 0

    def errors(self, cycles: float, m: dict) -> tuple[float, float]:
        """(time, DRAM bytes) error estimates in percent: the statistical one of `_sampling_error`
        plus what the sample cannot see of the L2's reuse (module docstring)."""
        stat = self._sampling_error(cycles)
        if self.mode != "sampled":
            return stat, stat
        if cycles > 0:          # where the unseen copies of a straggler start (`_straggler`): up to its length later
            stat += 100.0 * self.straggler_cycles / cycles
            if not (self.straggler_cycles or self.in_step):   # the rate from two block ends against the fitted one
                stat += 100.0 * self.rate_disagreement / cycles
        scaled = 1.0 - self.sms_simulated / self.spec.sm_count        # 0 when every SM is simulated
        t_err, d_err = stat + SCALING_TIME_PCT * scaled, stat + SCALING_DRAM_PCT * scaled
        t_err += 100.0 * self.unsteady_share() * max(0.0, cycles - max(self.stats.block_end.values(), default=0.0)) / cycles \
            if cycles > 0 else 0.0
        unsure = self._reuse()[0] * self.spec.l2.line_bytes
        if not unsure:
            return t_err, d_err
        dram = m.get("dram__bytes_read.sum", 0.0) + m.get("dram__bytes_write.sum", 0.0)
        t_ns = m["gpu__time_duration.sum"]
        bytes_per_ns = self.spec.hbm_bytes_per_cycle / self.spec.cycle_ns
        return t_err + 100.0 * unsure / bytes_per_ns / t_ns, d_err + 100.0 * unsure / max(dram, 1.0)

    def _loop_stretch(self, sm, rate: float | None) -> float:
        """Cycles loop sampling left out on `sm`: the SASS instructions left out, issued at the
        loop's steady-state `rate` (`loop_rate.loop_rates`); without one, its loop time (first LOOP to
        last SKIP) scaled by left out over kept instructions (issue_stream.py)."""
        if sm.loop_skipped <= 0:
            return 0.0
        if rate:
            return sm.loop_skipped / rate
        if sm.loop_kept <= 0 or sm.loop_end <= sm.loop_start:
            return 0.0
        return (sm.loop_end - sm.loop_start) * sm.loop_skipped / sm.loop_kept

    def cycles(self) -> float:
        """The kernel's cycles (module docstring)."""
        ends = self.stats.block_end
        # a kernel ends when its memory operations have drained (stores, reductions in flight)
        t_sim = max([max(ends.values()) if ends else 0.0] + [sm.l1.drain_time for sm in self.sms])
        stretch = max([self._loop_stretch(sm, r) for sm, r in zip(self.sms, loop_rates(self.sms))] + [0.0])
        if stretch:
            # the left-out iterations' DRAM traffic cannot move faster than the simulated SMs'
            # share of the peak (a loop whose early iterations filled the L2 at full speed), nor
            # their L2 lookups faster than the simulated slices' peak
            stretch = max(stretch, self._dram_floor_cycles(1.0) - t_sim, self._l2_floor_cycles(1.0) - t_sim)
        self.straggler_cycles = 0.0
        self.in_step = 0.0
        self.rate_disagreement = 0.0
        if self.blocks_simulated >= self.blocks_share:
            return t_sim + stretch
        # extrapolate the remaining waves at the steady-state rate after the first wave, stretched
        # like the simulated time where loop sampling left iterations out
        order = sorted(ends.values())
        if len(order) > self.wave_blocks:            # blocks finishing after the first wave set the rate
            first = self.wave_blocks                 # (block end to block end: the drain counts once, in t_sim)
            t_first = order[first - 1]
            per_block = (order[-1] - t_first) / (len(order) - first) if order[-1] > t_first else t_sim / len(order)
            if order[-1] > t_first:                  # how far the rate rests on how the waves' ends lined up
                self.rate_disagreement = abs(per_block - fitted_rate(order, first)) * \
                    (self.blocks_share - self.blocks_simulated)
        else:                                        # one wave simulated: it repeats
            per_block = t_sim / max(len(order), 1)
        if t_sim > 2 * order[-1]:
            # the memory work outlives the blocks (reductions queued at a hot L2 sector): a
            # backlog that every simulated block fed from the start, so every block, the
            # first wave's included, sets its rate
            per_block = t_sim / len(order)
        if t_sim > 0:
            per_block *= (t_sim + stretch) / t_sim
        total = t_sim + stretch + (self.blocks_share - self.blocks_simulated) * per_block
        self.straggler_cycles = self._straggler(order, t_sim)
        self.in_step = 0.0 if self.straggler_cycles else self.unsteady_share()
        if self.straggler_cycles or self.in_step:
            # one block's end, not the rate, set the simulated time, or the waves kept in step
            # (idle at their tails, which the whole grid's, out of step, are not): replay the share
            # on the slots
            share_end, timed_end = self._replayed_cycles()
            total = (share_end + max(t_sim - timed_end, 0.0)) * ((t_sim + stretch) / t_sim if t_sim > 0 else 1.0)
        # likewise the remaining waves' (the first waves wrote into an L2 share that was still empty)
        scale = self.blocks_share / max(self.blocks_simulated, 1)
        dram, l2 = self._dram_floor_cycles(scale), self._l2_floor_cycles(scale)
        return max(total, dram, l2, self._phase_floor_cycles(dram, l2))

    def _slots_after_first_wave(self, order: list) -> tuple[float, float]:
        """`block_spread.slots_after_first_wave` of the timed blocks."""
        return slots_after_first_wave(self.stats.block_end, self.stats.block_start, order, self.wave_blocks,
                                      self.spec.launch.block_dispatch_cycles, self.sms_simulated)

    def unsteady_share(self) -> float:
        """`block_spread.unsteady_share` of a sampled launch that extrapolates (0 otherwise)."""
        if self.mode != "sampled" or self.blocks_simulated >= self.blocks_share:
            return 0.0
        return unsteady_share(*self._slots_after_first_wave(sorted(self.stats.block_end.values())))

    def unsettled_pct(self, cycles: float | None = None) -> float:
        """How far the extrapolated block rate had not settled, in percent of the predicted
        `cycles` (`cycles()` where not given; `timing__sampling_unsettled_pct`): the slots' idle
        share after the first wave (`unsteady_share`: waves in step), or the cycles the rate from
        the first wave's last end to the last block's and the one fitted to every end after the
        first wave differ by over the extrapolated blocks (a rate still in its start transient:
        `gather_small_table/large`'s 4-wave sample ended at 38.7, 26.4, 32.1 cycles a block a
        wave, its 16-wave one settled at 22-24), whichever is larger."""
        c = self.cycles() if cycles is None else cycles
        return 100.0 * max(self.unsteady_share(), self.rate_disagreement / c if c > 0 else 0.0)

    def _straggler(self, order: list, t_sim: float) -> float:
        """The longest timed block's duration when the simulated end is a few long blocks', not
        the blocks' finishing rate; else 0. That is so when the longest block outlasts the
        simulated time after the first wave, or when the simulated SMs' slots stood mostly idle
        in that time: the blocks finishing after the first wave kept the `wave_blocks` slots
        (or, where blocks are dispatch-bound, the SMs' block dispatch) busy for less than
        1/`IDLE_SLOTS_FACTOR` of it, the rest being the wait for the last long blocks to end."""
        ends, starts = self.stats.block_end, self.stats.block_start
        if len(order) <= self.wave_blocks or t_sim <= 0:
            return 0.0
        longest = max(ends[b] - starts[b] for b in ends)
        t_first = order[self.wave_blocks - 1]
        if longest > t_sim - t_first:
            return longest
        elapsed, busy = self._slots_after_first_wave(order)
        return longest if elapsed > IDLE_SLOTS_FACTOR * busy else 0.0

    def _replayed_cycles(self) -> tuple[float, float]:
        """(the share's end, the timed blocks' end) when blocks hold their SM slots for their
        simulated durations, each block in dispatch order taking the slot that frees first (a
        block holds its slot until its last warp ends). Where the timed blocks' durations depend
        on their place in the grid (rank correlation with the round, over the rounds after the
        first wave's, beyond 3 standard errors: sorted or triangular work), a block not timed lasts as the timed block of the nearest
        sampled round at its place in the round, on the simulated SMs' slots; otherwise the
        durations are exchangeable and the whole grid is replayed on every SM's slots with the
        timed durations dealt out in turn (seeded permutations), so that copies of a long block
        start all through the grid, the last of them near its end, as they do on the GPU."""
        ends, starts = self.stats.block_end, self.stats.block_start
        n_sm, sms, slots = self.spec.sm_count, self.sms_simulated, max(self.wave_blocks, 1)
        timed = np.fromiter(ends, np.int64, len(ends))
        dur = np.array([ends[b] - starts[b] for b in timed])
        began = np.argsort(np.array([starts[b] for b in timed]), kind="stable")
        timed_end = _list_schedule(dur[began], slots)
        nblocks = self.shape.nblocks
        later = timed // n_sm >= self.bps                # rounds after the first wave's (no cold start)
        if later.sum() > 2 and abs(_rank_correlation(timed[later] // n_sm, dur[later])) * math.sqrt(
                later.sum() - 1) <= 3.0:
            rng = np.random.default_rng(0)
            dealt = np.concatenate([rng.permutation(dur) for _ in range(-(-nblocks // len(dur)))])[:nblocks]
            return _list_schedule(dealt, n_sm * self.bps), timed_end
        rounds = np.unique(timed // n_sm)
        table = np.full((len(rounds), sms), np.nan)
        table[np.searchsorted(rounds, timed // n_sm), place_in_round(timed, n_sm, sms, nblocks)] = dur
        fill = np.nanmean(table, axis=1)
        table = np.where(np.isnan(table), fill[:, None], table)
        share = np.asarray(sampled_blocks(nblocks, self.blocks_share, n_sm, sms, self.bps))
        r = share // n_sm
        k = np.clip(np.searchsorted(rounds, r), 1, max(len(rounds) - 1, 1))
        if len(rounds) > 1:
            k = np.where(np.abs(rounds[k - 1] - r) <= np.abs(rounds[k] - r), k - 1, k)
        else:
            k = np.zeros_like(r)
        return _list_schedule(table[k, place_in_round(share, n_sm, sms, nblocks)], slots), timed_end

    def _phase_floor_cycles(self, dram: float, l2: float) -> float:
        """`phases.phase_floor_cycles` of the timed blocks, given the share's DRAM and L2 floors."""
        return phase_floor_cycles(self.stats.block_end, self.stats.block_l2_bytes, self.spec.sm_count,
                                  max(self.bps, 1), self.shape.nblocks, max(dram, l2),
                                  self.spec.launch.block_dispatch_cycles)

    def _dram_floor_cycles(self, blocks_scale: float) -> float:
        """The least time in which the simulated SMs' share of the DRAM (its peak less the share
        refresh takes) moves the simulated DRAM bytes, scaled by `blocks_scale` and by what loop
        sampling left out; the writes loop sampling left out as every sector they make dirty
        (`L2Slices.dirtied_sectors`, at the kept part's rate) beside what the kept part wrote back."""
        mem = self.memory.counters()
        s_w = self.issue.traffic_scale("dram__bytes_write.sum")
        written = mem.get("dram__bytes_write.sum", 0.0)
        if s_w > 1.0:
            # the writes of the iterations loop sampling left out: every sector they make dirty
            # (the L2 ends as dirty as it is now), beside what the kept part wrote back; its
            # stores went into the L2 faster than their write-backs left, so its written bytes
            # alone, scaled, fall short. (The unsimulated blocks' write-backs are the stand-ins'
            # among the written bytes: sampling/standins.py.)
            dirtied = self.memory.l2.slices.dirtied_sectors * self.spec.l2.sector_bytes
            written = max(written * s_w, written + dirtied * (s_w - 1.0))
        dram = (mem.get("dram__bytes_read.sum", 0.0) * self.issue.traffic_scale("dram__bytes_read.sum") + written) \
            * blocks_scale
        h, spec = self.spec.hbm, self.spec
        peak = spec.hbm_bytes_per_cycle * self.sms_simulated / spec.sm_count * (1.0 - h.t_rfc_ns / h.t_refi_ns)
        return dram / peak

    def _l2_floor_cycles(self, blocks_scale: float) -> float:
        """The least time in which the simulated L2 slices, at their peak, take the bytes booked
        at them (`L2Slices.servers`: lookups, a write at its slice's write bandwidth), scaled by
        `blocks_scale` and by what loop sampling left out (the writes' share with the stores,
        the rest with the loads); where writes have ports of their own (`l2.write_port`), the
        busier of the two."""
        l2 = self.spec.l2
        slices = self.memory.l2.slices
        read_scale = self.issue.traffic_scale("lts__t_sectors_op_read.sum")
        write_scale = self.issue.traffic_scale("lts__t_sectors_op_write.sum")
        booked = sum(s.bytes_served for s in slices.servers)
        if slices.write_servers is not slices.servers:
            written = sum(s.bytes_served for s in slices.write_servers)
            scaled = max(booked * read_scale, written * write_scale)
        else:
            write_cost = l2.bandwidth_bytes_per_cycle_per_slice / l2.write_bandwidth_bytes_per_cycle_per_slice
            written = min(booked, self.memory.counters().get("lts__t_sectors_op_write.sum", 0.0) * l2.sector_bytes
                          * write_cost)
            scaled = (booked - written) * read_scale + written * write_scale
        return scaled * blocks_scale / slices.bytes_per_cycle

    def _sampling_error(self, cycles: float) -> float:
        """`block_spread.statistical_error` of the timed blocks, in percent of `cycles`."""
        sampled = self.mode == "sampled" and self.sms_simulated < self.spec.sm_count
        return statistical_error(self.stats.block_end, self.stats.block_start, cycles,
                                 self.shape.nblocks if sampled else None, self.issue.kept[0], self.issue.skipped[0])

def _rank_correlation(a, b) -> float:
    """Spearman's rank correlation of `a` and `b` (ties ranked in order); 0 when either is constant."""
    ra = np.argsort(np.argsort(a, kind="stable"), kind="stable").astype(float)
    rb = np.argsort(np.argsort(b, kind="stable"), kind="stable").astype(float)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def _list_schedule(durations, slots: int) -> float:
    """When the last of `durations` ends, each started in order on the first of `slots`
    free slots (all free at 0)."""
    free = [0.0] * min(slots, len(durations))
    for d in durations:
        t = heapq.heappop(free) + float(d)
        heapq.heappush(free, t)
    return max(free, default=0.0)
