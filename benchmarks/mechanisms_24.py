"""Issue 24's mechanism microbenchmarks (`validate/mechanisms/`): the model's predictions,
the SASS of every kernel, and model against measurement once the GPU data exist.

    python benchmarks/mechanisms_24.py predict --preset h200 [--jobs 2] [--only REGEX]
        # every measured size through gpusim.launch(timing=True), as `validate compare` runs
        # it (sampled where the grid exceeds the SMs, ncu's replay residue and background
        # writes of data/measurements/ncu_replay.json): benchmarks/results/mechanisms_predicted_<preset>.json
    python benchmarks/mechanisms_24.py sass
        # ptxas + nvdisasm (sm_90) of each kernel for its measured argument types:
        # benchmarks/results/mechanisms_sass.txt (full listings) and a per-kernel summary
    python benchmarks/mechanisms_24.py compare --data data/measurements/h200_mechanisms.json
        [--predicted benchmarks/results/mechanisms_predicted_h200.json] [--json FILE] [--only REGEX]
        # per size: measured and predicted time and each family's figures
        # (validate.mechanisms.derive), grouped by mechanism

`compare` reads the predictions from the file (`predict` writes it; pass `--repredict` to
run them again for the data file's kernels with the current model). docs/mechanisms_24.md
says what each size decides.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path
import gpusim
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from gpusim.frontend.compile import compile_kernel
from gpusim.frontend.sass import tools
from gpusim.timing.engine import TimingOptions
from validate.mechanisms import MECHANISMS
from validate.mechanisms import derive
from validate.predict import measurement_environment
from validate.suites import selected

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# predicted metrics kept per kernel: the Nsight names the measurement has, and the model's own
KEEP = re.compile(r"^(gpu__time|sm__cycles_elapsed\.max|smsp__inst_executed\.sum|smsp__thread_inst|l1tex__|lts__t_"
                  r"|dram__bytes|sm__inst_executed_pipe_|smsp__pcsamp_warps_issue_stalled_|timing__|gpusim__l2_)")


def measured_sizes(only: str | None = None) -> list[tuple[str, str]]:
    return [(g, s) for _, g, s in selected(only, None, "mechanisms")]


def _record(name: str, size: str) -> dict:
    case = MECHANISMS[name].case(size)
    return {"name": f"{name}/{size}", "mechanism": name, "size": size, "params": dict(MECHANISMS[name].sizes[size]),
            "grid": list(case.grid), "block": list(case.block)}


def predict_one(item: tuple[str, str], preset: str, environment: dict) -> dict:
    """One measured size through gpusim, as a record like a measured one; a simulator error
    is kept as `error` (the record then has no metrics)."""
    name, size = item
    rec = _record(name, size)
    case = MECHANISMS[name].case(size)
    t = time.perf_counter()
    opts = TimingOptions(mode="auto", functional="sampled", **environment)
    try:
        r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu=preset, shared_bytes=case.shared_bytes,
                          timing=True, timing_options=opts)
    except Exception as e:                                   # noqa: BLE001 - recorded: a simulator bug to report
        rec.update(metrics={}, error=f"{type(e).__name__}: {e}"[:500], seconds=round(time.perf_counter() - t, 2))
        return rec
    rec["metrics"] = {k: (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
                      for k, v in r.metrics.items() if KEEP.match(k) and isinstance(v, (int, float, str))}
    rec["seconds"] = round(time.perf_counter() - t, 2)
    return rec


def _write_predictions(path: Path, command: str, preset: str, environment: dict, done: dict, wall: float) -> None:
    order = {f"{g}/{s}": i for i, (g, s) in enumerate(measured_sizes())}
    kernels = sorted(done.values(), key=lambda k: order.get(k["name"], 1 << 30))
    tmp = path.with_suffix(".tmp")
    tmp.write_text("{" + f'"command": {json.dumps(command)}, "preset": {json.dumps(preset)}, '
                   f'"environment": {json.dumps(environment)}, "wall_s": {round(wall, 1)},\n'
                   ' "kernels": [\n' + ",\n".join("  " + json.dumps(k) for k in kernels) + "\n ]\n}\n")
    tmp.replace(path)


def cmd_predict(args) -> int:
    environment = measurement_environment({"provenance": {"gpu_short_name": args.preset.split("-")[0]}})
    items = measured_sizes(args.only)
    out_path = args.out or RESULTS / f"mechanisms_predicted_{args.preset}.json"
    done = {}
    if out_path.exists() and args.only:                 # a partial run updates the file's other kernels' entries
        done = {k["name"]: k for k in json.loads(out_path.read_text())["kernels"]}
    command = "python benchmarks/mechanisms_24.py " + " ".join(sys.argv[1:])
    t0 = time.perf_counter()

    def finished(rec):
        done[rec["name"]] = rec
        what = rec.get("error") or f"{rec['metrics']['gpu__time_duration.sum'] / 1e3:.2f} us"
        print(f"{rec['name']}: {what} ({rec['seconds']} s)", file=sys.stderr, flush=True)
        _write_predictions(out_path, command, args.preset, environment, done, time.perf_counter() - t0)

    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            futs = [pool.submit(predict_one, it, args.preset, environment) for it in items]
            for f in as_completed(futs):
                finished(f.result())
    else:
        for it in items:
            finished(predict_one(it, args.preset, environment))
    errors = [k["name"] for k in done.values() if k.get("error")]
    print(f"wrote {out_path}: {len(done)} kernels, {len(errors)} simulator errors {errors}", file=sys.stderr)
    return 0


# ---- SASS ------------------------------------------------------------------------------

def sass_of(case) -> tuple[int, list[str]]:
    """(registers, instructions) of the kernel of `case` as ptxas assembles it for sm_90."""
    ck = compile_kernel(case.kernel, case.args)
    info = tools.ptxas_info(ck.sass_ptx, ck.entry, (9, 0))
    text = tools.disassemble(info.cubin)
    lines = [re.sub(r"\s+", " ", ln.split(";")[0].split("*/", 1)[-1]).strip()
             for ln in text.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", ln)]
    return info.registers_per_thread, [ln for ln in lines if ln != "NOP"]


SUMMARY = (("atomics", r"^(@\S+ )?(RED|ATOM)[GS]?\b|ATOMS"), ("votes", r"(^|\s)(VOTEU?|UFLO|UPOPC|POPC|REDUX)\b"),
           ("global loads", r"LDG"), ("global stores", r"STG"), ("shared", r"LDS|STS"),
           ("fp64", r"^(@\S+ )?D(ADD|FMA|MUL|SETP)"), ("64-bit int", r"IMAD\.WIDE|\.X\b|\.EX\b|LEA\.HI|IADD3\.X"))


def cmd_sass(args) -> int:
    seen: dict[tuple, str] = {}
    full, summary = [], []
    for name, size in measured_sizes(args.only):
        case = MECHANISMS[name].case(size)
        key = (case.kernel.py_func.__name__, tuple(type(a).__name__ if not hasattr(a, "dtype") else str(a.dtype)
                                                   + str(getattr(a, "ndim", 0)) for a in case.args))
        if key in seen:
            continue
        seen[key] = f"{name}/{size}"
        regs, ins = sass_of(case)
        counts = {label: sum(bool(re.search(rx, x)) for x in ins) for label, rx in SUMMARY}
        ops = sorted({x.split()[0] if not x.startswith("@") else x.split()[1] for x in ins
                      if re.search(r"RED|ATOM|LDG|STG|LDS|STS|DFMA|VOTE", x)})
        summary.append(f"{key[0]:24s} (first: {name}/{size}) {regs} registers, {len(ins)} instructions; "
                       + ", ".join(f"{k} {v}" for k, v in counts.items() if v) + f"; {' '.join(ops)}")
        full.append(f"== {key[0]} ({name}/{size}; argument types {', '.join(key[1])}): {regs} registers\n"
                    + "\n".join(ins))
    print("\n".join(summary))
    if args.only and not args.out:                      # a subset: the summary only, the committed file stays whole
        return 0
    path = args.out or RESULTS / "mechanisms_sass.txt"
    path.write_text("# SASS (sm_90, ptxas/nvdisasm of this repository's toolchain) of the kernels of\n"
                    "# validate/mechanisms/ for their measured argument types; written by\n"
                    "# `python benchmarks/mechanisms_24.py sass`.\n#\n# Summary\n" +
                    "\n".join("# " + s for s in summary) + "\n\n" + "\n\n".join(full) + "\n")
    print(f"wrote {path}", file=sys.stderr)
    return 0


# ---- compare ---------------------------------------------------------------------------

MAIN = {"atomic": "ops_per_ns", "shared": "ops_per_ns", "stride": "ops_per_ns", "stencil": "ops_per_ns",
        "copies": "ops_per_ns", "i64": "thread_ops_per_sm_cycle", "f64": "thread_ops_per_sm_cycle",
        "horner": "thread_ops_per_sm_cycle", "ragged": "ops_per_ns", "blelloch": "ops_per_ns"}
SIDE = ("lts_red_sectors_per_op", "lts_red_requests_per_op", "l2_atomic_active_cycles_per_op", "wavefronts_per_op",
        "shared_atom_inst_per_op", "sm_cycles_per_load_request", "l1_hit_pct", "lts_read_sectors_per_op",
        "lts_write_sectors_per_op", "dram_read_bytes_per_op", "dram_write_bytes_per_op")


def rows(data: dict, predicted: dict) -> list[dict]:
    sms = data["provenance"].get("sm_count") or 132
    pred = {k["name"]: k for k in predicted["kernels"]}
    out = []
    for k in data["kernels"]:
        if "mechanism" not in k or not k.get("metrics"):
            continue
        p = pred.get(k["name"])
        if p is not None and not p.get("metrics"):       # the simulator failed on it
            p = None
        meas = derive(k, sms)
        prd = derive({**k, "metrics": p["metrics"]}, sms) if p else {}
        ns_m = k["metrics"].get("gpu__time_duration.sum")
        ns_p = p["metrics"].get("gpu__time_duration.sum") if p else None
        out.append({"name": k["name"], "mechanism": k["mechanism"], "check": k.get("check"),
                    "measured_ns": ns_m, "predicted_ns": ns_p,
                    "error_pct": round(100 * (ns_p - ns_m) / ns_m, 1) if ns_m and ns_p else None,
                    "measured": meas, "predicted": prd, "bound": p["metrics"].get("timing__bound") if p else None})
    return out


def cmd_compare(args) -> int:
    data = json.loads(Path(args.data).read_text())
    short = data["provenance"].get("gpu_short_name", "h200")
    ppath = Path(args.predicted) if args.predicted else RESULTS / f"mechanisms_predicted_{short}.json"
    if args.repredict:
        env = measurement_environment(data)
        items = [(k["mechanism"], k["size"]) for k in data["kernels"] if "mechanism" in k
                 and (not args.only or re.search(args.only, k["name"]))]
        predicted = {"kernels": [predict_one(it, args.preset or short, env) for it in items]}
    else:
        predicted = json.loads(ppath.read_text())
    table = [r for r in rows(data, predicted) if not args.only or re.search(args.only, r["name"])]
    errs = [abs(r["error_pct"]) for r in table if r["error_pct"] is not None]
    print(f"{'kernel':42s} {'meas us':>9s} {'pred us':>9s} {'err':>7s}  main figure (meas / pred)   side figures")
    last = None
    for r in table:
        if r["mechanism"] != last:
            print(f"-- {r['mechanism']}")
            last = r["mechanism"]
        fig = next(v for k, v in MAIN.items() if r["mechanism"].startswith(k))
        fm, fp = r["measured"].get(fig), r["predicted"].get(fig)
        side = "  ".join(f"{s}={r['measured'][s]:.3g}/{r['predicted'].get(s, float('nan')):.3g}"
                         for s in SIDE if s in r["measured"])
        err = f"{r['error_pct']:+6.1f}%" if r["error_pct"] is not None else "    n/a"
        print(f"{r['name']:42s} {(r['measured_ns'] or math.nan) / 1e3:9.2f} {(r['predicted_ns'] or math.nan) / 1e3:9.2f}"
              f" {err}  {fig}={fm if fm is None else round(fm, 4)}/{fp if fp is None else round(fp, 4)}  {side}"
              + ("" if r["check"] == "passed" else f"  CHECK {r['check']}"))
    if errs:
        print(f"{len(errs)} kernels: duration MAPE {sum(errs) / len(errs):.1f}%, "
              f"within 10% {sum(e <= 10 for e in errs)}, beyond 30% {sum(e > 30 for e in errs)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"data": str(args.data), "predicted": str(ppath), "rows": table}, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict", help="predict every measured size; write mechanisms_predicted_<preset>.json")
    p.add_argument("--preset", default="h200")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--only", help="regex on 'mechanism/size' (updates those entries of an existing file)")
    p.add_argument("--out", type=Path)
    s = sub.add_parser("sass", help="write the SASS of every kernel and a summary")
    s.add_argument("--only")
    s.add_argument("--out", type=Path)
    c = sub.add_parser("compare", help="measured against predicted, per size")
    c.add_argument("--data", required=True)
    c.add_argument("--predicted")
    c.add_argument("--repredict", action="store_true", help="predict again with the current model")
    c.add_argument("--preset", help="with --repredict: the preset (default: the data file's GPU)")
    c.add_argument("--only", help="regex on 'mechanism/size': those kernels only")
    c.add_argument("--json")
    args = ap.parse_args(argv)
    return {"predict": cmd_predict, "sass": cmd_sass, "compare": cmd_compare}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
