"""The workers of `python -m validate measure` (validate/measure.py), each run in its own
process on the GPU machine: build every selected kernel, launch it, check its outputs and,
in the events pass, time it with CUDA events; under Nsight Compute (the ncu pass) launch each
once. `worker(args)` writes its records to `--worker-out` after every kernel, so a crash
keeps what was measured. Method: measure.py's docstring. Nothing of gpusim is imported.
"""
from __future__ import annotations

import json
import platform
import statistics
import sys
import time
import traceback
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from importlib.metadata import version
from itertools import islice

import numpy as np

from validate.datafile import jsonable
from validate.suites import selected, spec_of


def _try(f, default=None):
    try:
        return f()
    except Exception:                                    # noqa: BLE001 - informational fields only
        return default


def _device_info() -> dict:
    import numba  # lazy: numba is a heavy dependency, loaded only on the GPU machine
    from numba import cuda  # lazy: numba.cuda is a heavy dependency, loaded only on the GPU machine
    dev = cuda.get_current_device()
    name = _try(lambda: dev.name.decode() if isinstance(dev.name, bytes) else dev.name, "unknown")
    dotted = lambda v: ".".join(map(str, v)) if v else None
    return {"gpu_name": name, "compute_capability": _try(lambda: list(dev.compute_capability)),
            "sm_count": _try(lambda: dev.MULTIPROCESSOR_COUNT), "l2_bytes": _try(lambda: dev.L2_CACHE_SIZE),
            "sm_clock_mhz_attribute": _try(lambda: dev.CLOCK_RATE / 1000),
            "cuda_driver_api": _try(lambda: dotted(cuda.cudadrv.driver.driver.get_version())),
            "cuda_runtime": _try(lambda: dotted(cuda.runtime.get_version())),
            "numba": numba.__version__, "numba_cuda": _try(lambda: version("numba-cuda"), "unknown"),
            "numpy": np.__version__, "python": platform.python_version(),
            "tensor_stack": {d: _try(lambda d=d: version(d)) for d in ("cupy-cuda13x", "cupy-cuda12x", "torch",
                                                                      "triton", "ml_dtypes")}}


def _free_deferred():
    from numba import cuda  # lazy: numba.cuda is a heavy dependency, loaded only on the GPU machine
    try:
        cuda.current_context().deallocations.clear()
    except Exception:                                    # noqa: BLE001 - best effort
        pass


def _build(kind, group, size):
    """Build one case on the host (runs in a helper thread, ahead of the GPU)."""
    return spec_of(kind, group).case(size, seed=0)


def _run_case(kind, group, size, built, mode, flush) -> dict:
    if kind == "tensor":                                 # CUDA C++ / Triton: validate/tensor_set/launch.py
        from validate.tensor_set.launch import run_case  # lazy: CuPy/torch launching, the tensor set only
        return run_case(group, size, built, mode, flush)
    from numba import cuda  # lazy: numba.cuda is a heavy dependency, loaded only on the GPU machine
    spec = spec_of(kind, group)
    rec = {"name": f"{group}/{size}", kind: group, "size": size, "params": dict(spec.sizes[size]),
           "launched": False}
    try:
        case = built.result()
        rec.update(kernel=case.kernel.py_func.__name__, grid=list(case.grid), block=list(case.block),
                   shared_bytes=case.shared_bytes)
        dargs = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in case.args]
        rec["arg_addresses"] = _addresses(dargs)
        launch = case.kernel[case.grid, case.block, 0, case.shared_bytes]
        if flush is not None:
            flush()
        rec["launched"] = True
        launch(*dargs)
        cuda.synchronize()
        host = tuple(a.copy_to_host() if hasattr(a, "copy_to_host") else a for a in dargs)
        try:
            case.check(host)
            rec["check"] = "passed"
        except AssertionError as e:
            rec["check"] = f"failed: {e}"
        if kind == "microbenchmark":
            from validate.microbench import RECORDED  # lazy: numba.cuda kernels, microbenchmark records only
            rec["outputs"] = {label: jsonable(host[i].reshape(-1)[0]) for i, label in RECORDED.get(group, {}).items()}
        del host, case
        if mode == "events":
            try:
                rec.update(_event_times(launch, dargs))
            except Exception as e:                       # noqa: BLE001 - the check stands
                rec["event_error"] = f"{type(e).__name__}: {e}"
        del dargs
    except Exception as e:                               # noqa: BLE001 - recorded, the sweep goes on
        rec["check"] = f"error: {type(e).__name__}: {e}"
        rec["traceback"] = traceback.format_exc(limit=-3)
    _free_deferred()
    return rec


