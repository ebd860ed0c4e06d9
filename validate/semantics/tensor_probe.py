"""Probe the tensor cores and the asynchronous copy units of an H100/H200: bit-exact numerics of
`mma.sync` and `wgmma` (issue 28, part 4), fragment and shared-memory layouts, and timing of the
tensor pipe, ldmatrix, cp.async, TMA, mbarrier and GEMM loop bodies (issue 29, parts 1-2).

On the GPU machine (CUDA 13 nvcc, the driver, numpy), from the repository root, one command:

    python validate/semantics/tensor_probe.py --out $OUT

It compiles `validate/semantics/tensor_cu/*.cu` with nvcc (-gencode arch=compute_90a,code=sm_90a,
seven compiles in parallel) while it builds the numerics inputs, then runs, each binary in its own
process with a time limit (a failure is logged and the rest goes on):
  1. `numerics mma`: every `MMA_FORMS` form on crafted and random inputs (validate.semantics.
     tensor_inputs), one warp per instruction; the raw D registers are kept;
  2. `numerics ldsm`: ldmatrix / stmatrix x1/x2/x4 (.trans) and movmatrix on canonical and random
     lane addresses (which lane gets which element);
  3. `numerics wgmma`: first the layout stage (the same small-integer product through each
     candidate descriptor convention and swizzle, K-major and MN-major, the exact ones recorded),
     then every `WGMMA_FORMS` form through the K-major 128B-swizzled layout (A from registers for
     the `_rs` forms);
  4. `tensor_timing` (4 parts), `gemm_timing`, `copy_timing`: JSON lines of cycles and times.
Expected run time on an H100/H200: about 1 minute of compiling (16 cores) and 1.5-2.5 minutes
of running; `--quick` (a smoke test: fewer cases and iterations) about 1.5 minutes in all.
`--budget-s` (default 225) skips the steps that would start after that many seconds.

Writes at most five files into --out (tag = h100, h200, ...):
  tensor_mma_<tag>.npz     per mma form: A, B, C (matrix bit patterns), D_regs (32 lanes x regs),
                           case labels, tests (case, column, label)
  tensor_wgmma_<tag>.npz   per wgmma form: A, B, C matrices, D_regs (128 threads x regs),
                           scale_d, the layout used; the layout-stage candidates; ldmatrix sets
  tensor_probe_<tag>.json  provenance (GPU, driver, clocks before/after, nvcc, date, command),
                           the layout checks, the timing records, ptxas resource usage, errors
  tensor_sass_<tag>.txt.gz cuobjdump -sass of every binary (HMMA/HGMMA/LDGSTS/UTMALDG/SYNCS ...)
  tensor_probe_log_<tag>.txt every command with its output tail
Layouts of registers and shared memory: `isa.semantics.mma_layout`. Check without a GPU:
`python validate/semantics/tensor_probe.py --out /tmp/x --compile-only` (needs nvcc 12.8+).
"""
from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))     # run as a script from anywhere

from validate.semantics import tensor_forms as T
from validate.semantics import tensor_inputs as I
from validate.semantics import tensor_numerics as N
from validate.semantics.probe_run import Run

HERE = Path(__file__).resolve().parent
CU = HERE / "tensor_cu"
TIMING_PARTS = 4


# ----------------------------------------------------------------------------- tools
def find_tool(name: str) -> str | None:
    for d in (os.environ.get("CUDA_HOME", "") + "/bin", "/usr/local/cuda/bin"):
        p = Path(d) / name
        if p.exists():
            return str(p)
    w = shutil.which(name)
    if w:
        return w
    try:
        import nvidia  # lazy: only for the pip toolkit fallback
        for base in nvidia.__path__:
            p = Path(base) / "cu13" / "bin" / name
            if p.exists():
                return str(p)
    except ImportError:
        pass
    return None


