"""Run composite random kernels in Numba's CUDA simulator, for the differential test.

A long-lived subprocess (NUMBA_ENABLE_CUDASIM=1 must be set before numba is imported, so
it cannot share the test's process). It reads one JSON request per line on stdin,
{"path", "name", "grid", "block", "seed", "kernels", "out"}, imports the kernel from
`path`, runs it on `harness.make_args(seed, ...)` and saves the outputs to `out` (.npy
of an object array), then answers one JSON line: {"ok": true} or {"ok": false, "error"}.
Warp intrinsics the simulator lacks come from tests/programs/_cudasim_check.py.
"""
import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        raise RuntimeError("run with NUMBA_ENABLE_CUDASIM=1")
    sys.path[:0] = [str(HERE), str(HERE.parent / "programs")]
    import numpy as np
    from _cudasim_check import install_warp_intrinsics
    import harness
    install_warp_intrinsics()
    np.seterr(all="ignore")
    import warnings
    warnings.simplefilter("ignore")
    for line in sys.stdin:
        req = json.loads(line)
        try:
            spec = importlib.util.spec_from_file_location(f"cudasim_{Path(req['path']).stem}", req["path"])
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            kern = getattr(mod, req["name"])
            args = harness.make_args(req["seed"], req["grid"] * req["block"], req["kernels"])
            kern[req["grid"], req["block"]](*args)
            outs = np.empty(len(harness.OUTPUT_NAMES), object)
            outs[:] = args[7:]
            np.save(req["out"], outs, allow_pickle=True)
            answer = {"ok": True}
        except Exception as e:
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-4)}"}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
