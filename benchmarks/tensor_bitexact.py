"""How many of the tensor-core results recorded on the H200 gpusim reproduces bit for bit.

    python benchmarks/tensor_bitexact.py [--out benchmarks/results/tensor_bitexact.json]

Runs every recorded `mma.sync` case of data/measurements/tensor_mma_h200.npz through a PTX kernel
on gpusim's functional core (tests/functional/mma_kernels.py, the reference core) and compares
each D element with the GPU's; per form: elements equal / recorded, and cases all equal.
The numerics parameters are those of `isa.semantics.tensor.model_for` at the time of the run.
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
from isa.semantics import tensor as T  # noqa: E402
from mma_kernels import mma_kernel  # noqa: E402
from ptx_harness import run_ptx  # noqa: E402
from validate.semantics.tensor_forms import MMA_FORMS  # noqa: E402
from validate.datadir import DATA_DIR  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "tensor_bitexact.json"))
    args = ap.parse_args()
    d = np.load(DATA_DIR / "tensor_mma_h200.npz")
    res = {}
    for f in MMA_FORMS:
        if f.atype == "f64":
            res[f.name] = "not executed (f64 m8n8k4 refused)"
            continue
        t = time.time()
        form = T.MmaForm(f.shape, f.atype, f.btype, f.ctype, f.satfinite)
        na, nb, nc = form.nregs()
        ab, cb = T.ELEM_BITS[f.atype], T.ELEM_BITS[f.ctype]
        m, n, _ = f.mnk
        A, B, C = (d[f"{f.name}:{k}"] for k in "ABC")
        regs = [L.pack(A, L.frag_map(f.shape, "a", ab), ab), L.pack(B, L.frag_map(f.shape, "b", ab), ab)]
        rc = L.pack(C, L.frag_map(f.shape, "c", cb), cb)
        try:
            (_, _, _, rd), _ = run_ptx(mma_kernel(f.ptx, na, nb, nc, f.ctype), "mma_k", (len(rc), 1, 1), (32, 1, 1),
                                       regs + [rc, np.zeros_like(rc)])
        except Exception as e:          # a model failure is a result too: recorded, not hidden
            res[f.name] = f"failed: {type(e).__name__}: {e}"
            print(f.name, res[f.name], flush=True)
            continue
        cmap = L.frag_map(f.shape, "c", cb)
        got = L.unpack(rd, cmap, cb, (m, n))
        gpu = L.unpack(d[f"{f.name}:D_regs"], cmap, cb, (m, n))
        eq = got == gpu
        res[f.name] = {"elements_equal": int(eq.sum()), "elements": int(eq.size),
                       "cases_equal": int(eq.all(axis=(1, 2)).sum()), "cases": int(eq.shape[0]),
                       "seconds": round(time.time() - t, 2)}
        print(f.name, res[f.name], flush=True)
    out = {"what": __doc__.strip().splitlines()[0], "data": "data/measurements/tensor_mma_h200.npz",
           "model": "isa.semantics.tensor.model_for (mma_numerics.hopper_model, fitted to the probe data; fp8: ptxas sm_90 "
                    "emulation)", "forms": res}
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
