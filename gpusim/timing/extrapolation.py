"""Moved to `gpusim.timing.sampling.extrapolation`. This name stays only until
`gpusim/timing/engine.py`'s import line moves (engine.py is edited in parallel, issue 27)."""
from gpusim.timing.sampling.extrapolation import Extrapolation, sampled_blocks

__all__ = ["Extrapolation", "sampled_blocks"]
