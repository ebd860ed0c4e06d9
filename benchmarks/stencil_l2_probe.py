"""What a real H100/H200 counts for the memory chart's numbers (issue 30): the 2-D 5-point
stencil of docs/examples/stencil_2d.py at the teaching size (256 x 512 float32, a 524 KB
input) and at 1024 x 1024, and the predicated-on thread instructions of two kernels whose
branches ptxas treats differently (divergence_demo's if-converted lane-parity branch,
stencil_1d's halo branch).

    python benchmarks/stencil_l2_probe.py OUT_DIR                # on a GPU machine, under a minute
    python benchmarks/stencil_l2_probe.py OUT_DIR --ncu /usr/local/cuda/bin/ncu

Runs Nsight Compute once on a worker (this script with --worker) that launches each case
exactly once through Numba (outputs checked against numpy), with the options of
`validate measure` (validate/ncu.py: clocks as found, caches flushed before each replay
pass, kernel replay), and writes OUT_DIR/stencil_l2_probe_<gpu>.json: per case its
launch, the metrics below, and the provenance (GPU, driver, ncu, Numba, Python, date,
command, git commit). tests/viz/test_stencil_l2_measured.py compares the model with the
committed copy (benchmarks/results/stencil_l2_probe_<gpu>.json).

Metrics: DRAM bytes; L2 sectors by op with their lookup hits and the hit rates; L1 load
requests, sectors and lookup hits; L1 <-> L2 bytes; time; warp, thread and predicated-on
thread instructions.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "docs", "examples"))
from importlib import metadata  # noqa: E402
from validate.ncu import command, find_ncu, match, parse_csv, unknown_metrics  # noqa: E402

METRICS = (
    "gpu__time_duration.sum", "sm__cycles_elapsed.max",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "lts__t_sectors.sum", "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum",
    "lts__t_sectors_op_read_lookup_hit.sum", "lts__t_sectors_op_read_lookup_miss.sum",
    "lts__t_sector_hit_rate.pct", "lts__t_sector_op_read_hit_rate.pct",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__m_xbar2l1tex_read_bytes.sum", "l1tex__m_l1tex2xbar_write_bytes.sum",
    "smsp__inst_executed.sum", "smsp__thread_inst_executed.sum", "smsp__thread_inst_executed_pred_on.sum",
)
CASES = (  # (name, program file or programs name, size parameters)
    ("stencil_2d/teaching", "stencil_2d", {"h": 256, "w": 512}),
    ("stencil_2d/1024", "stencil_2d", {"h": 1024, "w": 1024}),
    ("divergence_demo/default", "divergence_demo", None),
    ("stencil_1d/default", "stencil_1d", None),
)


def spec_of(program: str):
    if program == "stencil_2d":
        import stencil_2d  # GPU side: the worker process imports the programs it launches
        return stencil_2d.PROGRAM
    import programs  # GPU side: the worker process imports the programs it launches
    return programs.get(program)


def worker(record_path: str) -> None:
    """Launch every case once on the GPU (Numba), check it, and write what was launched."""
    import numpy as np  # GPU side: imported in the process that launches under ncu, not when the script is read
    from numba import cuda  # GPU side: imported in the process that launches under ncu, not when the script is read
    launched = []
    for name, program, params in CASES:
        spec = spec_of(program)
        c = spec.case(params if params is not None else "default")
        dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in c.args]
        cuda.synchronize()
        c.kernel[c.grid, c.block, 0, c.shared_bytes](*dev)
        cuda.synchronize()
        host = tuple(d.copy_to_host() if hasattr(d, "copy_to_host") else d for d in dev)
        try:
            c.check(host)
            check = "passed"
        except AssertionError as e:
            check = f"failed: {e}"
        launched.append({"name": name, "program": program, "params": c.params, "kernel": c.kernel.py_func.__name__,
                         "grid": list(c.grid), "block": list(c.block), "launched": True, "check": check})
    with open(record_path, "w") as f:
        json.dump(launched, f)


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def provenance(ncu: str, command: list[str]) -> dict:
    smi = _run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem",
                "--format=csv,noheader"])
    versions = {}
    for pkg in ("numba-cuda", "numba", "numpy"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return {"gpu": smi, "ncu": _run([ncu, "--version"]).splitlines()[-1:] or [""], "python": platform.python_version(),
            "packages": versions, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(command), "git_commit": _run(["git", "-C", ROOT, "rev-parse", "HEAD"]),
            "ncu_options": "--clock-control none --cache-control all --replay-mode kernel (validate/ncu.py)"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", help="folder for stencil_l2_probe_<gpu>.json")
    ap.add_argument("--ncu", default=None, help="ncu executable (default: PATH, /usr/local/cuda/bin/ncu)")
    ap.add_argument("--worker", metavar="RECORD.json", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.worker)
        return 0
    if not a.out_dir:
        ap.error("give OUT_DIR")
    ncu = a.ncu or find_ncu()
    os.makedirs(a.out_dir, exist_ok=True)
    metrics = list(METRICS)
    with tempfile.TemporaryDirectory() as tmp:
        record, log = os.path.join(tmp, "launched.json"), os.path.join(tmp, "ncu.csv")
        for _ in range(3):                          # drop metrics this ncu does not know, and retry
            p = subprocess.run(command(ncu, metrics, log, [sys.executable, os.path.abspath(__file__), "--worker",
                                                           record]), capture_output=True, text=True, timeout=300)
            text = open(log).read() if os.path.exists(log) else ""
            bad = unknown_metrics(text + p.stdout + p.stderr)
            if p.returncode == 0 or not bad:
                break
            metrics = [m for m in metrics if m not in bad]
        if p.returncode != 0:
            sys.stderr.write(p.stdout[-2000:] + p.stderr[-2000:])
            return p.returncode or 1
        launched = json.load(open(record))
        pairs = match(launched, parse_csv(text))
    gpu = provenance(ncu, [sys.executable, *sys.argv])
    name = gpu["gpu"].split(",")[0].strip().lower()
    short = "h200" if "h200" in name else "h100" if "h100" in name else name.replace(" ", "_") or "gpu"
    doc = {"provenance": gpu, "metrics_requested": list(METRICS), "metrics_collected": metrics,
           "cases": [{**rec, "metrics": prof["metrics"] if prof else None} for rec, prof in pairs]}
    path = os.path.join(a.out_dir, f"stencil_l2_probe_{short}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    for rec, prof in pairs:
        m = (prof or {}).get("metrics", {})
        print(f"{rec['name']:26s} {rec['check']:8s} DRAM read {m.get('dram__bytes_read.sum', float('nan')):>10.0f} B  "
              f"L2 hit {m.get('lts__t_sector_hit_rate.pct', float('nan')):6.1f}%  "
              f"L1 load hits {m.get('l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum', float('nan')):>8.0f}")
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
