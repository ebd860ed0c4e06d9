"""numba-cuda's own cudapy tests, run against `from gpusim import cuda`.

Each test module of the installed package (`numba/cuda/tests/cudapy/test_*.py`) runs in
a subprocess (`child.py`: the module's `numba.cuda` imports become `gpusim.cuda`
imports, kernels run in the simulator), with a per-test alarm and a per-module time
limit. A test that hangs or kills its process is recorded as an error and the module
goes on in a fresh process without it, so one hang costs one test, not the run.

Every test gets one class:
- `passed`: unittest success, or an expected failure that failed;
- `failed`: a failure, an error, an unexpected success, a timeout; `crash` when the
  error was raised inside gpusim/isa and is not a GpusimError/IsaError (a simulator bug);
- `skipped`: skipped by the test's own decorators (e.g. a library that is not installed);
- `not_applicable`: listed in `not_applicable.toml` (module, class or test id, one
  reason each): what a simulator of kernel execution has no counterpart for. These
  still run and their outcome is reported (`na_outcomes`), so a listed test that now
  passes shows up.
The pass rate is passed / (passed + failed).

    python tests/numba_cuda/harness.py [MODULE ...] [--jobs 2] [--out results.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CHILD = HERE / "child.py"
NOT_APPLICABLE = HERE / "not_applicable.toml"


def cudapy_dir() -> Path:
    import importlib.util
    spec = importlib.util.find_spec("numba.cuda")
    return Path(spec.origin).parent / "tests" / "cudapy"


def all_modules() -> list[str]:
    return sorted(p.stem for p in cudapy_dir().glob("test_*.py"))


def load_not_applicable(path: Path = NOT_APPLICABLE) -> dict[str, str]:
    """{module | module.Class | module.Class.test: reason}."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    out = {}
    for key, reason in data.get("not_applicable", {}).items():
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"{path}: entry {key!r} needs a reason")
        out[key] = reason
    return out


def na_reason(test_id: str, na: dict[str, str]) -> str | None:
    parts = test_id.split(".")
    for k in range(len(parts), 0, -1):
        r = na.get(".".join(parts[:k]))
        if r is not None:
            return r
    return None


# ----------------------------------------------------------------------------- running one module
def run_module(module: str, module_timeout_s: float = 300.0, test_timeout_s: float = 60.0) -> list[dict]:
    """Outcome records of every test of `module` (see child.py for their fields)."""
    done: dict[str, dict] = {}
    collected: list[str] | None = None
    deadline = time.monotonic() + module_timeout_s
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "PYTHONHASHSEED": "0", "NUMBA_ENABLE_CUDASIM": "0"}
    while True:
        left = deadline - time.monotonic()
        with tempfile.NamedTemporaryFile("r", suffix=".jsonl", delete=False) as tmp:
            out = tmp.name
        cmd = [sys.executable, str(CHILD), module, out, "--test-timeout", str(test_timeout_s),
               "--skip", *done]
        rc = None
        try:
            proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  timeout=max(left, 1.0), cwd=tempfile.gettempdir())
            rc = proc.returncode
            stderr = proc.stderr.decode(errors="replace")[-500:]
        except subprocess.TimeoutExpired:
            stderr = ""
        started = None
        with open(out) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if rec.get("event") == "collected":
                    collected = rec["ids"] if collected is None else collected
                elif rec.get("event") == "start":
                    started = rec["id"]
                else:
                    done[rec["id"]] = rec
                    started = None if started == rec["id"] else started
        os.unlink(out)
        if started is not None:                  # the process hung or died inside this test
            why = "the module ran past its time limit" if rc is None else f"the process died (exit {rc}): {stderr}"
            done[started] = {"id": started, "status": "error", "exc": "Timeout" if rc is None else "Died",
                             "msg": why.strip()[:300]}
        if collected is None and not done:       # died before collecting
            done[f"{module}.<import>"] = {"id": f"{module}.<import>", "status": "error", "exc": "Died",
                                           "msg": f"exit {rc}: {stderr.strip()[-300:]}"}
        missing = [t for t in (collected or []) if t not in done]
        if not missing or rc == 0 and started is None:
            break
        if time.monotonic() >= deadline:
            for t in missing:
                done[t] = {"id": t, "status": "error", "exc": "Timeout", "msg": "not run: the module's time ran out"}
            break
    order = {t: i for i, t in enumerate(collected or [])}
    return sorted(done.values(), key=lambda r: order.get(r["id"], -1))


# ----------------------------------------------------------------------------- classification
def classify(records: list[dict], na: dict[str, str]) -> list[dict]:
    out = []
    for r in records:
        status = r["status"]
        reason = na_reason(r["id"], na)
        outcome = "passed" if status in ("pass", "xfail") else "skipped" if status == "skip" else "failed"
        c = {"id": r["id"], "outcome": outcome, "status": status, "seconds": r.get("seconds")}
        if status == "skip" and r.get("msg"):
            c["skip_reason"] = r["msg"]
        if reason is not None:
            c.update(outcome="not_applicable", reason=reason, ran=outcome)
        if status in ("fail", "error", "xpass"):
            c["error"] = f"{r.get('exc', status)}: {r.get('msg', '')}".strip()
            if r.get("where"):
                c["where"] = r["where"]
        if r.get("crash") and not _raised_on_purpose(r.get("trace") or ""):
            c["crash"] = True
            c["trace"] = r.get("trace")
        out.append(c)
    return out


