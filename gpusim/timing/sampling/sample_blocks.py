"""Which of a grid's blocks a sampled launch times: the simulated SMs' round-robin share of
every round of the grid (`sampled_blocks`), its place in a round moving from round to round
(`round_offset`, `place_in_round`). Called by the engine (`timing/engine.py`) when it plans a
sampled launch; what is extrapolated from those blocks is `extrapolation.py`'s."""
from __future__ import annotations

import math

import numpy as np


GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0    # the residues of successive rounds' samples: its multiples mod 1


def round_offset(k: int, sm_count: int, nblocks: int | None = None) -> int:
    """Where in round `k` (blocks k * sm_count ...) the simulated SMs' blocks begin: 0 in the
    first round, then the golden ratio's multiples, which spread over every place in a round
    as evenly as any sequence does (`sampled_blocks`); 0 in a last round of fewer than
    `sm_count` of the grid's `nblocks` (its first blocks, as many as the share counts)."""
    if k == 0 or (nblocks is not None and (k + 1) * sm_count > nblocks):
        return 0
    return int(k * GOLDEN % 1.0 * sm_count)


def place_in_round(b, sm_count: int, sms: int, nblocks: int):
    """The place of the simulated SMs' block `b` (an int or an array) among its round's `sms`."""
    k = np.asarray(b) // sm_count
    off = np.asarray([round_offset(int(x), sm_count, nblocks) for x in np.ravel(k)]).reshape(np.shape(k))
    return (np.asarray(b) - k * sm_count - off) % sm_count


def sampled_blocks(nblocks: int, simulated: int, sm_count: int, sms: int, bps: int):
    """The grid's blocks the `sms` simulated SMs run, in dispatch order (a range when they
    are every SM). The block scheduler deals blocks out over the GPU's `sm_count` SMs, the
    first wave round-robin, the rest to whichever SM frees a slot first, so the simulated
    SMs' share of the launch is `sms` consecutive blocks out of every `sm_count` ("rounds"),
    from across the whole grid. Which `sms` of a round is not fixed by the hardware after the
    first wave, and a fixed place would be a sample with the SM count as its period, which a
    2-D grid whose rows are near a multiple of it aliases (Mandelbrot on 1024^2 in 16x16
    blocks, 64 a row and 132 SMs: the first 8 of every 132 blocks do 0.76x the grid's mean
    work); so the place moves from round to round (`round_offset`: 1.02x there).
    When only `simulated` of those are timed, the first wave's rounds (`bps`, the blocks
    each SM holds at once) come first, then rounds spread evenly to the end of the grid:
    blocks whose work depends on their position (sorted or skewed data, a triangular
    loop) are sampled from everywhere, not only from the front."""
    if sms >= sm_count:
        return range(min(simulated, nblocks))
    n_rounds = -(-nblocks // sm_count)

    def round_blocks(k: int) -> list:
        first, off = k * sm_count, round_offset(k, sm_count, nblocks)
        return sorted(b for b in (first + (off + j) % sm_count for j in range(sms)) if b < nblocks)

    share = (n_rounds - 1) * sms + len(round_blocks(n_rounds - 1))     # every round but the last is full
    if simulated >= share:
        picked = range(n_rounds)
    else:
        need = -(-simulated // sms)                      # rounds to time
        first = min(bps, need)
        rest = need - first
        # a last round the simulated SMs cannot fill is left out of a spread that skips rounds: it is
        # one round of the grid's but would be one of the sample's few, and its missing blocks
        # would leave some of the simulated SMs' slots idle at the sample's end (`_spread_end`)
        end = _spread_end(n_rounds, len(round_blocks(n_rounds - 1)), sms, first + rest)
        tail = end - first
        spread = sorted({first + round(i * (tail - 1) / max(rest - 1, 1)) for i in range(rest)}) if rest > 1 \
            else [end - 1] * (rest == 1)
        picked = list(range(first)) + spread
    return [b for k in picked for b in round_blocks(k)][:simulated]


def _spread_end(n_rounds: int, last_round_blocks: int, sms: int, rounds_timed: int) -> int:
    """The rounds a sample's spread reaches, 0 .. end - 1: every round, except a last one that
    holds fewer than `sms` blocks when the sample times fewer rounds than the grid has. Such a
    round is one of the grid's `n_rounds` but would be one of the sample's `rounds_timed`: its
    blocks would weigh n_rounds / rounds_timed times their share, and the slots its missing
    blocks leave idle would stand idle in the sample's last wave, which sets the rate the rest
    of the grid is extrapolated at (Triton's 128x128 matmul at 8192^3: 4,096 blocks, a last
    round of 4 on 132 SMs; with it 4 of the 8 simulated SMs ran one block fewer, the sample's
    L2 slices stood idle at its end, and the H200's time came out 11% long against 2% short
    without it, docs/mechanisms_24.md section 33)."""
    if last_round_blocks < sms and rounds_timed < n_rounds and n_rounds > 1:
        return n_rounds - 1
    return n_rounds