def provenance(run: Run, nvcc: str | None) -> dict:
    def q(cmd):
        try:
            return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return None
    fields = ("name,driver_version,pci.bus_id,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,"
              "power.draw,power.limit,temperature.gpu,persistence_mode,compute_mode")
    return {
        "date_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join([sys.executable] + sys.argv),
        "cwd": os.getcwd(),
        "nvidia_smi_fields": fields,
        "nvidia_smi_before": q(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"]),
        "clock_event_reasons": q(["nvidia-smi", "--query-gpu=clocks_event_reasons.active", "--format=csv,noheader"]),
        "nvidia_smi_clocks": q(["nvidia-smi", "-q", "-d", "CLOCK"]),
        "nvcc": q([nvcc, "--version"]) if nvcc else None,
        "python": platform.python_version(), "numpy": np.__version__,
        "platform": platform.platform(),
        "git_head": q(["git", "rev-parse", "HEAD"]),
        "quick": run.args.quick,
    }


def gpu_tag(prov: dict) -> str:
    name = (prov.get("nvidia_smi_before") or "").split(",")[0]
    m = re.search(r"\b([A-Z]\d{2,3})\b", name)
    return m.group(1).lower() if m else (re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "gpu")


# ----------------------------------------------------------------------------- build
def start_builds(run: Run, nvcc: str, build: Path) -> dict[str, tuple[subprocess.Popen, Path]]:
    build.mkdir(parents=True, exist_ok=True)
    (build / "mma_forms.inc").write_text(T.cuda_source_mma())
    (build / "wgmma_forms.inc").write_text(T.cuda_source_wgmma())
    flags = ["-O3", "-std=c++17", "-lineinfo", "-gencode", "arch=compute_90a,code=sm_90a", "-Xptxas", "-v",
             f"-I{build}", f"-I{CU}"]
    jobs = {"numerics": (CU / "numerics.cu", [])}
    for p in range(TIMING_PARTS):
        jobs[f"tensor_timing_{p}"] = (CU / "tensor_timing.cu", [f"-DPART={p}", f"-DNPARTS={TIMING_PARTS}"])
    jobs["gemm_timing"] = (CU / "gemm_timing.cu", [])
    jobs["copy_timing"] = (CU / "copy_timing.cu", [])
    procs = {}
    for name, (src, extra) in jobs.items():
        exe = build / name
        cmd = [nvcc, *flags, *extra, "-o", str(exe), str(src)]
        run.log(f"$ {' '.join(cmd)} &")
        procs[name] = (subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), exe, time.time())
    return procs


def wait_build(run: Run, procs, name: str, info: dict) -> Path | None:
    p, exe, t = procs[name]
    try:
        _, err = p.communicate(timeout=max(30.0, run.left()))
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        run.errors.append(f"build {name}: timeout")
    dt = time.time() - t
    info[name] = {"rc": p.returncode, "seconds_since_start": round(dt, 1),
                  "ptxas": ptxas_summary(err)}
    run.log(f"  build {name}: rc={p.returncode} ({dt:.1f}s after start)")
    if p.returncode != 0:
        run.errors.append(f"build {name}: {err[-800:]}")
        run.log(err[-3000:])
        return None
    return exe


def ptxas_summary(err: str) -> dict:
    """Registers / shared memory / spills per kernel from `ptxas -v`."""
    res, cur = {}, None
    for line in err.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            cur = m.group(1)
            continue
        if cur and "Used" in line:
            regs = re.search(r"Used (\d+) registers", line)
            smem = re.search(r"(\d+) bytes smem", line)
            res[cur] = {"registers": int(regs.group(1)) if regs else None, "smem_bytes": int(smem.group(1)) if smem else 0}
        if cur and "spill" in line:
            sp = re.findall(r"(\d+) bytes spill (stores|loads)", line)
            if sp and cur in res:
                res[cur]["spill_bytes"] = sum(int(a) for a, _ in sp)
    return res


# ----------------------------------------------------------------------------- timing
def run_timing(run: Run, exe: Path, name: str, timeout: float, records: list) -> None:
    if run.left() < 15:
        run.errors.append(f"{name}: skipped (budget)")
        return
    args = [str(exe)] + (["quick"] if run.args.quick else [])
    _, out, _ = run.sh(args, min(timeout, max(15.0, run.left() - 10)), name)
    n = 0
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            run.errors.append(f"{name}: bad line {line[:120]}")
            continue
        rec["binary"] = name
        if rec.get("bench", "").startswith("mma_"):
            rec["form"] = T.MMA_FORMS[rec["form_id"]].name
            rec["ptx"] = T.MMA_FORMS[rec["form_id"]].ptx
        if rec.get("bench", "").startswith("wgmma_"):
            rec["form"] = T.WGMMA_FORMS[rec["form_id"]].name
            rec["ptx"] = T.WGMMA_FORMS[rec["form_id"]].ptx
        records.append(rec)
        n += 1
    run.log(f"  {name}: {n} records")


def sass_dump(run: Run, exes: dict[str, Path], cuobjdump: str | None) -> str:
    parts = []
    for name, exe in exes.items():
        if exe is None or cuobjdump is None:
            continue
        try:
            p = subprocess.run([cuobjdump, "-sass", str(exe)], check=False, capture_output=True, text=True, timeout=120)
            parts.append(f"######## {name}\n{p.stdout}")
        except (OSError, subprocess.TimeoutExpired) as e:
            run.errors.append(f"sass {name}: {e}")
    return "".join(parts)


