"""Phases along the grid: where the blocks' L2 traffic changes in stretches longer than a wave,
the whole GPU runs each stretch on its own (one DRAM-bound, the next held at the SMs' block
dispatch rate), where a sample's timed rounds, spread over the grid, run short stretches of each
side by side and average them (held-out 2's `bitonic_step_global/far`: four stretches of 16,384
blocks, compare-and-swap and empty in turn; docs/mechanisms_24.md section 46).
`phase_floor_cycles` is the least time the phases take one after another, a floor under the
extrapolated time (`extrapolation.Extrapolation.cycles`). A function of the timed blocks' ends
and L2 bytes (`engine.TimingStats`); not simulation: an estimate (this package's docstring).
"""
from __future__ import annotations

import math

import numpy as np

PHASE_EVIDENCE = 3.0             # the spread rounds' traffic correlated with the next round's beyond this
#                                  many standard errors of white noise


def phase_floor_cycles(ends: dict, l2_bytes: dict, sm_count: int, blocks_per_sm: int, nblocks: int,
                       memory_cycles: float, dispatch_cycles: float) -> float:
    """The least time the simulated SMs' share takes where its phases run one after another.
    Each grid round (`sm_count` blocks) takes the L2 bytes a block moved in the nearest timed
    round (`ends`: the timed blocks' end cycles, by block; `l2_bytes`: their L1-L2 bytes); the
    share's memory floor (`memory_cycles`: the longer of its DRAM and L2 floors) is dealt over the
    rounds in proportion, and every round deals one block to each simulated SM (`dispatch_cycles`
    each); a wave's worth of rounds (`blocks_per_sm`) takes the longer of its memory time and its
    dispatch time, and the phases add up. Only where the timed rounds after the first wave show
    stretches: their traffic correlated with the next timed round's beyond PHASE_EVIDENCE
    standard errors of white noise (traffic that changes from round to round, finer than the
    sample's spacing, would alias into stretches that are not there, and the GPU runs such rounds
    together); 0 otherwise, with fewer than two timed rounds, and where nothing moved."""
    timed = np.fromiter(ends, np.int64, len(ends))
    rounds, k = np.unique(timed // sm_count, return_inverse=True)
    if len(rounds) < 2:
        return 0.0
    traffic = np.bincount(k, weights=[l2_bytes.get(int(b), 0.0) for b in timed]) / np.bincount(k)
    later = traffic[rounds >= blocks_per_sm]         # the rounds spread over the grid after the first wave's
    if len(later) < 3 or lag1_correlation(later) * math.sqrt(len(later)) <= PHASE_EVIDENCE:
        return 0.0                                   # no stretches longer than the spread's spacing
    grid = np.arange(-(-nblocks // sm_count))
    j = np.clip(np.searchsorted(rounds, grid), 1, len(rounds) - 1)
    j = np.where(np.abs(rounds[j - 1] - grid) <= np.abs(rounds[j] - grid), j - 1, j)
    if traffic[j].sum() <= 0:
        return 0.0
    memory = memory_cycles * traffic[j] / traffic[j].sum()
    starts = np.arange(0, len(grid), blocks_per_sm)
    per_wave = np.add.reduceat(memory, starts)
    dispatch = dispatch_cycles * np.diff(np.append(starts, len(grid)))
    return float(np.maximum(per_wave, dispatch).sum())


def lag1_correlation(x) -> float:
    """The correlation of `x` with itself one step on (0 when it is constant)."""
    d = np.asarray(x, dtype=float) - np.mean(x)
    den = float(np.dot(d, d))
    return float(np.dot(d[:-1], d[1:])) / den if den > 0 else 0.0
