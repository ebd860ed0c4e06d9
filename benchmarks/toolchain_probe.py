"""Which build numba-cuda runs on the GPU machine: LTO or not, and the registers of some kernels
each way (run on the GPU machine, not here).

    python benchmarks/toolchain_probe.py          # writes $OUT/lto_probe.json (or ./lto_probe.json)

numba-cuda's `cuda.jit` defaults `lto` to `_have_nvjitlink()`; `validate measure` does not set it,
so what this prints for `have_nvjitlink` is how the measured kernels were built. For main-suite
programs and held-out kernels, each is recompiled with `lto=False` and `lto=True` and launched
once, and `get_regs_per_thread()` and the static SASS instruction count (`inspect_sass`) read
back; stencil2d_5pt's SASS is written out both ways. Only numpy, numba and the kernels' modules are
imported (no gpusim). Results: data/measurements/toolchain/lto_probe_h100.json (DEVIATIONS.md row
"SASS source (LTO)").
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda.cudadrv.driver import _have_nvjitlink  # noqa: E402

import programs  # noqa: E402
from validate.heldout import HELDOUT  # noqa: E402

CASES = [("programs", "transpose_naive"), ("programs", "transpose_shared"), ("programs", "local_array_sort"),
         ("heldout", "stencil2d_5pt"), ("heldout", "stencil3d_7pt"), ("heldout", "digit_histogram_local"),
         ("heldout", "math_heavy")]


def regs(dispatcher) -> int:
    r = dispatcher.get_regs_per_thread()
    return int(next(iter(r.values()))) if isinstance(r, dict) else int(r)


def main() -> int:
    out = {"have_nvjitlink": bool(_have_nvjitlink())}
    try:
        from cuda.bindings import nvjitlink  # GPU machine only: CuPy / the CUDA driver are not installed on CPU machines
        out["nvjitlink_version"] = list(nvjitlink.version())
    except Exception as e:                      # noqa: BLE001 - recorded, not fatal
        out["nvjitlink_version"] = repr(e)
    kernels = {}
    for kind, name in CASES:
        c = (programs.get(name) if kind == "programs" else HELDOUT[name]).case("default")
        row = {"default_lto": c.kernel.targetoptions.get("lto")}
        for lto in (False, True):
            k = cuda.jit(lto=lto)(c.kernel.py_func)
            k[c.grid, c.block](*[cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in c.args])
            cuda.synchronize()
            row[f"regs_lto_{lto}"] = regs(k)
            sass = k.inspect_sass(k.signatures[0]) if hasattr(k, "inspect_sass") else ""
            row[f"sass_instructions_lto_{lto}"] = sum(1 for line in sass.splitlines()
                                                      if line.strip().startswith("/*") and ";" in line)
            if name == "stencil2d_5pt":
                with open(os.path.join(os.environ.get("OUT", "."), f"{name}.lto{int(lto)}.sass"), "w") as f:
                    f.write(sass)
        kernels[f"{kind}:{name}"] = row
    out["kernels"] = kernels
    with open(os.path.join(os.environ.get("OUT", "."), "lto_probe.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
