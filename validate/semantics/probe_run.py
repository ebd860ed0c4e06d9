"""The bookkeeping of one GPU probe run: a log with times, recorded errors, a time budget, steps
guarded so one failure keeps the other results, and batches of jobs for one binary (one CUDA
context for many jobs; what a fault leaves undone is rerun job by job).

Used by `validate/semantics/tensor_probe.py`; needs no GPU itself.
"""
from __future__ import annotations

import subprocess
import time
import traceback
from pathlib import Path


class Run:
    """State of one probe run: log, records, deadline."""

    def __init__(self, args):
        self.args = args
        self.t0 = time.time()
        self.log_lines: list[str] = []
        self.errors: list[str] = []
        self.steps: dict[str, float] = {}

    def log(self, msg: str) -> None:
        line = f"[{time.time() - self.t0:7.1f}s] {msg}"
        self.log_lines.append(line)
        print(line, flush=True)

    def guard(self, label: str, fn, *a, **kw):
        """Run one step; an exception is logged and recorded, and the run goes on."""
        try:
            return fn(*a, **kw)
        except Exception:                    # noqa: BLE001 (one GPU run: keep every other result)
            tb = traceback.format_exc()
            self.errors.append(f"{label}: {tb.strip().splitlines()[-1]}")
            self.log(f"step {label} failed:\n{tb}")
            return None

    def left(self) -> float:
        return self.args.budget_s - (time.time() - self.t0)

    def sh(self, cmd: list[str], timeout: float, label: str) -> tuple[int, str, str]:
        self.log(f"$ {' '.join(cmd)}")
        t = time.time()
        try:
            p = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = 124, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout"
        except OSError as e:
            rc, out, err = 127, "", str(e)
        dt = time.time() - t
        self.steps[label] = round(dt, 2)
        tail = (err or "")[-1500:]
        self.log(f"  rc={rc} in {dt:.1f}s{(' stderr: ' + tail) if tail.strip() else ''}")
        if rc != 0:
            self.errors.append(f"{label}: rc={rc} {tail.strip()[-300:]}")
        return rc, out, err



def run_jobs(run: Run, exe: Path, jobs: list[tuple[str, list[str], Path]], label: str, tmp: Path) -> None:
    """Run jobs (name, arguments, output file) through `exe batch`; rerun the undone one by one."""
    for _, _, out in jobs:
        out.unlink(missing_ok=True)
    manifest = tmp / f"{label}.jobs"
    manifest.write_text("".join(" ".join(a) + "\n" for _, a, _ in jobs))
    rc, _, _ = run.sh([str(exe), "batch", str(manifest)], max(60.0, 3.0 * len(jobs)), f"batch:{label}")
    if rc == 0:
        return
    for name, a, out in jobs:
        if not out.exists() and run.left() > 20:
            run.sh([str(exe), *a], 60, name)