def _raised_on_purpose(trace: str) -> bool:
    """Whether the innermost frame of a formatted traceback is a `raise` statement (see child.py)."""
    lines = trace.splitlines()
    files = [i for i, ln in enumerate(lines) if ln.lstrip().startswith('File "')]
    return bool(files) and files[-1] + 1 < len(lines) and lines[files[-1] + 1].lstrip().startswith("raise")


def summarize(classified: list[dict]) -> dict:
    n = Counter(c["outcome"] for c in classified)
    applicable = n["passed"] + n["failed"]
    return {"tests": len(classified), "passed": n["passed"], "failed": n["failed"], "skipped": n["skipped"],
            "not_applicable": n["not_applicable"],
            "crashes": sum(1 for c in classified if c.get("crash") and c["outcome"] != "skipped"),
            "pass_rate": round(n["passed"] / applicable, 4) if applicable else None}


def run_suite(modules: list[str], jobs: int = 2, module_timeout_s: float = 300.0, test_timeout_s: float = 60.0,
              progress=None) -> dict:
    """{"modules": {name: {summary..., "tests": [classified...]}}, "total": summary}."""
    na = load_not_applicable()
    results: dict[str, dict] = {}

    def one(m: str) -> tuple[str, dict, float]:
        t0 = time.monotonic()
        cl = classify(run_module(m, module_timeout_s, test_timeout_s), na)
        return m, cl, time.monotonic() - t0

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for m, cl, secs in pool.map(one, modules):
            results[m] = {**summarize(cl), "seconds": round(secs, 1), "results": cl}
            if progress:
                progress(m, results[m])
    every = [c for r in results.values() for c in r["results"]]
    return {"modules": results, "total": summarize(every)}


def reclassify(suite: dict) -> dict:
    """`suite` (a stored run) classified again with the current not-applicable list and crash
    rule, from each test's recorded status, error and traceback."""
    na = load_not_applicable()
    out = {}
    for m, r in suite["modules"].items():
        records = []
        for c in r["results"]:
            exc, _, msg = (c.get("error") or "").partition(": ")
            status = "skip" if exc == "Skipped" else c["status"]          # pytest.skip() in a unittest test
            rec = {"id": c["id"], "status": status, "seconds": c.get("seconds"), "exc": exc, "msg": msg,
                   "where": c.get("where"), "crash": c.get("crash"), "trace": c.get("trace")}
            records.append({k: v for k, v in rec.items() if v is not None})
        cl = classify(records, na)
        out[m] = {**summarize(cl), "seconds": r.get("seconds"), "results": cl}
    every = [c for r in out.values() for c in r["results"]]
    return {**suite, "modules": out, "total": summarize(every)}


def skips(suite: dict) -> list[str]:
    """Every skipped test with its reason (the test's own decorator, e.g. "requires cffi")."""
    return [f"{c['id']}: {c.get('skip_reason', '')}" for r in suite["modules"].values() for c in r["results"]
            if c["outcome"] == "skipped"]


def failures(suite: dict) -> list[str]:
    return [f"{c['id']}: {c.get('error', c['status'])}" + (" [CRASH]" if c.get("crash") else "")
            for r in suite["modules"].values() for c in r["results"] if c["outcome"] == "failed"]


def table(suite: dict) -> str:
    rows = [f"{'module':40} {'pass':>5} {'fail':>5} {'skip':>5} {'n/a':>5} {'rate':>7} {'s':>6}"]
    for m, r in suite["modules"].items():
        rate = "-" if r["pass_rate"] is None else f"{100 * r['pass_rate']:.1f}%"
        rows.append(f"{m:40} {r['passed']:5} {r['failed']:5} {r['skipped']:5} {r['not_applicable']:5} {rate:>7} "
                    f"{r['seconds']:6.1f}")
    t = suite["total"]
    rate = "-" if t["pass_rate"] is None else f"{100 * t['pass_rate']:.1f}%"
    rows.append(f"{'TOTAL':40} {t['passed']:5} {t['failed']:5} {t['skipped']:5} {t['not_applicable']:5} {rate:>7}"
                f"   crashes: {t['crashes']}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", help="module names (default: every test_*.py)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--module-timeout", type=float, default=300.0)
    ap.add_argument("--test-timeout", type=float, default=60.0)
    ap.add_argument("--out", help="write the full results as JSON here")
    ap.add_argument("--failures", action="store_true", help="list every failed test")
    args = ap.parse_args(argv)
    mods = args.modules or all_modules()
    suite = run_suite(mods, args.jobs, args.module_timeout, args.test_timeout,
                      progress=lambda m, r: print(f"{m}: {r['passed']}/{r['passed'] + r['failed']} "
                                                  f"({r['seconds']} s)", file=sys.stderr, flush=True))
    print(table(suite))
    if args.failures:
        print("\n".join(failures(suite)))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(suite, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
