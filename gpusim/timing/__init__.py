"""Timing model: when things happen (occupancy, pipelines, memory units); the functional core decides what.

`TimingOptions` (full or sampled mode, loop sampling, recording) and `TraceWindow` (what a
recording keeps) are what callers of `gpusim.launch(..., timing_options=...)` need; they load
lazily so that importing the package costs nothing until the model is used."""


def __getattr__(name):
    if name == "TimingOptions":
        from gpusim.timing.engine import TimingOptions
        return TimingOptions
    if name == "TraceWindow":
        from gpusim.timing.record import TraceWindow
        return TraceWindow
    raise AttributeError(f"module 'gpusim.timing' has no attribute {name!r}")
