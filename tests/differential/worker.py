"""Run composite random kernels for the differential test, in gpusim or in Numba's CUDA
simulator (NUMBA_ENABLE_CUDASIM=1 in the environment: it must be set before numba is
imported, so the simulator cannot share the test's process).

A long-lived subprocess: it reads one JSON request per line on stdin, {"path", "name",
"grid", "block", "seed", "kernels", "out"} (and for gpusim optionally "core": 'fast' or
'reference'), imports the kernel from `path`, runs it on `kernel_io.make_args(seed, ...)`
and saves the outputs to `out` (.npy of an object array; for gpusim followed by its
counters), then answers one JSON line: {"ok": true, "cpu_s"} or {"ok": false, "error"}.

gpusim runs the kernel as `launch` does (compile through the drop-in, lay out memory,
run every block, copy back) without the SASS counts it does not need here. The
simulator's missing warp intrinsics come from tests/programs/_cudasim_check.py.
"""
import importlib.util
import json
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_gpusim(kern, grid, block, args, core=None):
    """Run the kernel in gpusim's functional core (`core`: 'fast', 'reference' or the
    default); returns its counters as {name: array}."""
    import numpy as np
    from gpusim.api import BATCH_LANES, prepare
    p = prepare(kern, grid, block, args, core=core)
    with np.errstate(all="ignore"):
        p.run_all(BATCH_LANES)
    p.marshalled.copy_back(p.memory)
    c = p.counters
    return {"block_warps": c.block_warps, "block_threads": c.block_threads, "loop_back": c.loop_back, **c.per_instr}


def main() -> int:
    cudasim = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
    sys.path[:0] = [str(HERE), str(HERE.parent / "programs")]
    import numpy as np
    import kernel_io
    if cudasim:
        from _cudasim_check import install_warp_intrinsics
        install_warp_intrinsics()
    np.seterr(all="ignore")
    warnings.simplefilter("ignore")
    for line in sys.stdin:
        req = json.loads(line)
        t = time.process_time()
        try:
            path = Path(req["path"])
            spec = importlib.util.spec_from_file_location(f"w_{path.stem}", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            kern = getattr(mod, req["name"])
            args = kernel_io.make_args(req["seed"], req["grid"] * req["block"], req["kernels"])
            counters = {}
            if cudasim:
                kern[req["grid"], req["block"]](*args)
            else:
                counters = run_gpusim(kern, req["grid"], req["block"], args, req.get("core"))
            outs = np.empty(len(kernel_io.OUTPUT_NAMES) + len(counters), object)
            outs[:] = list(args[kernel_io.NIN:]) + list(counters.values())
            np.save(req["out"], outs, allow_pickle=True)
            answer = {"ok": True, "cpu_s": time.process_time() - t}
        except Exception as e:
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-4)}"}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
