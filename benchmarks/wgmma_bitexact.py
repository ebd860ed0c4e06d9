"""How many of the wgmma results recorded on the H200 gpusim reproduces bit for bit.

    python benchmarks/wgmma_bitexact.py [--out benchmarks/results/wgmma_bitexact.json]

Runs every recorded `wgmma.mma_async` case of validate/data/tensor_wgmma_h200.npz (each form
through the shared-memory layout and descriptors the probe used, scale-d as recorded, A from
registers for the `_rs` forms) through a PTX kernel on gpusim's functional core
(tests/functional/mma_kernels.py `wgmma_kernel`, one warpgroup per case, the reference core),
and the probe's layout stage (each `layout:` form's exact case through the 8 candidate
(swizzle, LBO meaning) descriptors, right or wrong); per form: D elements equal / recorded,
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
from mma_kernels import wgmma_kernel  # noqa: E402
from ptx_harness import run_ptx  # noqa: E402
from validate.semantics.tensor_forms import WGMMA_FORMS  # noqa: E402
from validate.semantics.tensor_numerics import _stage_layouts, wgmma_image  # noqa: E402

PAD = 65536       # shared bytes per case: the image, then zeros (what a wrong layout candidate reads)


def imms(f) -> str:
    if not f.is_float:
        return ""
    t = ", 1, 1"
    if f.atype in ("f16", "bf16"):
        t += f", {f.trans_b}" if f.a_regs else f", {f.trans_a}, {f.trans_b}"
    return t


def run(f, A, B, C, sd, lays) -> np.ndarray:
    """D registers (cases, 128, nacc); lays[c] = (layout of A, layout of B) of case c."""
    image = np.zeros((len(A), PAD), np.uint8)
    descs = []
    for c in range(len(A)):
        img, da, db = wgmma_image(f, A[c], B[c], *lays[c])
        image[c, :len(img)] = img
        descs.append((da, db, int(sd[c])))
    ab, cb = W.ELEM_BITS[f.atype], W.ACC_BITS[f.dtype]
    rc = L.pack(C, L.wgmma_acc_map(f.n, cb), cb)
    ra = L.pack(A, L.wgmma_a_regs_map(f.k, ab), ab) if f.a_regs else np.zeros((len(A), 128, 4), np.uint32)
    (_, _, _, _, rd), _ = run_ptx(wgmma_kernel(f.ptx, f.nacc, f.dtype, f.a_regs, imms(f), PAD), "wg_k",
                                  (len(A), 1, 1), (128, 1, 1), [image, np.array(descs, np.uint64), ra, rc, np.zeros_like(rc)])
    return rd


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
    d = np.load(os.path.join(ROOT, "validate", "data", "tensor_wgmma_h200.npz"))
    res = {}
    for f in WGMMA_FORMS:
        if f"{f.name}:A" not in d:
            continue
        t = time.time()
        A, B, C, sd = (d[f"{f.name}:{k}"] for k in ("A", "B", "C", "scale_d"))
        lay = tuple(tuple(x) for x in d[f"{f.name}:layout"])
        try:
            r = compare(f, run(f, A, B, C, sd, [lay] * len(A)), d[f"{f.name}:D_regs"])
        except Exception as e:          # a model failure is a result too: recorded, not hidden
            r = f"failed: {type(e).__name__}: {e}"
        if isinstance(r, dict):
            r["seconds"] = round(time.time() - t, 2)
        res[f.name] = r
        print(f.name, r, flush=True)
        if f"layout:{f.name}:A" in d:
            t = time.time()
            lays = _stage_layouts(f, ("128B", "lbo_k"))
            A, B, C = (np.repeat(d[f"layout:{f.name}:{k}"][None], len(lays), 0) for k in "ABC")
            r = compare(f, run(f, A, B, C, np.ones(len(lays), np.int64), lays), d[f"layout:{f.name}:D_regs"])
            r["seconds"] = round(time.time() - t, 2)
            res[f"layout:{f.name}"] = r
            print(f"layout:{f.name}", r, flush=True)
    out = {"what": __doc__.strip().splitlines()[0], "data": "validate/data/tensor_wgmma_h200.npz",
           "model": "isa.semantics.wgmma (mma_numerics.hopper_model('wgmma', ...), fitted to the probe data)",
           "forms": res}
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
