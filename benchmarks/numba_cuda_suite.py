"""numba-cuda's own cudapy tests on `from gpusim import cuda` (issue 12): the full suite.

    python benchmarks/numba_cuda_suite.py [--jobs 2] [--out benchmarks/results/numba_cuda_suite.json]

Runs every `test_*.py` module of the installed numba-cuda's `tests/cudapy` with the
harness of `tests/numba_cuda/harness.py` (one subprocess per module, the module's
`numba.cuda` imports changed to `gpusim.cuda`, 60 s per test, 300 s per module) and
writes per-module figures: passed, failed, skipped (the tests' own skip decorators),
not applicable (`tests/numba_cuda/not_applicable.toml`, one reason each), pass rate
passed / (passed + failed), crashes inside gpusim, and every test's outcome. The
summary keeps the figure with and without `test_libdevice` (317 compile-only tests of
`compile_ptx`, which would otherwise dominate the total). The target: >= 95% and no crash.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "numba_cuda"))

import harness  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", help="module names (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--module-timeout", type=float, default=300.0)
    ap.add_argument("--test-timeout", type=float, default=60.0)
    ap.add_argument("--out", help="JSON results file")
    ap.add_argument("--merge", metavar="JSON", help="run only the named modules and replace their entries in this "
                    "stored run (meta.rerun lists them)")
    ap.add_argument("--reclassify", metavar="JSON", help="no run: classify a stored run again with the current "
                    "not_applicable.toml and crash rule")
    args = ap.parse_args()
    mods = args.modules or harness.all_modules()
    load0 = os.getloadavg()[0]
    t0 = time.time()
    if args.reclassify:
        stored = json.loads(Path(args.reclassify).read_text())
        suite = harness.reclassify(stored)
        suite["meta"] = {**stored.get("meta", {}), "reclassified": True}
    else:
        suite = harness.run_suite(mods, args.jobs, args.module_timeout, args.test_timeout,
                                  progress=lambda m, r: print(f"{m}: {r['passed']}/{r['passed'] + r['failed']}",
                                                              file=sys.stderr, flush=True))
    if args.merge:
        stored = harness.reclassify(json.loads(Path(args.merge).read_text()))
        stored["modules"].update(suite["modules"])
        every = [c for r in stored["modules"].values() for c in r["results"]]
        meta = stored.get("meta", {})
        meta["rerun"] = sorted(set(meta.get("rerun", [])) | set(suite["modules"]))
        suite = {**stored, "total": harness.summarize(every), "meta": meta}
        args.reclassify = args.merge
    without = harness.summarize([c for m, r in suite["modules"].items() if m != "test_libdevice"
                                 for c in r["results"]])
    suite["total_without_test_libdevice"] = without
    if not args.reclassify:
        suite["meta"] = {"numba_cuda": metadata.version("numba-cuda"), "numba": metadata.version("numba"),
                         "python": platform.python_version(), "jobs": args.jobs,
                         "wall_s": round(time.time() - t0, 1), "load_before": load0,
                         "command": "python benchmarks/numba_cuda_suite.py " + " ".join(sys.argv[1:])}
    print(harness.table(suite))
    w = without
    print(f"without test_libdevice: {w['passed']} passed, {w['failed']} failed, pass rate {100 * w['pass_rate']:.1f}%")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(suite, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
