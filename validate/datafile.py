"""The data file `validate measure` writes (data/measurements/<gpu>.json): the two passes' records
merged into one per kernel (`merge`), the observed SM clock, the summary table, and the file
itself, provenance indented and one line per kernel (`write_data`).
"""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (tuple, list)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    return v


def short_name(gpu_name: str) -> str:
    m = re.search(r"\b([A-Z]+\d+[A-Z]*)\b", gpu_name.replace("NVIDIA", ""))
    return (m.group(1) if m else gpu_name.split()[-1]).lower()


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def summary(kernels: list[dict]) -> str:
    """A short table: each kernel's time (ncu and events), check, and derived figures."""
    lines = [f"{'kernel':34} {'ncu_us':>10} {'event_us':>9}  check  derived"]
    for k in kernels:
        ns = k.get("metrics", {}).get("gpu__time_duration.sum")
        ev = k.get("event_time_us")
        ok = "ok" if k.get("check") == "passed" and k.get("check_ncu", "passed") == "passed" else "FAIL"
        d = " ".join(f"{a}={b:.4g}" for a, b in k.get("derived", {}).items())
        lines.append(f"{k['name'][:34]:34} {ns / 1e3 if ns else float('nan'):10.2f} "
                     f"{ev if ev is not None else float('nan'):9.2f}  {ok:5}  {d}")
    return "\n".join(lines)


def clock_mhz(records: list[dict]) -> float | None:
    r = [k["metrics"]["sm__cycles_elapsed.max"] / k["metrics"]["gpu__time_duration.sum"] * 1e3
         for k in records if k.get("metrics", {}).get("gpu__time_duration.sum", 0) >= 20_000
         and "sm__cycles_elapsed.max" in k["metrics"]]
    return round(statistics.median(r), 1) if r else None


def merge(events: list[dict], pairs: list[tuple[dict, dict | None]], sms: int) -> list[dict]:
    """One record per kernel: the events pass's check, times and outputs, the ncu pass's
    metrics, check and outputs, and a microbenchmark's derived figures."""
    from validate.microbench import derive  # lazy: the microbenchmarks' numba kernels load only for their records
    by_name: dict[str, dict] = {}
    for rec in events:
        r = dict(rec)
        r["outputs_events"] = r.pop("outputs", {})
        by_name[r["name"]] = r
    for rec, prof in pairs:
        r = by_name.setdefault(rec["name"], {k: v for k, v in rec.items() if k not in ("check", "outputs")})
        r.setdefault("check", rec.get("check", "not run"))
        r["check_ncu"] = rec.get("check", "not run")
        r["outputs"] = rec.get("outputs", {})
        if prof is not None:
            r["metrics"] = prof["metrics"]
            if prof["unavailable"]:
                r["metrics_unavailable"] = prof["unavailable"]
    out = []
    for r in by_name.values():
        r.pop("launched", None)
        r.pop("host_seconds", None)
        if not r.get("outputs"):
            r.pop("outputs", None)
        if not r.get("outputs_events"):
            r.pop("outputs_events", None)
        if "microbenchmark" in r and "grid" in r:
            r["derived"] = derive(r, sms)
        out.append(r)
    return out


def write_data(path: Path, provenance: dict, kernels: list[dict]) -> None:
    """The data file: provenance indented, then one line per kernel record (diffs stay readable)."""
    body = ",\n".join("  " + json.dumps(jsonable(k), separators=(", ", ": ")) for k in kernels)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"provenance": ' + json.dumps(jsonable(provenance), indent=1).replace("\n", "\n ")
                    + ',\n "kernels": [\n' + body + "\n ]\n}\n")
