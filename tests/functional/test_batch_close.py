"""A finished batch is freed by reference counting (`BatchExecutor.close`): a launch leaves none of
the functional core's objects (executor, register file, units) as cyclic garbage, so its register
file does not wait for the cyclic collector (whose full collections, once such batches reach the
oldest generation, cost tens of milliseconds). Other libraries' garbage (numba or LLVM compiling a
segment during the launch, on a cold cache) is not this property and is not counted."""
from __future__ import annotations

import gc

import gpusim
import programs


def _core_garbage_of_launch(name: str, size: str, **kw) -> list[str]:
    c = programs.get(name).case(size, seed=2)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes, workers=1, **kw)
        gc.collect()
        return sorted({type(o).__qualname__ for o in gc.garbage
                       if type(o).__module__.startswith("gpusim.functional")})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_a_functional_launch_leaves_no_cyclic_garbage():
    assert _core_garbage_of_launch("reduce_sequential", "default") == []


def test_a_launch_over_several_batches_leaves_no_cyclic_garbage():
    assert _core_garbage_of_launch("transpose_shared", "small", batch_lanes=512) == []
