"""`python -m validate measure-multi`: NCCL collectives, peer copies and kernels that read or
write a peer GPU's memory, on this machine's GPUs; writes `data/measurements/<gpu>x<n>_multi.json`.

Reproduce, on a machine with 2 or more NVIDIA GPUs joined by NVLink, from the repository root
(CuPy with NCCL, numba-cuda with numpy < 2.5; nothing of gpusim is imported):

    NCCL_NVLS_ENABLE=0 python -m validate measure-multi [--gpus 2,4] [--out FILE]

Method
- Collectives (`validate.measure_nccl`, nccl-tests' conventions and timing): all_reduce,
  all_gather, reduce_scatter, broadcast, reduce, all_to_all and send_recv, float32, sum, root 0,
  sizes 64 KiB .. 1 GiB by powers of 2, CUDA graphs of up to 200 calls per GPU. Every
  collective's result is checked once against numpy at 1 MiB ("check").
- NCCL's own choices: a separate pass with `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING`
  runs each op and size once; its log (algorithm, protocol, channels per call) is kept whole.
- Forced algorithm/protocol: all_reduce with NCCL_ALGO in {Ring, Tree} x NCCL_PROTO in
  {LL, LL128, Simple}, each in its own process (NCCL reads them at initialisation).
- Peer copies, one way, both ways and (4 GPUs) fan-out and ring, and kernels reading or
  writing a peer GPU's buffer (`validate.measure_peers`).
Provenance: `nvidia-smi` (names, driver, clocks), `nvidia-smi topo -m`, `nvidia-smi nvlink -s`,
NCCL, CuPy, numba versions, date, command.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback
from importlib.metadata import version
from pathlib import Path

import numpy as np

from validate.datadir import DATA_DIR, measurement_file
from validate.measure_nccl import MAX_BYTES, measure_collectives, worker_choices, worker_forced
from validate.measure_peers import measure_copies, measure_peer_kernels

ROOT = Path(__file__).resolve().parents[1]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpus", default=None, help="comma list of GPU counts to measure (default: 2 and all GPUs)")
    p.add_argument("--out", type=measurement_file, help="output JSON (default data/measurements/<gpu>x<n>_multi.json)")
    p.add_argument("--max-bytes", type=int, default=MAX_BYTES, help="largest collective size (default 1 GiB)")
    p.add_argument("--skip", default="", help="comma list of parts to leave out: collectives, choices, forced, "
                   "copies, kernels")
    p.add_argument("--worker", choices=("forced", "choices"), help=argparse.SUPPRESS)
    p.add_argument("--worker-gpus", type=int, help=argparse.SUPPRESS)
    p.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)



def _subprocess(kind: str, n: int, max_bytes: int, env_extra: dict, workdir: Path, timeout: float = 240):
    out = workdir / f"{kind}_{n}_{'_'.join(f'{k}={v}' for k, v in env_extra.items())}.json".replace("NCCL_", "")
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", **env_extra)
    cmd = [sys.executable, "-m", "validate", "measure-multi", "--worker", kind, "--worker-gpus", str(n),
           "--max-bytes", str(max_bytes), "--worker-out", str(out)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    recs = json.loads(out.read_text()) if out.exists() else []
    return recs, r.returncode, r.stdout + r.stderr



# ---- provenance ----------------------------------------------------------------------------

def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    except Exception as e:                       # noqa: BLE001
        return f"{type(e).__name__}: {e}"


def provenance(argv: list[str]) -> dict:
    import cupy as cp  # lazy: cupy is a heavy dependency, loaded only on the GPU machine
    from cupy.cuda import nccl  # lazy: cupy is a heavy dependency, loaded only on the GPU machine
    q = "name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,memory.total,pci.bus_id"
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "NCCL_NVLS_ENABLE=0 python -m validate measure-multi " + " ".join(argv),
        "nvidia_smi_gpus": _run(["nvidia-smi", f"--query-gpu={q}", "--format=csv"]),
        "topology": _run(["nvidia-smi", "topo", "-m"]),
        "nvlink_status": _run(["nvidia-smi", "nvlink", "-s"]),
        "nccl_version": nccl.get_version(),
        "cupy": cp.__version__, "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
        "cuda_driver": cp.cuda.runtime.driverGetVersion(),
        "numba_cuda": version("numba-cuda"), "numpy": np.__version__, "python": platform.python_version(),
        "env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")},
        "gpu_count": cp.cuda.runtime.getDeviceCount(),
    }


def run(args) -> int:
    if args.worker:
        f = worker_forced if args.worker == "forced" else worker_choices
        recs = f(args.worker_gpus, args.max_bytes)
        args.worker_out.write_text(json.dumps(recs))
        return 0
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    import cupy as cp  # lazy: cupy is a heavy dependency, loaded only on the GPU machine
    ngpu = cp.cuda.runtime.getDeviceCount()
    if ngpu < 2:
        print(f"measure-multi needs at least 2 GPUs; this machine has {ngpu}", file=sys.stderr)
        return 2
    counts = [int(c) for c in args.gpus.split(",")] if args.gpus else sorted({2, ngpu})
    skip = set(filter(None, args.skip.split(",")))
    argv = sys.argv[2:] if len(sys.argv) > 2 else []
    prov = provenance(argv)
    name = re.sub(r"[^a-z0-9]+", "", prov["nvidia_smi_gpus"].splitlines()[1].split(",")[0].lower()
                  .replace("nvidia", "")) if prov["nvidia_smi_gpus"].count("\n") > 1 else "gpu"
    out_path = args.out or DATA_DIR / f"{name}x{ngpu}_multi.json"
    data = {"provenance": prov, "collectives": [], "forced": [], "choices": {}, "copies": [], "kernels": [],
            "errors": []}
    t0 = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", flush=True)

    def save():
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(data, indent=1))

    def part(label, f):
        if label in skip:
            return
        try:
            f()
        except Exception as e:                   # noqa: BLE001 - keep what the other parts measured
            data["errors"].append(f"{label}: {type(e).__name__}: {e}\n{traceback.format_exc()}")
            log(f"{label} failed: {type(e).__name__}: {e}")
        save()

    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / "gpusim_measure_multi"
    workdir.mkdir(parents=True, exist_ok=True)

    def choices():
        for n in counts:
            recs, rc, text = _subprocess("choices", n, args.max_bytes,
                                         {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,TUNING,GRAPH"}, workdir)
            data["choices"][str(n)] = {"returncode": rc, "log": text[-400_000:]}
            log(f"choices x{n}: rc {rc}, {len(text)} chars of log")

    def forced():
        for n in counts:
            for algo in ("Ring", "Tree"):
                for proto in ("LL", "LL128", "Simple"):
                    recs, rc, text = _subprocess("forced", n, args.max_bytes,
                                                 {"NCCL_ALGO": algo, "NCCL_PROTO": proto}, workdir)
                    data["forced"] += recs
                    if rc:
                        data["errors"].append(f"forced {algo}/{proto} x{n}: rc {rc}: {text[-2000:]}")
                    ok = [r for r in recs if "busbw_GBps" in r]
                    log(f"forced {algo}/{proto} x{n}: rc {rc}, {len(ok)} sizes, "
                        f"busbw at max {ok[-1]['busbw_GBps'] if ok else float('nan'):.1f}")

    def collectives():
        for n in counts:
            data["collectives"] += measure_collectives(n, args.max_bytes, log)

    part("collectives", collectives)
    part("copies", lambda: data.__setitem__("copies", measure_copies(ngpu, log)))
    part("kernels", lambda: data.__setitem__("kernels", measure_peer_kernels(log)))
    part("choices", choices)
    part("forced", forced)
    log(f"wrote {out_path}")
    return 0
