"""`gpusim.launch`: run a Numba CUDA kernel in the simulator.

kernel + args -> PTX (gpusim.frontend) -> decoded blocks (gpusim.functional.decode)
-> batches of thread blocks run by the SIMT executor -> arrays copied back into the
caller's numpy arrays -> a `Result` with Nsight-named counters.
"""
from __future__ import annotations

import numpy as np

from gpusim import specs
from gpusim.functional.counters import Counters, metric_values
from gpusim.functional.decode import Decoder
from gpusim.functional.executor import BatchExecutor, Geometry
from gpusim.functional.memory import DeviceMemory
from gpusim.functional.ops import OpFactory
from gpusim.launch_config import check_dims, check_shared, layout
from gpusim.result import Result

BATCH_LANES = 1 << 15        # lanes executed together: bounds memory, keeps numpy calls large


_DECODED: dict = {}


def decoded(ck, symbols: dict):
    """The decoded kernel for a compiled kernel and variable layout (cached: layouts are deterministic)."""
    key = (ck.ptx, ck.entry, tuple(sorted(symbols.items())))
    dk = _DECODED.get(key)
    if dk is None:
        dk = Decoder(ck.kernel, symbols, OpFactory()).decode()
        if len(_DECODED) > 256:
            _DECODED.clear()
        _DECODED[key] = dk
    return dk


def kernel_name(kernel) -> str:
    f = getattr(kernel, "py_func", kernel)
    return getattr(f, "__qualname__", getattr(f, "__name__", repr(kernel)))


def launch(kernel, grid, block, args, gpu="h100", timing: bool = False, shared_bytes: int = 0,
           *, batch_lanes: int = BATCH_LANES, max_steps: int | None = None) -> Result:
    """Run `kernel[grid, block, 0, shared_bytes](*args)` on the simulated GPU `gpu`.

    numpy arrays in `args` are updated in place, as after a device round trip.
    `timing=True` adds predicted time (issue 3; not available yet).
    `max_steps` bounds the steps of one batch of blocks (default
    `gpusim.functional.executor.DEFAULT_STEP_BUDGET`) before a kernel is reported as not finishing.
    """
    from gpusim.frontend.args import marshal
    from gpusim.frontend.compile import compile_kernel

    spec = specs.get(gpu)
    name = kernel_name(kernel)
    g3, b3 = check_dims(spec, name, grid, block)
    args = tuple(args)
    ck = compile_kernel(kernel, args, cc=spec.compute_capability)
    program, k = ck.program, ck.kernel
    mem = DeviceMemory()
    lay = layout(program, k, mem)
    check_shared(spec, name, lay.static_shared_bytes, int(shared_bytes))
    marshalled = marshal(ck, args, mem)
    mem.seal()
    dk = decoded(ck, lay.symbols)
    geo = Geometry(g3, b3)
    counters = Counters(len(dk.infos), len(dk.blocks))
    total_shared = lay.dynamic_shared_offset + int(shared_bytes) if shared_bytes else lay.static_shared_bytes
    per_batch = max(1, min(geo.nblocks, batch_lanes // (geo.warps_per_block * 32)))
    with np.errstate(all="ignore"):
        for first in range(0, geo.nblocks, per_batch):
            n = min(per_batch, geo.nblocks - first)
            ex = BatchExecutor(dk, geo, first, n, mem, marshalled.params, total_shared, lay.local_bytes,
                               counters, name, sm_count=getattr(spec, "sm_count", 1), step_budget=max_steps)
            ex.run()
    marshalled.copy_back(mem)
    block_of = np.array(dk.cfg.block_of, dtype=np.int64)
    table = counters.instruction_table(block_of)
    metrics = metric_values(table)
    metrics["launch__grid_size"] = geo.nblocks
    metrics["launch__block_size"] = geo.threads_per_block
    result = Result(kernel=name, gpu=spec.name, grid=g3, block=b3, shared_bytes=int(shared_bytes), metrics=metrics,
                    source_file=ck.source_file, table=table, infos=dk.infos, ptx=ck.ptx)
    if timing:
        raise NotImplementedError("timing=True arrives with the timing model (issue 3)")
    return result
