"""The passes of `validate measure` (method: validate/measure.py): each worker process's command
(`worker_cmd`), running it in its own process group with a time limit (`call`), the ncu pass
with its preflight and chunks (`run_ncu`), and nvidia-smi's clocks and temperatures (`smi`).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from validate import ncu
from validate.suites import selected

ROOT = Path(__file__).resolve().parents[1]


def smi() -> dict:
    q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,pstate"
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=30, check=True)
        vals = [v.strip() for v in r.stdout.splitlines()[0].split(",")]
        head = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30).stdout
        m = re.search(r"CUDA Version:\s*([\d.]+)", head)
        return {**dict(zip(q.split(","), vals)), "cuda_version": m.group(1) if m else None}
    except Exception as e:                               # noqa: BLE001 - informational only
        return {"error": f"{type(e).__name__}: {e}"}


def worker_cmd(args, mode: str, out: Path, only: str | None = None, cases: Path | None = None,
                suite: str | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "validate", "measure", "--worker", mode, "--worker-out", str(out),
           "--suite", suite or args.suite]
    only = only if only is not None else args.only
    if only:
        cmd += ["--only", only]
    if args.skip:
        cmd += ["--skip", args.skip]
    if cases:
        cmd += ["--cases", str(cases)]
    return cmd


def call(cmd: list[str], timeout: float | None, stdout=None) -> int:
    """Run `cmd` in its own process group; on timeout kill the whole group (ncu and the
    worker it started) and return 124."""
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=stdout, start_new_session=True)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return 124


def run_ncu(args, workdir: Path) -> tuple[list, dict]:
    """Profile the worker under ncu, in chunks; ([(launch record, ncu kernel or None)], notes)."""
    exe = args.ncu or ncu.find_ncu()
    stalls = [] if args.no_stalls else [ncu.STALL_REGEX, ncu.SAMPLE_COUNT]
    mech = list(ncu.MECHANISM_METRICS) if args.suite == "mechanisms" else \
        list(ncu.TENSOR_METRICS) if args.suite == "tensor" else []
    notes = {"ncu": exe, "dropped_metrics": []}
    if mech:                               # drop the counters this ncu does not list for the device, up front
        try:
            q = subprocess.run([exe, "--query-metrics"], capture_output=True, text=True, timeout=120)
            notes["dropped_metrics"] = ncu.not_listed(mech, ncu.listed_metrics(q.stdout))
        except Exception:                                # noqa: BLE001 - the preflight below still drops them
            pass
        mech = [m for m in mech if m not in notes["dropped_metrics"]]
    metrics = list(ncu.METRICS) + list(ncu.EXTRA) + mech + stalls
    try:
        notes["ncu_version"] = subprocess.run([exe, "--version"], capture_output=True, text=True,
                                              timeout=60).stdout.strip().splitlines()[-1]
    except Exception:                                    # noqa: BLE001
        notes["ncu_version"] = "unknown"
    # Preflight on the smallest kernel: drop what this ncu/chip refuses -- the names it
    # reports (one a try), else the mechanism counters, else the optional pipe counters, else
    # PC sampling, else all but the core list.
    for _ in range(5 + len(mech)):
        log = workdir / "ncu_preflight.csv"
        r = subprocess.run(ncu.command(exe, metrics, str(log), worker_cmd(args, "ncu", workdir / "pre.json",
                                                                          "^launch_overhead/default$",
                                                                          suite="programs")),
                           capture_output=True, text=True, cwd=ROOT)
        text = (log.read_text() if log.exists() else "") + r.stdout + r.stderr
        bad = ncu.unknown_metrics(text)
        if r.returncode == 0 and ncu.parse_csv(text) and not bad:
            break
        drop = [m for m in metrics if any(b in m for b in bad)]
        for group in (mech, ncu.EXTRA, stalls, [m for m in metrics if m not in ncu.CORE]):
            if not drop:
                drop = [m for m in metrics if m in group]
        if not drop:
            raise RuntimeError(f"ncu preflight failed (rc {r.returncode}):\n{text[-3000:]}")
        notes["dropped_metrics"] += drop
        metrics = [m for m in metrics if m not in drop]
        (workdir / f"ncu_preflight_failed{len(notes['dropped_metrics'])}.log").write_text(text[-20000:])
    notes["metrics_requested"] = metrics
    names = [f"{g}/{z}" for _, g, z in selected(args.only, args.skip, args.suite)]
    k = max(1, min(args.ncu_chunks, len(names)))
    pairs, notes["ncu_returncodes"] = [], []
    for c in range(k):
        part = names[c * len(names) // k:(c + 1) * len(names) // k]
        cases, log, manifest = (workdir / f"ncu_cases{c}.json", workdir / f"ncu{c}.csv", workdir / f"ncu_worker{c}.json")
        cases.write_text(json.dumps(part))
        with open(workdir / f"ncu{c}.stdout", "w") as so:
            rc = call(ncu.command(exe, metrics, str(log), worker_cmd(args, "ncu", manifest, cases=cases)),
                       args.ncu_timeout, stdout=so)
        notes["ncu_returncodes"].append(rc)
        got = json.loads(manifest.read_text())["records"] if manifest.exists() else []
        text = (log.read_text() if log.exists() else "") + (workdir / f"ncu{c}.stdout").read_text()
        try:
            pairs += ncu.match(got, ncu.parse_csv(text))
        except ValueError as e:                          # out of step: keep the checks, not the counters
            notes.setdefault("errors", []).append(str(e))
            pairs += [(r, None) for r in got]
        if manifest.exists():
            notes.setdefault("device", json.loads(manifest.read_text())["device"])
    return pairs, notes
