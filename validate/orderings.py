"""`python -m validate orderings --data FILE [--predictions FILE] [--json]`: the textbook
orderings of the second held-out suite (`validate.heldout2.ORDERINGS`: launch `slower` takes
longer than launch `faster`) in a measurement and, optionally, in predictions.

--data is a measurement file of `validate measure --suite heldout2` (durations:
`gpu__time_duration.sum` of the records whose checks passed); --predictions is the JSON that
`validate compare --data FILE --out OUT.json` writes (each kernel's `predicted_ns`). An
ordering is judged in the measurement first: one the GPU does not show was a wrong
expectation ("not on the GPU"); of those it shows, the predictions should show every one
("wrong in the predictions" lists those they miss). `validate compare` adds the same
summary for a heldout2 data file. Imports nothing of gpusim.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from validate.datadir import measurement_file
from validate.heldout2 import ORDERINGS, check_orderings

DURATION = "gpu__time_duration.sum"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=measurement_file, required=True, help="a measurement file, e.g. data/measurements/h200_heldout2.json")
    p.add_argument("--predictions", type=Path, help="the --out JSON of `validate compare` on the same data")
    p.add_argument("--json", action="store_true", help="print one JSON object (summary and every ordering)")


def measured_durations(data: dict) -> dict[str, float]:
    """{"kernel/size": ns} of the records whose checks passed (events and ncu passes)."""
    return {k["name"]: k["metrics"][DURATION] for k in data["kernels"]
            if k.get("check") == "passed" and k.get("check_ncu", "passed") == "passed"
            and DURATION in k.get("metrics", {})}


def predicted_durations(compare_out: dict) -> dict[str, float]:
    """{"kernel/size": ns} from `validate compare --out`'s kernels."""
    return {k["name"]: k["predicted_ns"] for k in compare_out["kernels"] if k.get("predicted_ns")}


def _label(row: dict) -> str:
    return f"{row['slower']} > {row['faster']}"


def summary(measured: dict[str, float], predicted: dict[str, float] | None = None, orderings=ORDERINGS) -> dict:
    """Counts and lists: orderings with both launches measured, how many the GPU shows, and,
    with predictions, how many of those the predictions show and which they miss."""
    on_gpu = check_orderings(measured, orderings)
    known = [r for r in on_gpu if r["holds"] is not None]
    shown = [r for r in known if r["holds"]]
    out = {"orderings": len(orderings), "orderings_measured": len(known),
           "orderings_hold_measured": len(shown),
           "orderings_not_on_gpu": [_label(r) for r in known if not r["holds"]]}
    if predicted is not None:
        pred = {_label(r): r for r in check_orderings(predicted, orderings)}
        out["orderings_hold_predicted"] = sum(bool(pred[_label(r)]["holds"]) for r in shown)
        out["orderings_wrong_predicted"] = [_label(r) for r in shown if not pred[_label(r)]["holds"]]
    return out


def table(measured: dict[str, float], predicted: dict[str, float] | None = None, orderings=ORDERINGS) -> str:
    """One line per ordering: the measured (and predicted) ratio slower / faster."""
    meas = check_orderings(measured, orderings)
    pred = check_orderings(predicted, orderings) if predicted is not None else [None] * len(meas)
    fmt = lambda r: "   n/a  " if r is None or r["ratio"] is None else f"{r['ratio']:6.2f} {'ok' if r['holds'] else '--'}"
    lines = [f"{'ordering (slower > faster)':62s} {'measured':>9s} {'predicted':>10s}"]
    for m, p in zip(meas, pred):
        lines.append(f"{_label(m)[:62]:62s} {fmt(m):>9s} {fmt(p) if predicted is not None else '':>10s}")
    return "\n".join(lines)


def run(args) -> int:
    measured = measured_durations(json.loads(args.data.read_text()))
    predicted = predicted_durations(json.loads(args.predictions.read_text())) if args.predictions else None
    result = summary(measured, predicted)
    if args.json:
        result["rows"] = [{**r, "predicted_ratio": p["ratio"] if predicted is not None else None}
                          for r, p in zip(check_orderings(measured),
                                          check_orderings(predicted or {}))]
        print(json.dumps(result))
        return 0
    print(table(measured, predicted))
    for k, v in result.items():
        print(f"{k}: {v}")
    return 0