def _addresses(dargs) -> list[int]:
    """The device address of each array argument, in argument order (what `validate compare`
    places gpusim's arrays at, modulo a large page: the L2's slice and atomic-unit hashes read
    the address bits, and which bits an allocation gets depends on the process's history)."""
    return [int(a.device_ctypes_pointer.value) for a in dargs if hasattr(a, "device_ctypes_pointer")]


def _event_times(launch, dargs, target_s: float = 0.1) -> dict:
    from numba import cuda  # lazy: numba.cuda is a heavy dependency, loaded only on the GPU machine
    single = []
    for _ in range(3):
        a, b = cuda.event(), cuda.event()
        a.record()
        launch(*dargs)
        b.record()
        b.synchronize()
        single.append(a.elapsed_time(b) * 1e3)
    t1 = statistics.median(single)
    n = int(min(100, max(5, target_s / max(t1 * 1e-6, 1e-6))))
    evs = [cuda.event() for _ in range(n + 1)]
    evs[0].record()
    for k in range(n):
        launch(*dargs)
        evs[k + 1].record()
    evs[-1].synchronize()
    gaps = [evs[k].elapsed_time(evs[k + 1]) * 1e3 for k in range(n)]
    return {"event_time_us": statistics.median(gaps), "event_launches": n, "event_single_us": t1}


def _flusher():
    """A kernel writing 256 MiB of scratch: whatever an earlier case left in L2 is gone."""
    from numba import cuda  # lazy: numba.cuda is a heavy dependency, loaded only on the GPU machine

    @cuda.jit
    def flush_l2(buf):
        i = cuda.grid(1)
        if i < buf.size:
            buf[i] = i

    buf = cuda.device_array(64 << 20, np.int32)
    launch = flush_l2[(buf.size + 255) // 256, 256]
    return lambda: launch(buf)


def _prefetched(todo, depth: int = 3):
    """(item, future of its built Case) in order, building up to `depth` cases ahead in
    threads (numpy releases the GIL), so host-side builds overlap the GPU work."""
    from numba import config  # lazy: numba is a heavy dependency, loaded only on the GPU machine
    if config.ENABLE_CUDASIM:               # the simulator swaps module globals while a kernel runs: no threads
        for item in todo:
            fut = Future()
            try:
                fut.set_result(_build(*item))
            except Exception as e:               # noqa: BLE001 - re-raised by result()
                fut.set_exception(e)
            yield item, fut
        return
    with ThreadPoolExecutor(max_workers=depth) as pool:
        items = iter(todo)
        window = deque((item, pool.submit(_build, *item)) for item in islice(items, depth))
        while window:
            item, fut = window.popleft()
            nxt = next(items, None)
            if nxt is not None:
                window.append((nxt, pool.submit(_build, *nxt)))
            yield item, fut
            del fut


def worker(args) -> int:
    todo = selected(args.only, args.skip, args.suite)
    if args.cases:
        wanted = set(json.loads(args.cases.read_text()))
        todo = [t for t in todo if f"{t[1]}/{t[2]}" in wanted]
    from numba import config  # lazy: numba is a heavy dependency, loaded only on the GPU machine
    flush = _flusher() if args.worker == "events" and not config.ENABLE_CUDASIM else None
    out = {"device": _device_info(), "mode": args.worker, "records": []}
    t0 = time.time()
    for (kind, group, size), built in _prefetched(todo):
        t = time.time()
        rec = _run_case(kind, group, size, built, args.worker, flush)
        rec["host_seconds"] = round(time.time() - t, 2)
        out["records"].append(jsonable(rec))
        print(f"[{args.worker} {time.time() - t0:6.1f}s] {rec['name']}: {rec.get('check', '')[:200]}"
              + (f" {rec['event_time_us']:.1f} us" if "event_time_us" in rec else ""), file=sys.stderr, flush=True)
        args.worker_out.write_text(json.dumps(out))      # partial results survive a crash
    return 0
