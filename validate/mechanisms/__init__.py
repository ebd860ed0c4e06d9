"""Mechanism microbenchmarks of issue 24 (placeholder registry; see docs/mechanisms_24.md)."""
from __future__ import annotations

from validate.mechanisms import arith64, atomics, copies, imbalance, shared_atomics, stencils, strides

MECHANISMS = {s.name: s for mod in (atomics, shared_atomics, strides, stencils, copies, arith64, imbalance) for s in mod.SPECS}
