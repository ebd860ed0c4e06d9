"""Collectives as NCCL runs them, over the simulated fabric (`gpusim.interconnect`).

Map: `conventions.py` (the operations, nccl-tests' sizes and busbw factors),
`tuning.py` (NCCL's choice of algorithm, protocol and channel count by message size),
`algorithms.py` (ring, chain (an intra-node tree), pipelined broadcast/reduce, and the
point-to-point patterns as SimPy processes over the fabric's ports, carrying slices),
`functional.py` (what each collective computes, on numpy arrays), `run.py` (one call:
choose, simulate, report).
"""
from gpusim.collectives.conventions import OPS, busbw_factor
from gpusim.collectives.run import CollectiveResult, simulate, sweep

__all__ = ["OPS", "busbw_factor", "CollectiveResult", "simulate", "sweep"]
