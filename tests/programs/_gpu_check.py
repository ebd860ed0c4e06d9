"""Run programs on a real GPU through Numba, check each against its numpy
reference, and time the kernel: `python tests/programs/_gpu_check.py [--sizes
default,medium] [NAME ...]`. One JSON line per (program, size) on stdout:
{"name", "size", "ok", "kernel_us", "error"}; kernel_us is the mean of 20
back-to-back launches on device-resident inputs (CUDA events), after a warm-up.

Not collected by pytest (needs a GPU); the `validate` package owns real
measurements -- this is the quick correctness sweep of the program library.
"""
import argparse
import json
import sys
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root


def device_args(case):
    from numba import cuda
    return [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in case.args]


def time_kernel(case, launches=20):
    """Mean microseconds per launch over `launches` back-to-back launches between two
    CUDA events. For kernels shorter than Numba's host-side launch cost (~tens of
    microseconds) this measures the launch cost, not the kernel."""
    from numba import cuda
    args = device_args(case)
    launch = case.kernel[case.grid, case.block, 0, case.shared_bytes]
    launch(*args)                                       # warm-up (and JIT compile)
    cuda.synchronize()
    start, stop = cuda.event(), cuda.event()
    start.record()
    for _ in range(launches):
        launch(*args)
    stop.record()
    stop.synchronize()
    return cuda.event_elapsed_time(start, stop) * 1e3 / launches


def check_on_gpu(case):
    from numba import cuda
    args = device_args(case)
    case.kernel[case.grid, case.block, 0, case.shared_bytes](*args)
    cuda.synchronize()
    host = tuple(a.copy_to_host() if hasattr(a, "copy_to_host") else a for a in args)
    case.check(host)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="default,medium,ragged,large")
    parser.add_argument("names", nargs="*")
    opts = parser.parse_args()
    import programs
    ok = True
    for name in opts.names or list(programs.PROGRAMS):
        spec = programs.get(name)
        for size in opts.sizes.split(","):
            if size not in spec.sizes:
                continue
            row = {"name": name, "size": size, "ok": False, "kernel_us": None, "error": None}
            try:
                case = spec.case(size)
                check_on_gpu(case)
                row["ok"] = True
                row["kernel_us"] = round(time_kernel(case), 2)
            except Exception as e:
                row["error"] = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-4)}"
                ok = False
            print(json.dumps(row), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
