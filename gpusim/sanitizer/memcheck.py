"""memcheck: out-of-bounds and misaligned accesses (compute-sanitizer's memcheck).

The load/store unit already checks every lane's access (`gpusim.functional.lsu`: inside
one allocation of global or constant memory, inside the block's shared size and the
thread's local frame, aligned to the access size) and raises `MemoryAccessError`.
With memcheck on, the executor's fault path first hands that fault to the sanitizer
(`BatchHooks.fault`), which records it as a `Hazard` ('out-of-bounds' or 'misaligned',
the space, the address, the thread and line) and the launch stops there, as a kernel
stops at its first memory fault on hardware; `Result.hazards` then holds it instead of
the launch raising. Without memcheck the fault is raised as before.
"""
from __future__ import annotations


class Tool:
    name = "memcheck"

    def __init__(self, san, prepared, uninitialized=()):
        self.san = san

    def batch(self, x, hooks):
        return _Batch()


class _Batch:
    """memcheck needs no per-access work: the load/store unit's checks feed `fault`."""
