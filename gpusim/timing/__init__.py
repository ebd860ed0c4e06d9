"""Timing model: when things happen (occupancy, pipelines, memory units); the functional core decides what.

`TimingOptions` (full or sampled mode, loop sampling, recording) and `TraceWindow` (what a
recording keeps) are what callers of `gpusim.launch(..., timing_options=...)` need."""
from gpusim.timing.engine import TimingOptions  # noqa: F401
from gpusim.timing.record import TraceWindow  # noqa: F401
