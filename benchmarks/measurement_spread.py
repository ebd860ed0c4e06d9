"""How far repeat measurements land from the committed ones (the measurement's own spread).

    python benchmarks/measurement_spread.py [--base data/measurements/h200x2_multi.json]
        [--runs 'data/measurements/repeat/h200x2_collectives_*_run*.json']

For every collective record present in a repeat run and in the base file (same op, GPU count and
size): |repeat time / base time - 1|, summarised at >= 1 MiB and below (the issue's two targets'
ranges), with the largest per size range named.
"""
from __future__ import annotations

import argparse
import glob
import json
import statistics
from pathlib import Path
from validate.datadir import DATA_DIR

ROOT = Path(__file__).resolve().parents[1]
MiB = 1 << 20


def spread(base: dict, runs: list[dict]) -> dict:
    key = lambda r: (r["op"], r["gpus"], r["bytes"])          # noqa: E731
    ref = {key(r): r["time_us"] for r in base["collectives"] if "time_us" in r}
    out = {}
    for label, keep in (("ge_1MiB", lambda b: b >= MiB), ("lt_1MiB", lambda b: b < MiB)):
        diffs = [(abs(r["time_us"] / ref[key(r)] - 1) * 100, key(r)) for run in runs for r in run["collectives"]
                 if "time_us" in r and key(r) in ref and keep(r["bytes"])]
        if diffs:
            worst = max(diffs)
            out[label] = {"pairs": len(diffs), "median_abs_diff_pct": round(statistics.median(d for d, _ in diffs), 2),
                          "max_abs_diff_pct": round(worst[0], 2), "worst": "%s x%d %d" % worst[1]}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", type=Path, default=DATA_DIR / "h200x2_multi.json")
    p.add_argument("--runs", default=str(DATA_DIR / "repeat/h200x2_collectives_*_run*.json"))
    a = p.parse_args(argv)
    files = sorted(glob.glob(a.runs))
    if not files:
        raise SystemExit(f"no repeat runs match {a.runs}")
    res = spread(json.loads(a.base.read_text()), [json.loads(Path(f).read_text()) for f in files])
    print(json.dumps({"base": str(a.base.relative_to(ROOT)), "runs": [str(Path(f).relative_to(ROOT)) for f in files],
                      **res}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
