"""`gpusim.launch`: run a Numba CUDA kernel in the simulator.

kernel + args -> PTX (gpusim.frontend) -> decoded blocks (gpusim.functional.decode)
-> batches of thread blocks run by the SIMT executor -> arrays copied back into the
caller's numpy arrays -> a `Result` with Nsight-named counters.

`gpusim.prepare(...)` returns the `PreparedLaunch` itself, for driving warps step by step.
"""
from __future__ import annotations

from gpusim import specs
from gpusim.functional.prepared import PreparedLaunch
from gpusim.result import Result

BATCH_LANES = 1 << 15        # lanes executed together: bounds memory, keeps numpy calls large


def prepare(kernel, grid, block, args, gpu="h100", shared_bytes: int = 0) -> PreparedLaunch:
    """Compile, lay out memory and marshal arguments, without running anything."""
    return PreparedLaunch(kernel, grid, block, args, specs.get(gpu), shared_bytes)


def launch(kernel, grid, block, args, gpu="h100", timing: bool = False, shared_bytes: int = 0,
           *, batch_lanes: int = BATCH_LANES, max_steps: int | None = None) -> Result:
    """Run `kernel[grid, block, 0, shared_bytes](*args)` on the simulated GPU `gpu`.

    numpy arrays in `args` are updated in place, as after a device round trip.
    `timing=True` adds predicted time (issue 3; not available yet).
    `max_steps` bounds the steps of one batch of blocks (default
    `gpusim.functional.executor.DEFAULT_STEP_BUDGET`) before a kernel is reported as not finishing.
    """
    if timing:
        raise NotImplementedError("timing=True arrives with the timing model (issue 3)")
    prepared = prepare(kernel, grid, block, args, gpu, shared_bytes)
    prepared.run_all(batch_lanes, max_steps)
    return prepared.finish()
