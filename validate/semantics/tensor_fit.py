"""Compare the fitted tensor-core model (`isa.semantics.mma_numerics.hopper_model`) with the
results recorded by the probe (data/measurements/tensor_mma_<gpu>.npz, tensor_wgmma_<gpu>.npz):
per float form, the crafted tests (every row of each test: M = 16 has the test and its negation,
wgmma's M = 64 the eight `tensor_inputs.ROW_TRANSFORMS`) and every element of every random case,
as counts of bit-exact results; `--all` adds every element of every case (layout and crafted
cases' off-diagonal elements). Optional model overrides to try a parameter:

    python validate/semantics/tensor_fit.py [--gpu h200] [--forms f16_f32_m16n8k16,w_tf32_f32_n8]
        [--set window_bits=25 --set anchor=leading] [--all] [--show 5] [--json out.json]

A fitting aid (not a test); tests/validate/test_tensor_probe_data.py asserts the figures.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))     # run as a script from anywhere

from isa.semantics import mma_batch as MB
from isa.semantics import mma_layout as L
from isa.semantics import mma_numerics as M
from validate.datadir import DATA_DIR
from validate.semantics.tensor_forms import MMA_FORMS, WGMMA_FORMS

DATA = DATA_DIR
BITS = {"f32": 32, "f16": 16}


def form_spec(f):
    """(instruction, ctype, K, D shape, accumulator fragment map) of an mma or wgmma form."""
    if hasattr(f, "shape"):
        m, n, k = f.mnk
        return "mma", f.ctype, k, (m, n), L.frag_map(f.shape, "c", BITS[f.ctype])
    return "wgmma", f.dtype, f.k, (64, f.n), L.wgmma_acc_map(f.n, BITS[f.dtype])


def float_forms():
    return [f for f in MMA_FORMS if f.ctype in BITS and f.atype != "f64"] + \
           [f for f in WGMMA_FORMS if f.dtype in BITS]


def model_of(f) -> M.BlockFma:
    instr, ctype, k, _, _ = form_spec(f)
    return M.hopper_model(instr, f.atype, ctype, k)


def recorded(d, f):
    """A, B, C bit arrays, D as matrices, case labels and scale-d flags of one form."""
    _, ctype, _, shape, fmap = form_spec(f)
    got = L.unpack(d[f"{f.name}:D_regs"], fmap, BITS[ctype], shape)
    n = got.shape[0]
    scale = d[f"{f.name}:scale_d"] if f"{f.name}:scale_d" in d.files else np.ones(n, np.int64)
    return d[f"{f.name}:A"], d[f"{f.name}:B"], d[f"{f.name}:C"], got, list(d[f"{f.name}:labels"]), scale


def crafted_mismatches(d, f, model, rows=None) -> tuple[int, list[str]]:
    """(tests compared, mismatch descriptions) over the rows r (row t + 8 r of test t; default
    every row) of every crafted test."""
    _, ctype, _, shape, _ = form_spec(f)
    A, B, C, got, _, _ = recorded(d, f)
    rows = range(shape[0] // 8) if rows is None else rows
    n, bad = 0, []
    for (case, col), label in zip(d[f"{f.name}:test_case_col"], d[f"{f.name}:test_label"]):
        for r in rows:
            row = col + 8 * r
            want = M.dot(A[case, row], B[case, :, col], int(C[case, row, col]), f.atype, f.btype, ctype, model)
            n += 1
            if int(got[case, row, col]) != want:
                bad.append(f"{label} row {row}: got {int(got[case, row, col]):#x} model {want:#x}")
    return n, bad


def element_counts(d, f, model, every_case: bool = False) -> tuple[Counter, Counter, list[str]]:
    """(elements per case label, exact per label, first mismatches) over the random cases (or all).
    The model runs compiled over every case at once (`isa.semantics.mma_batch`, held equal to
    the scalar `mma_numerics.dot` by tests/isa/test_mma_batch.py)."""
    _, ctype, _, shape, _ = form_spec(f)
    A, B, C, got, labels, scale = recorded(d, f)
    sel = [c for c, lab in enumerate(labels) if every_case or lab.startswith("r_")]
    tot, ok, bad = Counter(), Counter(), []
    if not sel:
        return tot, ok, bad
    Cs = np.where(np.asarray(scale)[sel, None, None] != 0, C[sel], 0).astype(C.dtype)
    want = MB.mma(A[sel], B[sel], Cs, f.atype, f.btype, ctype, model)
    for k, c in enumerate(sel):
        lab = labels[c]
        eq = got[c].astype(np.uint64) == want[k]
        tot[lab] += eq.size
        ok[lab] += int(eq.sum())
        for i, j in np.argwhere(~eq)[:max(0, 20 - len(bad))]:
            bad.append(f"case {c} ({lab}) [{i},{j}]: got {int(got[c, i, j]):#x} model {int(want[k, i, j]):#x}")
    return tot, ok, bad


def _override(model: M.BlockFma, sets: list[str]) -> M.BlockFma:
    kw = {}
    for s in sets:
        key, val = s.split("=", 1)
        kw[key] = val if not val.lstrip("-").isdigit() else int(val)
        if val in ("True", "False", "None"):
            kw[key] = {"True": True, "False": False, "None": None}[val]
    return dataclasses.replace(model, **kw)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--forms", default="", help="comma-separated form names (default: every float form)")
    ap.add_argument("--set", action="append", default=[], help="model field override, e.g. window_bits=25")
    ap.add_argument("--all", action="store_true", help="every element of every case, not only random cases")
    ap.add_argument("--show", type=int, default=3)
    ap.add_argument("--json", default=None, help="write the counts here")
    args = ap.parse_args(argv)
    dm = np.load(DATA / f"tensor_mma_{args.gpu}.npz")
    dw = np.load(DATA / f"tensor_wgmma_{args.gpu}.npz")
    want = set(filter(None, args.forms.split(",")))
    out = {}
    for f in float_forms():
        if want and f.name not in want:
            continue
        d = dm if hasattr(f, "shape") else dw
        if f"{f.name}:D_regs" not in d.files:
            continue
        model = _override(model_of(f), args.set)
        rec = {}
        if f"{f.name}:test_case_col" in d.files and len(d[f"{f.name}:test_case_col"]):
            n, bad = crafted_mismatches(d, f, model)
            rec["crafted"] = [n - len(bad), n]
            print(f"{f.name}: crafted {n - len(bad)}/{n}", *bad[:args.show], sep="\n    ")
        tot, ok, bad = element_counts(d, f, model, args.all)
        rec["elements"] = {k: [ok[k], tot[k]] for k in tot}
        print(f"{f.name}: " + ", ".join(f"{k} {ok[k]}/{tot[k]}" for k in tot), *bad[:args.show], sep="\n    ")
        out[f.name] = rec
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
