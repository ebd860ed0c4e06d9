"""A finished batch is freed by reference counting (`BatchExecutor.close`): a launch leaves none of
the functional core's objects (executor, register file, units) as cyclic garbage, so its register
file does not wait for the cyclic collector (whose full collections, once such batches reach the
oldest generation, cost tens of milliseconds). Other libraries' garbage (numba or LLVM compiling a
segment during the launch, on a cold cache) is not this property and is not counted."""
from __future__ import annotations

import gc

import gpusim
import programs
from gpusim.viz.capture import capture


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


# a batch's own objects: its executor, register file and units (a timed launch's timing model is a
# cyclic graph of its own, SimPy processes and caches, which holds the launch's memory and counters
# until a collection: not this property)
BATCH = {"BatchExecutor", "BatchState", "WarpStacks", "WarpScheduler", "FastLoadStoreUnit", "LoadStoreUnit",
         "Collectives", "SpecialRegisters"}


def _batch_garbage(run) -> set[str]:
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        run()
        gc.collect()
        return {type(o).__qualname__ for o in gc.garbage} & BATCH
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_the_batches_a_timed_launch_records_leave_no_cyclic_garbage():
    c = programs.get("transpose_shared").case("small", seed=2)
    assert _batch_garbage(lambda: gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes,
                                                workers=1, timing=True)) == set()


def test_the_batch_a_teaching_view_captures_leaves_no_cyclic_garbage():
    c = programs.get("transpose_shared").case("small", seed=2)
    assert _batch_garbage(lambda: capture(c)) == set()
