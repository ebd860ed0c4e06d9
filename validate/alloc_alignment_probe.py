"""Where the device allocations of a measured case land (issue 24, L2 atomics): the L2 serves all
atomics of an aligned 512-B block at one slice (gpusim/timing/memory/l2_atomics.py), so which
bins of a 1-KiB histogram share a block depends on the array's address modulo 512. gpusim places
every allocation at a 256-B boundary after a 256-B guard (gpusim/functional/memory.py); this
probe records what the driver does for the same cases, allocated as `validate measure` allocates
them (`cuda.to_device` of each array argument in order, measure_worker.py).

    python -m validate.alloc_alignment_probe --out $OUT/alloc_alignment_h200.json

Output: the device attribute TEXTURE_ALIGNMENT and, per case, each array argument's size and
device address modulo 256, 512, 4096 and 2 MiB. Runs in seconds; nothing is timed.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import programs
from validate.microbench import MICROBENCHMARKS

CASES = (("histogram_global", "small"), ("histogram_global", "default"), ("histogram_global", "large"),
         ("histogram_shared", "default"), ("atomic_throughput", "global_same"))


def _case(name: str, size: str):
    if name in MICROBENCHMARKS:
        return MICROBENCHMARKS[name].case(size)
    return programs.get(name).case(size)


def main(argv=None) -> int:
    from numba import cuda  # lazy: numba.cuda is a heavy dependency, loaded only on the GPU machine
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    dev = cuda.get_current_device()
    out = {"gpu": dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
           "texture_alignment": int(getattr(dev, "TEXTURE_ALIGNMENT", 0)), "cases": []}
    for name, size in CASES:
        case = _case(name, size)
        dargs = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in case.args]
        arrays = []
        for a in dargs:
            if hasattr(a, "device_ctypes_pointer"):
                p = int(a.device_ctypes_pointer.value)
                arrays.append({"bytes": int(a.nbytes), "mod256": p % 256, "mod512": p % 512, "mod4096": p % 4096,
                               "mod2MiB": p % (2 << 20)})
        out["cases"].append({"case": f"{name}/{size}", "arrays": arrays})
        del dargs
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
