"""Atomic kernels before and after the placement of arrays where the GPU had them and the measured
atomic-unit hash (docs/mechanisms_24.md section 38), on the measured sets' atomic launches.

    python benchmarks/atomic_placement.py [--json benchmarks/results/atomic_placement.json]

Two predictions of every launch whose name matches a set's pattern:
- before: the Hopper presets as they were (512-B atomic granules, each its own unit, no hash) and
  gpusim's own heap placement (the records' `arg_addresses` dropped);
- now: the presets (256-B chunks, `HOPPER_ATOMIC_HASH_MASKS`) with each array at the GPU's address
  modulo 2 MiB (`validate.predict` passes `arg_addresses` as `device_addresses`).
Printed and written: each launch's measured and predicted microseconds and error, each set's MAPE.
The figures of the whole sets are `validate compare`'s (benchmarks/results/compare_*.json).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from pathlib import Path

from gpusim.specs.overrides import resolve
from validate.compare import compare
from validate.datadir import DATA_DIR
from validate.predict import DURATION

SETS = {"h200_mechanisms": "^atomic_", "h100_mechanisms": "^atomic_", "h200": "^(atomic_throughput|histogram)", "h100": "^(atomic_throughput|histogram)",
        "h200_heldout": "histogram", "h200_heldout2": "^(hist_|atomic_add|reduce_warp_atomic)",
        "h100_heldout2": "^(hist_|atomic_add|reduce_warp_atomic)"}


def _before(spec):
    return dataclasses.replace(spec, l2=dataclasses.replace(spec.l2, atomic_unit_granule_bytes=512,
                                                            atomic_unit_hash_masks=()))


def _without_addresses(path: Path, tmp: Path) -> Path:
    data = json.loads(path.read_text())
    for k in data["kernels"]:
        k.pop("arg_addresses", None)
    out = tmp / path.name
    out.write_text(json.dumps(data))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    result = {"command": "python benchmarks/atomic_placement.py" + (f" --json {args.json}" if args.json else ""),
              "sets": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, pattern in SETS.items():
            path = DATA_DIR / f"{name}.json"
            spec = resolve(name.split("_")[0])
            rows = {}
            for label, data, preset in (("before", _without_addresses(path, Path(tmp)), _before(spec)),
                                        ("now", path, spec)):
                for r in compare(data, preset=preset, only=pattern, jobs=args.jobs)[0]:
                    m, p = r.measured[DURATION], r.predicted.get(DURATION)
                    row = rows.setdefault(r.name, {"measured_us": round(m / 1e3, 2)})
                    row[f"{label}_us"] = round(p / 1e3, 2) if p else None
                    row[f"{label}_error_pct"] = round(100 * (p / m - 1), 2) if p else None
            mape = {lab: round(sum(abs(r[f"{lab}_error_pct"]) for r in rows.values()) / len(rows), 2)
                    for lab in ("before", "now")}
            result["sets"][name] = {"pattern": pattern, "mape_pct": mape, "launches": rows}
            print(f"{name}: {len(rows)} launches, MAPE before {mape['before']}% now {mape['now']}%")
            for n, r in rows.items():
                print(f"  {n:36s} {r['measured_us']:10.1f} {r['before_error_pct']:+8.1f} {r['now_error_pct']:+8.1f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
