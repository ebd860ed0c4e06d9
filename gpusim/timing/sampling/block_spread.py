"""How far a sample's block times let its extrapolation be trusted: the spread of the timed
blocks' durations (`statistical_error`) and whether the waves after the first ran in step,
idle at their tails (`slots_after_first_wave`, `unsteady_share`). Functions of the block
start and end cycles the SMs recorded (`engine.TimingStats`), called by
`extrapolation.Extrapolation` for `timing__sampling_error_pct`, `timing__sampling_note` and its
straggler test. Not simulation: estimates (this package's docstring).
"""
from __future__ import annotations

import math

import numpy as np

UNSTEADY_FACTOR = 1.4            # waves in step: the time after the first wave more than this over the slots' busy time


def slots_after_first_wave(ends: dict, starts: dict, order: list, wave_blocks: int, dispatch_cycles: float,
                           sms: int) -> tuple[float, float]:
    """(the simulated time after the first wave, the slots' busy time in it) for block `ends` and
    `starts` (cycles by block) and `order`, the end cycles sorted: the durations of the blocks
    ending after the first `wave_blocks` over that many slots, or, where blocks are dispatch-bound,
    their dispatch (`dispatch_cycles` each) over the `sms` simulated SMs; (0, 0) with one wave."""
    if len(order) <= wave_blocks:
        return 0.0, 0.0
    t_first = order[wave_blocks - 1]
    later = [ends[b] - starts[b] for b in ends if ends[b] > t_first]
    busy = max(sum(later) / wave_blocks, len(later) * dispatch_cycles / sms)
    return order[-1] - t_first, busy


def unsteady_share(elapsed: float, busy: float) -> float:
    """How far the rate a sample extrapolates may be a transient's: the slots' idle share of the
    time after the first wave (1 - busy / elapsed) where that time is more than UNSTEADY_FACTOR
    times the busy time, else 0. Blocks dealt in waves that stay in step (a light first wave,
    then heavy blocks of varying work that all start together: a Mandelbrot image's top rows,
    then its middle) leave the slots idle at each wave's tail, which the whole grid's blocks,
    out of step after a few waves, do not: the sample's rate may then be slower than the whole
    grid's by up to that idle share, so the extrapolation replays the share's blocks on the
    slots instead (`Extrapolation.cycles`) (held-out 2's `mandelbrot_f32/full2k`: 1.60, the 4-wave
    sample +24% on full simulation, 8 waves +3%; `bitonic_step_global` 1.49 / 1.78; the steady
    sampled launches of held-out 2 and the calibration set's saxpy, const_lookup and
    histogram_global at large 1.0-1.36)."""
    return 1.0 - busy / elapsed if elapsed > UNSTEADY_FACTOR * busy > 0 else 0.0


def statistical_error(ends: dict, starts: dict, cycles: float, nblocks: int | None, kept: int, skipped: int) -> float:
    """A standard error, in percent of the predicted `cycles`, of what sampling extrapolated:
    the remaining waves (from the spread of the simulated blocks' durations) and the
    iterations loop sampling left out (`kept` and `skipped` SASS instructions; taken as varying
    as the blocks do). With SMs not simulated (`nblocks`, the grid's, given), every block of
    theirs is taken to work as the timed blocks do on average: the share's time is then as
    uncertain as the timed blocks' mean duration is as an estimate of the grid's (its standard
    error, with the finite population correction), even where the share's every block is timed."""
    if cycles <= 0 or len(ends) < 2:
        return 0.0
    dur = np.array([ends[b] - starts[b] for b in ends])
    cv = float(dur.std() / dur.mean()) if dur.mean() > 0 else 0.0
    t_sim = max(ends.values())
    waves_part = max(0.0, cycles - t_sim) / cycles
    if nblocks is not None:
        waves_part = max(waves_part, math.sqrt(max(0.0, 1.0 - len(dur) / nblocks)))
    loop_part = skipped / (kept + skipped) if kept + skipped else 0.0
    return 100.0 * cv * (waves_part + loop_part) / math.sqrt(len(dur))


def fitted_rate(order: list, first: int) -> float:
    """The least-squares slope of the timed blocks' ends after the first `first` (`order`: every
    timed block's end, sorted) against their rank, the first wave's last end as rank 0: the rate
    the ends give together, where `Extrapolation.cycles` takes the two extreme ones. The two differ
    where the waves' ends bunch and the bunches' extremes fall by chance (a few hundred cycles at
    each SM's start moved `conv2d_3x3_global/s4096`'s two-end rate 52.9 -> 45.5 cycles a block, the
    fitted one 48.6 -> 47.9; 49.8 with 16 waves: docs/mechanisms_24.md section 41); the difference,
    over the extrapolated blocks, is part of `timing__sampling_error_pct`."""
    ends = np.asarray(order[first - 1:], dtype=float)
    if len(ends) < 3:
        return (ends[-1] - ends[0]) / max(len(ends) - 1, 1)
    rank = np.arange(len(ends), dtype=float)
    rank -= rank.mean()
    return float(np.dot(rank, ends - ends.mean()) / np.dot(rank, rank))
