"""How many of the wgmma results recorded on the H200 gpusim reproduces bit for bit.

    python benchmarks/wgmma_bitexact.py [--out benchmarks/results/wgmma_bitexact.json]

Runs every recorded `wgmma.mma_async` case of data/measurements/tensor_wgmma_h200.npz (each form
through the shared-memory layout and descriptors the probe used, scale-d as recorded, A from
registers for the `_rs` forms) through a PTX kernel on gpusim's functional core
(tests/functional/mma_kernels.py `wgmma_kernel`, one warpgroup per case, the reference core),
and the probe's layout stage (each `layout:` form's exact case through the 8 candidate
(swizzle, LBO meaning) descriptors, right or wrong; those that faulted on the GPU must fault
here: tests/functional/wgmma_cases.py); per form: D elements equal / recorded,
and cases all equal. Numerics: `mma_numerics.hopper_model("wgmma", ...)` at the time of the run.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "functional"))

from isa.semantics import mma_layout as L  # noqa: E402
from isa.semantics import wgmma as W  # noqa: E402
from validate.semantics.tensor_forms import WGMMA_FORMS  # noqa: E402
from wgmma_cases import layout_stage, recorded  # noqa: E402
from validate.datadir import DATA_DIR  # noqa: E402


def compare(f, got, gpu) -> dict:
    cb = W.ACC_BITS[f.dtype]
    amap = L.wgmma_acc_map(f.n, cb)
    eq = L.unpack(got, amap, cb, (64, f.n)) == L.unpack(gpu, amap, cb, (64, f.n))
    return {"elements_equal": int(eq.sum()), "elements": int(eq.size),
            "cases_equal": int(eq.all(axis=(1, 2)).sum()), "cases": int(eq.shape[0])}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "wgmma_bitexact.json"))
    args = ap.parse_args()
    d = np.load(DATA_DIR / "tensor_wgmma_h200.npz")
    res = {}
    for f in WGMMA_FORMS:
        if f"{f.name}:A" not in d:
            continue
        t = time.time()
        try:
            r = compare(f, recorded(d, f)[0], d[f"{f.name}:D_regs"])
        except Exception as e:          # a model failure is a result too: recorded, not hidden
            r = f"failed: {type(e).__name__}: {e}"
        if isinstance(r, dict):
            r["seconds"] = round(time.time() - t, 2)
        res[f.name] = r
        print(f.name, r, flush=True)
        if f"layout:{f.name}:A" in d:
            t = time.time()
            r = compare(f, layout_stage(d, f), d[f"layout:{f.name}:D_regs"])
            r["seconds"] = round(time.time() - t, 2)
            res[f"layout:{f.name}"] = r
            print(f"layout:{f.name}", r, flush=True)
    out = {"what": __doc__.strip().splitlines()[0], "data": "data/measurements/tensor_wgmma_h200.npz",
           "model": "isa.semantics.wgmma (mma_numerics.hopper_model('wgmma', ...), fitted to the probe data)",
           "forms": res}
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
