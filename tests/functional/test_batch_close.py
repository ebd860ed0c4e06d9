"""A finished batch is freed by reference counting (`BatchExecutor.close`): a launch leaves no
cyclic garbage behind, so its register file does not wait for the cyclic collector (whose full
collections, once such batches reach the oldest generation, cost tens of milliseconds)."""
from __future__ import annotations

import gc

import gpusim
import programs


def _unreachable_after_launch(name: str, size: str, **kw) -> int:
    c = programs.get(name).case(size, seed=1)
    gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes, workers=1, **kw)   # warm
    c = programs.get(name).case(size, seed=2)
    gc.collect()
    gc.disable()
    try:
        gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes, workers=1, **kw)
        return gc.collect()
    finally:
        gc.enable()


def test_a_functional_launch_leaves_no_cyclic_garbage():
    assert _unreachable_after_launch("reduce_sequential", "default") == 0


def test_a_launch_over_several_batches_leaves_no_cyclic_garbage():
    assert _unreachable_after_launch("transpose_shared", "small", batch_lanes=512) == 0
