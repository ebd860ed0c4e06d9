"""Timing model: when things happen (occupancy, pipelines, memory units); the functional core decides what.

What runs where, for one kernel launch (`engine.TimingEngine` builds the units and runs them):
- SimPy: only the block scheduler (`block_scheduler.py`), the GPU's CTA distributor. Each
  simulated SM is a SimPy process that advances one quantum (`TimingOptions.quantum_cycles`) at a
  time and sleeps until its next quantum with work; a finished block makes the scheduler hand
  that SM the next one. Blocks starting and finishing and SMs waiting for work are rare events.
- Compiled loops: within a quantum, an SM's warp schedulers, scoreboard, pipes, shared-memory
  banks and barriers run in `issue_loop.py` (numba), on the SM's arrays (`sm.py`).
- Timestamp functions: the memory units (`memory/`: L1, L2 slices and partition fabric,
  crossbar, HBM), the TMA unit and mbarriers are called with a request and its time and return
  when it completes, over fluid servers that keep each unit's bandwidth; no SimPy events.
- Plain Python around them: a sampled launch's estimates (`sampling/`: which blocks to time,
  the whole L2's shared footprint, the extrapolation) and, once the run is over, the metrics
  builder (`metrics_builder.py`), which reads the finished units into Nsight-named metrics.

`TimingOptions` (full or sampled mode, loop sampling, recording) and `TraceWindow` (what a
recording keeps) are what callers of `gpusim.launch(..., timing_options=...)` need."""
from gpusim.timing.engine import TimingOptions  # noqa: F401
from gpusim.timing.record import TraceWindow  # noqa: F401
