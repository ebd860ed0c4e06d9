"""Moved to `gpusim.timing.sampling.warming`. This name stays only until
`gpusim/timing/engine.py`'s import line moves (engine.py is edited in parallel, issue 27)."""
from gpusim.timing.sampling.warming import shared_footprint

__all__ = ["shared_footprint"]
