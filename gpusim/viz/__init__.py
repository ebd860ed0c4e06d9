"""gpusim.viz: teaching figures computed from the exact functional and timing data.

One module per figure kind, each with a data function (numpy arrays and dataclasses,
what the tests check against the counters) and `plot(data, path=None) -> Figure`:

- `bank_map`: one shared access of one warp, lanes x banks, word and wavefront per cell;
- `coalescing_map`: one global access of one warp, lanes -> 32-byte sectors and 128-byte lines;
- `divergence_map`: warps x executed instructions, each cell the 32 lanes, paths coloured;
- `roofline`: the preset's compute and bandwidth ceilings and a timed kernel's point;
- `occupancy`: what limits blocks per SM, and the grid's waves and tail;
- `memory_chart`: requests, sectors, hit rates and bytes from the kernel through L1/TEX
  and L2 to DRAM (Nsight's memory chart), from a Result's metrics;
- `warp_timeline`: one SM's warp slots over a window of cycles, issue and Nsight stall
  states coloured, barriers marked (from a timing-model recording, `gpusim.timing.record`);
- `ladder`: a program family side by side (`ladder({name: Result})`): predicted time as
  bars from zero, and warp instructions, shared wavefronts, bank conflicts, sectors per
  request and SIMT efficiency per member (`gpusim run FAMILY --plot DIR`).

`figures_for(case, ...)` returns every applicable figure as `{name: Figure}` (and writes
them as PNGs to a folder if asked). Per-lane data comes from `capture` (the chosen
blocks re-run step by step; the functional core is unchanged). matplotlib is imported
only when a figure is drawn, so `import gpusim` and `import gpusim.viz` stay light.
"""
from __future__ import annotations

from gpusim.viz.capture import Capture, Subject, capture, subject_of
from gpusim.viz.figures import FIGURES, figures_for

__all__ = ["Capture", "Subject", "capture", "subject_of", "figures_for", "FIGURES"]
