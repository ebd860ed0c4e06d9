"""`gpusim.launch`: run a Numba CUDA kernel in the simulator.

kernel + args -> PTX (gpusim.frontend) -> decoded blocks (gpusim.functional.decode)
-> batches of thread blocks run by the SIMT executor -> arrays copied back into the
caller's numpy arrays -> a `Result` with Nsight-named counters.

`gpusim.prepare(...)` returns the `PreparedLaunch` itself, for driving warps step by step.
"""
from __future__ import annotations

import numpy as np

from gpusim import specs
from gpusim.timing.engine import STALL_METRIC
from gpusim.functional.prepared import PreparedLaunch
from gpusim.result import Result

BATCH_LANES = 1 << 15        # lanes executed together: bounds memory, keeps numpy calls large


def prepare(kernel, grid, block, args, gpu="h100", shared_bytes: int = 0, peer_args=None) -> PreparedLaunch:
    """Compile, lay out memory and marshal arguments, without running anything."""
    return PreparedLaunch(kernel, grid, block, args, resolve_gpu(gpu), shared_bytes, peer_args=peer_args)


def resolve_gpu(gpu):
    """A preset name, a path to a .toml spec file, or a GPUSpec."""
    if isinstance(gpu, str) and gpu.endswith(".toml"):
        from gpusim.specs.overrides import load_toml
        return load_toml(gpu)
    return specs.get(gpu)


def launch(kernel, grid, block, args, gpu="h100", timing: bool = False, shared_bytes: int = 0,
           *, batch_lanes: int = BATCH_LANES, max_steps: int | None = None, timing_options=None,
           peer_args: dict | None = None, check=None) -> Result:
    """Run `kernel[grid, block, 0, shared_bytes](*args)` on the simulated GPU `gpu`
    (a preset name, a .toml file, or a GPUSpec).

    numpy arrays in `args` are updated in place, as after a device round trip.
    `timing=True` also runs the SimPy timing model and adds predicted time, cycles,
    memory traffic, warp stalls and the bound to `Result.metrics` (and stalls per
    line); `timing_options` is a `gpusim.timing.TimingOptions` (full or sampled mode).
    `max_steps` bounds the steps of one batch of blocks (default
    `gpusim.functional.executor.DEFAULT_STEP_BUDGET`) before a kernel is reported as not finishing.
    `peer_args` ({argument index: peer GPU id}) places those array arguments in a peer GPU's
    memory (the kernel runs on GPU 0 of `spec.system`, which needs gpu_count >= 2): results
    are the same, and the timing model sends their L1 misses, stores and atomics over NVLink
    (`gpusim/timing/memory/peer.py`; counters `nvltx__bytes.sum`, `nvlrx__bytes.sum`).
    `check` turns on sanitizer tools ("memcheck", "racecheck", "initcheck", "synccheck", a
    tuple of them or "all"; `gpusim.sanitizer`): their findings are `Result.hazards`, and a
    fault they report (bad address, divergent barrier) ends the launch with a Result
    instead of an exception.
    """
    from gpusim.sanitizer import checked
    prepared = prepare(kernel, grid, block, args, gpu, shared_bytes, peer_args)
    return checked(prepared, check, args, lambda: _run(prepared, timing, batch_lanes, max_steps, timing_options))


def _run(prepared: PreparedLaunch, timing: bool, batch_lanes: int, max_steps: int | None, timing_options) -> Result:
    if not timing:
        prepared.run_all(batch_lanes, max_steps)
        return prepared.finish()
    from gpusim.timing.engine import TimingEngine, TimingOptions
    engine = TimingEngine(prepared, timing_options or TimingOptions())
    with np.errstate(all="ignore"):
        timed = engine.run()
    executed = engine.trace.executed             # sampled: the blocks executed, from across the grid
    result = prepared.finish(prepared.geometry.nblocks / executed if executed < prepared.geometry.nblocks else 1.0)
    result.metrics.update(timed)
    for reason, arr in engine.per_instruction_stalls.items():
        result.table[STALL_METRIC.format(reason)] = arr
    if engine.recording is not None:             # TimingOptions(record=TraceWindow(...))
        result.extra["recording"] = engine.recording
    return result
