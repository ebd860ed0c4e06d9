"""SASS pipe assignment (gpusim.frontend.sass.opcodes) against Nsight's per-pipe counters.

    python benchmarks/sass_pipes.py [--data data/measurements/h200.json ...] [--jobs 2] [--values] [--json FILE]

For every kernel of the measurement files that is quick to simulate (the programs at
'default' and 'medium' size, the microbenchmark sizes under `--max-inst` measured warp
instructions), the functional simulation gives how often each SASS instruction ran
(warp-level executions over the launch, through the SASS-to-PTX mapping); `classify`
says which `sm__inst_executed_pipe_<p>.sum` counters each instruction increments, so
predicted[p] = the sum of those counts over the instructions counted by p, compared with
the measured counter of the same kernel.

`fmaheavy` is predicted as a range: IMAD/VIADD always run there, FP32 instructions run
on fmaheavy or fmalite at the scheduler's choice; the cell shows the lower bound and
'in' when the measurement lies inside [IMAD-class, fma].

Expected disagreements: smem_stride, bandwidth and pointer_chase have loops that ptxas
unrolls, where the SASS-to-PTX mapping is known to be off (listed separately, out of the
summary); kernels whose simulated SASS instruction total differs from
smsp__inst_executed.sum (the 'total' column) carry that mapping error into every pipe;
adu has a data-dependent part (constant-cache behaviour, divergent indexed constant
loads, EXITs that do or do not retire threads) and cbu counts divergent branches, which
a per-instruction count cannot see.

The per-SASS counts are gpusim's own (`gpusim.launch(...).sass.inst`, functional mode
on the h200 preset: gpusim/frontend/sass/mapping.py applied to the PTX blocks the
functional core executed). Needs ptxas and nvdisasm.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from gpusim.frontend.sass.opcodes import COUNTED_PIPES, UNKNOWN_OPCODES, classify
from validate.datadir import DATA_DIR
import gpusim
import programs
from validate.microbench import MICROBENCHMARKS

UNROLLED = ("smem_stride", "bandwidth", "pointer_chase")
PIPES = COUNTED_PIPES
ROOT = Path(__file__).resolve().parent.parent


def predict(instructions, inst, cc=(9, 0)) -> dict:
    """Predicted counter values from SASS instructions and their executed warp counts:
    {pipe: n} plus 'fmaheavy_hi' (fmaheavy if every FP32 instruction went there) and 'total'."""
    out = {p: 0 for p in PIPES}
    out["fmaheavy_hi"] = 0
    for x, n in zip(instructions, inst):
        n = int(n)
        if not n:
            continue
        op = classify(x, cc)
        for p in op.counters:
            out[p] += n
        if op.pipe == "fma":                     # FP32: fmaheavy or fmalite, the scheduler's choice
            out["fmaheavy_hi"] += n
    out["fmaheavy_hi"] += out["fmaheavy"]
    out["total"] = int(sum(int(n) for n in inst))
    return out


def _spec(name: str):
    return programs.PROGRAMS.get(name) or MICROBENCHMARKS[name]


def _run(kernel: str):
    """(kernel, SASS instructions, executed warp instructions per SASS instruction)."""
    name, size = kernel.split("/")
    case = _spec(name).case(size)
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu="h200", shared_bytes=case.shared_bytes)
    if r.sass is None:
        raise SystemExit("the SASS counts need ptxas and nvdisasm: pip install 'cuda-toolkit[nvcc,nvdisasm]'")
    return kernel, tuple(r.sass.instructions), [int(n) for n in r.sass.inst]


def kernels(data: dict, max_inst: float) -> list[str]:
    out = []
    for k in data["kernels"]:
        name, size = k["name"].split("/")
        if k["metrics"].get("sm__inst_executed_pipe_alu.sum") is None:
            continue
        program = name not in _microbenchmarks()
        small = k["metrics"]["smsp__inst_executed.sum"] <= max_inst
        if (program and size in ("default", "medium")) or (not program and small):
            out.append(k["name"])
    return out


def _microbenchmarks():
    return MICROBENCHMARKS


def _err(pred: float, meas: float) -> float:
    return 0.0 if pred == meas else (math.inf if meas == 0 else 100.0 * (pred - meas) / meas)


def _cell(pred: float, meas: float) -> str:
    e = _err(pred, meas)
    return "ok" if e == 0 else ("+inf" if math.isinf(e) else f"{e:+.1f}%")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+",
                    default=[str(DATA_DIR / "h200.json"), str(DATA_DIR / "h100.json")])
    ap.add_argument("--max-inst", type=float, default=6e6,
                    help="microbenchmark sizes up to this many warp instructions")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--kernels", nargs="*", help="only these name/size kernels")
    ap.add_argument("--values", action="store_true", help="print predicted and measured values, not only errors")
    ap.add_argument("--json")
    a = ap.parse_args(argv)

    datasets = [(Path(p).stem, json.loads(Path(p).read_text())) for p in a.data]
    wanted = a.kernels or kernels(datasets[0][1], a.max_inst)
    with ProcessPoolExecutor(max_workers=a.jobs) as pool:
        results = {k: (ins, counts) for k, ins, counts in pool.map(_run, wanted)}

    rows = []
    for gpu, data in datasets:
        meas_by = {k["name"]: k["metrics"] for k in data["kernels"]}
        print(f"\n== {gpu} ({data['provenance'].get('gpu_name', '?')}): predicted vs measured, relative error "
              f"('ok' = exact; fmaheavy: lower bound, 'in' = inside the FP32 range)")
        print(f"{'kernel':38s} {'total':>8s} " + " ".join(f"{p:>9s}" for p in PIPES))
        for k in wanted:
            if k not in meas_by:
                continue
            ins, counts = results[k]
            pred, m = predict(ins, counts), meas_by[k]
            meas = {p: m[f"sm__inst_executed_pipe_{p}.sum"] for p in PIPES}
            meas["total"] = m["smsp__inst_executed.sum"]
            cells = []
            for p in PIPES:
                if p == "fmaheavy":
                    inside = pred["fmaheavy"] <= meas[p] <= pred["fmaheavy_hi"]
                    cells.append("in" if inside else _cell(pred[p], meas[p]))
                else:
                    cells.append(_cell(pred[p], meas[p]))
            print(f"{k:38s} {_cell(pred['total'], meas['total']):>8s} " + " ".join(f"{c:>9s}" for c in cells))
            if a.values:
                print(f"{'  predicted':38s} {pred['total']:8.0f} " + " ".join(f"{pred[p]:9.0f}" for p in PIPES))
                print(f"{'  measured':38s} {meas['total']:8.0f} " + " ".join(f"{meas[p]:9.0f}" for p in PIPES))
            rows.append(dict(gpu=gpu, kernel=k, predicted=pred, measured=meas))
        _summary([r for r in rows if r["gpu"] == gpu])
    if UNKNOWN_OPCODES:
        print(f"\nopcodes classified by the fallback: {sorted(UNKNOWN_OPCODES)}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


def _summary(rows: list[dict]) -> None:
    included = [r for r in rows if not r["kernel"].startswith(UNROLLED)]
    exact_total = [r for r in included if r["predicted"]["total"] == r["measured"]["total"]]
    for title, sel in ((f"all {len(included)} kernels (unrolled-loop microbenchmarks excluded)", included),
                       (f"the {len(exact_total)} kernels whose simulated SASS total is exact", exact_total)):
        print(f"\nsummary over {title}:")
        print(f"  {'pipe':9s} {'exact':>7s} {'<=1%':>7s} {'median|err|':>12s} {'sum pred/meas':>14s}  worst")
        for p in ("total",) + PIPES:
            if p == "fmaheavy":
                ok = [r for r in sel
                      if r["predicted"]["fmaheavy"] <= r["measured"]["fmaheavy"] <= r["predicted"]["fmaheavy_hi"]]
                print(f"  {p:9s} inside [IMAD-class, fma] range for {len(ok)}/{len(sel)} kernels")
                continue
            errs = [(abs(e), e, r["kernel"]) for r in sel for e in [_err(r["predicted"][p], r["measured"][p])]]
            exact = sum(e == 0 for e, _, _ in errs)
            within = sum(e <= 1.0 for e, _, _ in errs)
            med = statistics.median(e for e, _, _ in errs) if errs else 0.0
            sp, sm = sum(r["predicted"][p] for r in sel), sum(r["measured"][p] for r in sel)
            worst = max(errs) if errs else (0.0, 0.0, "-")
            ratio = f"{sp / sm:.4f}" if sm else "-"
            print(f"  {p:9s} {exact:3d}/{len(sel):<3d} {within:3d}/{len(sel):<3d} {med:11.2f}% {ratio:>14s}  "
                  + (f"{worst[2]} ({worst[1]:+.1f}%)" if worst[0] else "-"))
    excluded = [r for r in rows if r["kernel"].startswith(UNROLLED)]
    if excluded:
        print("\nunrolled-loop microbenchmarks (mapping known to be off), relative error of total and pipes:")
        for r in excluded:
            cells = " ".join(f"{p}:{_cell(r['predicted'][p], r['measured'][p])}" for p in ("total",) + PIPES
                             if p != "fmaheavy")
            print(f"  {r['kernel']:28s} {cells}")


if __name__ == "__main__":
    sys.exit(main())
