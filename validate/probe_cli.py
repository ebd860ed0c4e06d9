"""The command lines the GPU probes of validate/ share. `probe_main`: `--out FILE` runs a probe on a GPU
machine and writes its JSON, `--predict PRESET` prints gpusim's figures for the same launches (and with
`--json FILE` writes them, with the command, the preset, the date and the model's commit).
`folder_probe_main`, for probes that write a folder with Nsight's CSV beside their JSON: a positional
folder (default $OUT), `--predict PRESET FILE` for a measured file, `--worker` for the launches Nsight
profiles."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


# CUDA C++ device functions the probes time and place blocks by: `gtime()` (%globaltimer, ns, comparable across
# SMs) and `smid_()` (%smid)
CUDA_CLOCKS = r"""
__device__ __forceinline__ unsigned long long gtime() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ unsigned smid_() {
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}
"""


def nvrtc_module(source: str):
    """(cupy, the device's properties, `source` compiled by NVRTC for the device's architecture): the
    GPU side of the CUDA C++ probes. CuPy is imported here, only where a probe measures."""
    import cupy as cp                    # here, not at the top: only measuring needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    mod = cp.RawModule(code=source, options=(f"--gpu-architecture=sm_{props['major']}{props['minor']}",),
                       backend="nvrtc")
    return cp, props, mod


def event_times_us(cp, go, repeats: int, warmups: int = 2) -> list[float]:
    """Each of `repeats` calls of `go` (a launch) timed by CUDA events, in microseconds, after
    `warmups` untimed calls: the launches back to back, an event between each two."""
    for _ in range(warmups):
        go()
    ev = [cp.cuda.Event() for _ in range(repeats + 1)]
    ev[0].record()
    for i in range(repeats):
        go()
        ev[i + 1].record()
    ev[-1].synchronize()
    return [cp.cuda.get_elapsed_time(ev[i], ev[i + 1]) * 1e3 for i in range(repeats)]


def probe_main(doc: str, run, predict, argv=None) -> int:
    """Parse `argv` for a probe whose module docstring is `doc`; call `run(out_path)` or
    `predict(preset)`."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", help="the JSON to write (on a GPU machine)")
    ap.add_argument("--predict", metavar="PRESET", help="gpusim's figures for the same launches instead")
    ap.add_argument("--json", metavar="FILE", help="with --predict: write gpusim's figures to this file")
    a = ap.parse_args(argv)
    if a.json and not a.predict:
        ap.error("--json goes with --predict")
    if a.predict:
        rows = predict(a.predict)
        if a.json:
            write_prediction(a.json, a.predict, rows, argv)
    elif a.out:
        run(a.out)
    else:
        ap.error("--out or --predict")
    return 0


def folder_probe_main(doc: str, module: str, measure, predict, worker, argv=None, *, only: bool = False,
                      extra=None) -> int:
    """Parse `argv` for probe `module` (docstring `doc`): `measure(folder)` (prints the file it wrote),
    `predict(preset, measured_file[, only])` -> rows (with `--json F`: written with the command, the
    measured file, the preset, the date and `extra(rows)`'s keys), or `worker()` (`--worker`)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("out", nargs="?", default=os.environ.get("OUT", "."),
                    help="the folder to write (measuring), or the measured file to predict")
    ap.add_argument("--predict", metavar="GPU", help="gpusim's prediction of a measured file on this preset")
    if only:
        ap.add_argument("--only", help="with --predict: cases matching this regular expression")
    ap.add_argument("--json", type=Path, help="with --predict: write the rows here (a benchmark result)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker()
    elif a.predict:
        rows = predict(a.predict, Path(a.out), a.only) if only else predict(a.predict, Path(a.out))
        if a.json:
            cmd = (f"python -m {module} --predict {a.predict} {a.out}" + (f" --only '{a.only}'" if only and a.only else "")
                   + f" --json {a.json}")
            a.json.write_text(json.dumps({"command": cmd, "measured": a.out, "preset": a.predict,
                                          "date": time.strftime("%Y-%m-%d"), **(extra(rows) if extra else {}),
                                          "rows": rows}, indent=1))
    else:
        print(measure(Path(a.out)))
    return 0


def gpu_provenance(cp, command: str, doc: str, **fields) -> dict:
    """What a probe's JSON records of where it ran: the GPU, driver and clocks nvidia-smi reports, the
    date, `command`, CuPy's and NVRTC's versions, the probe's own `fields` and its method (the third
    paragraph of its docstring `doc`). `cp`: the cupy module (only the GPU machine has it)."""
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    return {"gpu": smi, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": command,
            "software": f"CuPy {cp.__version__}, NVRTC {cp.cuda.nvrtc.getVersion()}", "clocks": "not locked (as found)",
            **fields, "method": doc.split("\n\n")[2]}


def write_prediction(out_path: str, preset: str, rows: list, argv=None) -> Path:
    """gpusim's figures for a probe's launches as {'command', 'preset', 'date', 'model_commit', 'rows'}."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    args = sys.argv[1:] if argv is None else list(argv)
    prov = {"command": "python -m " + (sys.modules["__main__"].__spec__.name if getattr(
                sys.modules["__main__"], "__spec__", None) else "<probe>") + " " + " ".join(args),
            "preset": preset, "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "model_commit": head + (" (with uncommitted changes)" if dirty else "")}
    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**prov, "rows": rows}, indent=1) + "\n")
    return path


def write_probe(out_path: str, provenance: dict, rows: list) -> Path:
    """Write {'provenance', 'rows'} to `out_path` (its folder made as needed)."""
    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"provenance": provenance, "rows": rows}, indent=1) + "\n")
    return path