# ----------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the result files")
    ap.add_argument("--quick", action="store_true", help="smoke test: fewer cases and iterations")
    ap.add_argument("--build", default=None, help="build folder (default /tmp/tensor_probe_build)")
    ap.add_argument("--budget-s", type=float, default=225.0, help="skip steps that would start after this")
    ap.add_argument("--compile-only", action="store_true", help="build the binaries and the inputs, run nothing")
    args = ap.parse_args(argv)
    run = Run(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    build = Path(args.build or "/tmp/tensor_probe_build")
    tmp = build / "io"
    tmp.mkdir(parents=True, exist_ok=True)
    nvcc, cuobjdump = find_tool("nvcc"), find_tool("cuobjdump")
    prov = provenance(run, nvcc)
    tag = gpu_tag(prov) if not args.compile_only else "nogpu"
    run.log(f"GPU: {prov.get('nvidia_smi_before')}  nvcc: {nvcc}  tag: {tag}")
    result = {"what": "tensor-core numerics, layouts and async-copy/tensor-pipe timing probe "
                      "(validate/semantics/tensor_probe.py)", "provenance": prov, "errors": run.errors}
    if nvcc is None:
        run.errors.append("nvcc not found")
        (out / f"tensor_probe_{tag}.json").write_text(json.dumps(result, indent=1))
        return 1
    procs = run.guard("build start", start_builds, run, nvcc, build) or {}
    t = time.time()
    mma_in = run.guard("mma inputs", N.mma_inputs, args.quick) or {}
    wg_in = run.guard("wgmma inputs", N.wgmma_inputs, args.quick) or {}
    run.steps["inputs"] = round(time.time() - t, 1)
    run.log(f"inputs built in {run.steps['inputs']}s")
    build_info: dict = {}
    exes: dict = {}
    store_mma: dict = {}
    store_wg: dict = {}
    summary: dict = {}
    records: list = []
    timing = [f"tensor_timing_{p}" for p in range(TIMING_PARTS)] + ["gemm_timing", "copy_timing"]
    try:
        if "numerics" in procs:
            exes["numerics"] = run.guard("build numerics", wait_build, run, procs, "numerics", build_info)
        if not args.compile_only and exes.get("numerics") is not None:
            run.guard("numerics", N.run_all, run, exes["numerics"], mma_in, wg_in, tmp, store_mma, store_wg, summary)
        for name in timing:
            if name in procs:
                exes[name] = run.guard(f"build {name}", wait_build, run, procs, name, build_info)
        if not args.compile_only:
            for name in timing:
                if exes.get(name) is not None:
                    run.guard(name, run_timing, run, exes[name], name, 150, records)
    finally:
        for p, _, _ in procs.values():
            if p.poll() is None:
                p.kill()
        prov["nvidia_smi_after"] = run.guard("smi after", lambda: provenance(run, None)["nvidia_smi_before"])
        result.update({"tag": tag, "build": build_info, "numerics": summary, "timing": records,
                       "steps_seconds": run.steps,
                       "forms_mma": [f.__dict__ | {"ptx": f.ptx} for f in T.MMA_FORMS],
                       "forms_wgmma": [f.__dict__ | {"ptx": f.ptx, "k": f.k} for f in T.WGMMA_FORMS],
                       "row_transforms_wgmma": list(I.ROW_TRANSFORMS), "seed": I.SEED,
                       "layouts": "isa.semantics.mma_layout (frag_map, wgmma_acc_map, wgmma_a_regs_map, smem_offsets)"})
        if store_mma:
            run.guard("save mma", lambda: np.savez_compressed(out / f"tensor_mma_{tag}.npz", **store_mma))
        if store_wg:
            run.guard("save wgmma", lambda: np.savez_compressed(out / f"tensor_wgmma_{tag}.npz", **store_wg))
        sass = run.guard("sass", sass_dump, run, exes, cuobjdump)
        if sass:
            with gzip.open(out / f"tensor_sass_{tag}.txt.gz", "wt") as fh:
                fh.write(sass)
        result["total_seconds"] = round(time.time() - run.t0, 1)
        (out / f"tensor_probe_{tag}.json").write_text(json.dumps(result, indent=1, default=str))
        run.log(f"done in {result['total_seconds']}s, {len(run.errors)} errors")
        (out / f"tensor_probe_log_{tag}.txt").write_text("\n".join(run.log_lines) + "\n")
    return 0

if __name__ == "__main__":
    sys.exit(main())
