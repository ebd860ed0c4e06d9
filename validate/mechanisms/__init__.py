"""Mechanism microbenchmarks of issue 24 (placeholder registry; see docs/mechanisms_24.md)."""
from __future__ import annotations

from validate.mechanisms import atomics, shared_atomics, strides

MECHANISMS = {s.name: s for mod in (atomics, shared_atomics, strides) for s in mod.SPECS}
