"""Sampled timing: the estimates, kept apart from the exact model.

Everything else under `gpusim/timing/` simulates what it times: every simulated warp's
instructions issue, every access of a simulated block goes through the L1, L2 and DRAM
models. The code here does not simulate; it estimates what was not simulated, and how far
to trust that:

- `sample_blocks.py`: which blocks a sampled launch times (`sampled_blocks`): the simulated
  SMs' round-robin share of every round of the grid, its place moving from round to round.
- `extrapolation.py`: the kernel's cycles extrapolated from the timed blocks, the loop-sampling stretch, the DRAM floor, and
  the error estimates (`timing__sampling_error_pct`, `timing__sampling_note`):
  `Extrapolation`, a unit the engine owns (given the sample's shape, `SampleShape`, and the
  SMs, block times, memory system and issue streams it reads) and calls.
- `block_spread.py`: how far the timed blocks' durations let the extrapolation be trusted (their
  spread; waves that ran in step after a light first wave), for `extrapolation.py`.
- `phases.py`: the least time the share takes where the blocks' L2 traffic changes along the
  grid in stretches longer than a wave (`phase_floor_cycles`), a floor under `extrapolation.py`'s.
- `warming.py`: which lines of a footprint that blocks all over the grid share the whole
  GPU's L2 would hold (`SharedFootprint`, asked by the L2 slices on a miss), and the reuse
  the sample cannot see.
- `standins.py`: stand-in ("phantom") evictions for the unsimulated blocks' lines, the
  dirty lines a previous kernel left at launch, and the write-backs loop sampling left out
  (`StandIns`, a unit of `memory.l2.L2Cache`).

Where the budgets that decide how much is simulated live: `engine.TimingOptions`
(`mode`, `max_waves`, `instruction_budget`, `functional_budget`, `denser_sample_factor`) and `engine._budget`
(blocks to simulate, SASS instructions per warp); loop sampling itself (which iterations of
a long loop a warp issues) is `issue_stream.py`'s, as it rewrites a warp's path.
"""
