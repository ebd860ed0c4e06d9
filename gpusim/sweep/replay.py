"""One timed launch that reuses a recorded functional run where the spec allows.

`timed_launch(kernel, grid, block, args, spec, ...)` returns what
`gpusim.launch(..., timing=True)` returns, bit for bit: the first launch of a (kernel,
arguments, launch, functional fields) runs the timing engine with a `RecordingSource`
(an ordinary run that keeps its streams) and stores the streams, the whole launch's
functional counters and the output memory; every later launch with other timing-only
fields builds the PreparedLaunch for its spec (compile and argument layout, both cached),
runs the timing engine on the recorded streams (`ReplaySource`), and assembles the Result
from the recorded counters: the functional core does not run the launch again.

The first replayed point of a process freezes the garbage collector's view of every object
alive then (`gc.freeze()`: imports, compiled kernels, recordings): a replay is short, and
otherwise an occasional full collection scanning those millions of long-lived objects cost a
point 0.1-0.3 s (a third of a transpose_shared 1024^2 replay). Frozen objects are freed as
usual when their references go; only reference cycles among them are never collected.

Not replayed: `TimingOptions(functional='sampled')` (its counters extrapolate the blocks a
run happened to execute). Launches with peer arrays replay (the arrays' placement is part of
the recording's key); NVLink and system fields are timing-only.
"""
from __future__ import annotations

import functools
import gc

import numpy as np

from gpusim.api import prepare
from gpusim.sweep.fields import functional_key
from gpusim.sweep.streams import MAX_HEAP_BYTES, RecordingSource, ReplaySource, StreamCache, StreamStore, stream_key
from gpusim.timing.engine import TimingEngine, TimingOptions
from gpusim.timing.metrics_builder import STALL_METRIC

_DEFAULT_CACHE: StreamCache | None = None
_FROZEN = False


def default_cache() -> StreamCache:
    global _DEFAULT_CACHE
    if _DEFAULT_CACHE is None:
        _DEFAULT_CACHE = StreamCache()
    return _DEFAULT_CACHE


def timed_launch(kernel, grid, block, args, spec, shared_bytes: int = 0, options=None,
                 cache: StreamCache | None = None, replay: bool = True, peer_args: dict | None = None):
    """(Result, 'recorded' | 'replayed' | 'executed') for a timed launch of `kernel` on `spec`
    (a GPUSpec). `replay=False` or an unreplayable launch runs as gpusim.launch does; `peer_args`
    as gpusim.launch's (arrays in a peer GPU's memory: NVLink traffic; keyed by their placement)."""
    options = options or TimingOptions()
    cache = cache if cache is not None else default_cache()
    prepared = prepare(kernel, grid, block, args, spec, shared_bytes, peer_args)
    if not replay or options.functional != "full":
        source, how, store = None, "executed", None
    else:
        key = stream_key(prepared, args, functional_key(spec, prepared))
        store = cache.get(key)
        if store is None:
            store = StreamStore(key, counters=None, heap=None)
            source, how = functools.partial(RecordingSource, store=store), "recorded"
        else:
            source, how = functools.partial(ReplaySource, store=store), "replayed"
            global _FROZEN
            if not _FROZEN:
                _FROZEN = True
                gc.freeze()
    engine = TimingEngine(prepared, options, source) if source is not None else TimingEngine(prepared, options)
    with np.errstate(all="ignore"):
        timed = engine.run()
    nblocks = prepared.geometry.nblocks
    if how == "replayed":
        prepared.counters = store.counters
        if store.heap is not None:
            prepared.memory.global_heap.data[:] = store.heap
        if store.added:
            cache.save(store)
        result = prepared.finish()
        result.extra["outputs_restored"] = store.heap is not None
        result.extra["blocks_executed"] = engine.trace.executed_missing   # timed blocks the recording lacked
    else:
        executed = engine.trace.executed
        result = prepared.finish(nblocks / executed if executed < nblocks else 1.0)
        if how == "recorded":
            store.counters = prepared.counters
            heap = prepared.memory.global_heap.data
            store.heap = heap.copy() if heap.nbytes <= MAX_HEAP_BYTES else None
            cache.put(store)
    result.metrics.update(timed)
    for reason, arr in engine.per_instruction_stalls.items():
        result.table[STALL_METRIC.format(reason)] = arr
    if engine.recording is not None:
        result.extra["recording"] = engine.recording
    result.extra["functional_run"] = how
    return result, how
