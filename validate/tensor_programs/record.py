"""Record the outputs of the CUDA C++ GEMM programs (programs/cuda_kernels/) on the GPU of this
machine, for the bit-exactness check of gpusim's tensor-core execution (issue 28, item 5).

On the GPU machine (CuPy for CUDA 12/13, numpy, this repository's Python dependencies), from the
repository root, one command:

    python -m validate.tensor_programs.record --out $OUT          # about a minute on an H100/H200

Each recorded case is a program's `Case` (programs/cuda_kernels/<program>.py, `spec.case(size,
seed=0)`): the same inputs, kernel name expression (a template instance of the .cu) and launch
shape gpusim runs. The .cu text is compiled by NVRTC through `cupy.RawModule(code=..., options=
("-std=c++17", -I<CUDA include dirs>), name_expressions=[...])` for the device's architecture,
launched once, and its output copied back. The large sizes are also timed (not recorded): CUDA
events around 10 launches after 2 warm-ups, the median, as a check of "a tensor-core GEMM is
faster than the best CUDA-core SGEMM" (issue 29).

Writes into --out (tag = h100, h200, ... from the GPU's name):
  tensor_programs_<tag>.npz   per case "<program>/<size>/<arg>" for A, B (inputs as passed) and C
                              (the output), and "provenance" (the JSON below, as a string)
  tensor_programs_<tag>.json  provenance (GPU, compute capability, driver, CUDA driver/runtime,
                              NVRTC and CuPy versions, numpy, Python, UTC date, the command, git
                              commit), the cases with kernel, grid, block and shape, the timings,
                              and any case that failed (its error; the others still run)

Check without a GPU: `python -m validate.tensor_programs.compare <npz>` runs every recorded case
through gpusim and counts the outputs that are bit for bit the GPU's.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))     # run as a script from anywhere

from programs import load_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "programs" / "cuda_kernels"
#: (program, size) recorded bit for bit; the small ones are what the test suite replays
RECORDED = [("wmma_gemm", "default"), ("wmma_gemm", "bf16"), ("wmma_gemm", "medium"), ("wmma_gemm", "medium_bf16"),
            ("mma_gemm", "default"), ("mma_gemm", "medium"), ("mma_gemm_single", "default"),
            ("sgemm", "default"), ("sgemm", "medium")]
#: (program, size) timed only
TIMED = [("wmma_gemm", "large"), ("mma_gemm", "large"), ("mma_gemm_single", "large"), ("sgemm", "large")]
INPUT_NAMES = ("A", "B", "C")


def include_dirs() -> list[str]:
    """Directories holding the CUDA headers the programs include (mma.h, cuda_fp16.h, cuda_bf16.h)."""
    found = []
    cands = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    cands = [str(Path(c) / "include") for c in cands if c]
    try:
        import nvidia                    # the CUDA pip wheels (nvidia-cuda-runtime, cuda-toolkit)
        for base in nvidia.__path__:
            cands += [str(p) for p in Path(base).glob("*/include")]
    except ImportError:
        pass
    for c in cands:
        if (Path(c) / "mma.h").is_file() and c not in found:
            found.append(c)
    return found


def provenance(cp, argv) -> dict:
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]

    def q(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            return f"unavailable ({type(e).__name__})"

    def version(v: int) -> str:
        return f"{v // 1000}.{v % 1000 // 10}"
    return {"gpu": name, "compute_capability": f"{props['major']}.{props['minor']}",
            "sm_count": props["multiProcessorCount"],
            "driver": q(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]),
            "nvidia_smi": q(["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,pstate",
                             "--format=csv,noheader"]),
            "cuda_driver_api": version(cp.cuda.runtime.driverGetVersion()),
            "cuda_runtime": version(cp.cuda.runtime.runtimeGetVersion()),
            "nvrtc": ".".join(map(str, cp.cuda.nvrtc.getVersion())), "cupy": cp.__version__,
            "numpy": np.__version__, "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": "python -m validate.tensor_programs.record " + " ".join(argv),
            "git_commit": q(["git", "-C", str(ROOT), "rev-parse", "HEAD"]),
            "include_dirs": include_dirs()}


class Runner:
    """Compiles each (.cu text, name expression) once and launches a Case on the device."""

    def __init__(self, cp):
        self.cp = cp
        self.modules: dict = {}
        self.options = ("-std=c++17",) + tuple(f"-I{d}" for d in include_dirs())

    def function(self, source):
        key = (source.text, source.name)
        if key not in self.modules:
            mod = self.cp.RawModule(code=source.text, options=self.options, name_expressions=[source.name],
                                    backend="nvrtc")
            self.modules[key] = mod.get_function(source.name)
        return self.modules[key]

    def launch(self, case, times: int = 1):
        """Device copies of the arguments after `times` launches, and the launches' times (ms)."""
        cp = self.cp
        fn = self.function(case.kernel)
        args = tuple(cp.asarray(a) if isinstance(a, np.ndarray) else a for a in case.args)
        ms = []
        for _ in range(times):
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            fn(tuple(case.grid), tuple(case.block), args, shared_mem=case.shared_bytes)
            end.record()
            end.synchronize()
            ms.append(cp.cuda.get_elapsed_time(start, end))
        return args, ms


def tag_of(gpu: str) -> str:
    words = gpu.lower().replace("nvidia", "").split()
    return next((w for w in words if w[:1] in "habv" and w[1:2].isdigit()), words[0] if words else "gpu")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")), help="folder for the npz and json")
    ap.add_argument("--no-timing", action="store_true", help="skip the timed large sizes")
    args = ap.parse_args(argv)
    try:
        import cupy as cp                # here, not at the top: only recording needs a GPU
    except ImportError as e:
        print(f"error: recording needs CuPy on a GPU machine (pip install cupy-cuda13x, or cupy-cuda12x): {e}")
        return 2
    prov = provenance(cp, argv)
    runner = Runner(cp)
    specs = {p: load_file(PROGRAMS / f"{p}.py") for p in {p for p, _ in RECORDED + TIMED}}
    arrays, cases, errors, timings = {}, [], [], []
    t0 = time.time()
    for prog, size in RECORDED:
        case = specs[prog].case(size, seed=0)
        try:
            dev, _ = runner.launch(case)
            out = dev[2].get()
        except Exception as e:           # recorded: one case that fails costs the others nothing
            errors.append({"program": prog, "size": size, "error": f"{type(e).__name__}: {e}"[:2000]})
            continue
        try:
            case.check((None, None, out))
            numpy_check = "within the program's tolerance of numpy"
        except AssertionError as e:      # kept, and said: the comparison with gpusim is what matters
            numpy_check = str(e)
        for name, a in zip(INPUT_NAMES, (case.args[0], case.args[1], out)):
            arrays[f"{prog}/{size}/{name}"] = np.asarray(a)
        cases.append({"program": prog, "size": size, "params": case.params, "kernel": case.kernel.name,
                      "grid": list(case.grid), "block": list(case.block), "numpy_check": numpy_check})
    if not args.no_timing:
        for prog, size in TIMED:
            case = specs[prog].case(size, seed=0)
            try:
                runner.launch(case, 2)
                _, ms = runner.launch(case, 10)
            except Exception as e:
                errors.append({"program": prog, "size": size, "error": f"{type(e).__name__}: {e}"[:2000]})
                continue
            p = case.params
            med = float(np.median(ms))
            timings.append({"program": prog, "size": size, "kernel": case.kernel.name, "params": p,
                            "ms_median": med, "ms_all": ms, "tflops": 2 * p["m"] * p["n"] * p["k"] / med / 1e9})
    doc = {"what": "outputs of programs/cuda_kernels/ GEMMs on the GPU (validate/tensor_programs/record.py)",
           "provenance": prov, "cases": cases, "timings": timings, "errors": errors,
           "seconds": round(time.time() - t0, 1)}
    tag = tag_of(prov["gpu"])
    args.out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out / f"tensor_programs_{tag}.npz", provenance=np.array(json.dumps(prov)), **arrays)
    (args.out / f"tensor_programs_{tag}.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(cases)} cases recorded, {len(timings)} timed, {len(errors)} errors -> "
          f"{args.out / f'tensor_programs_{tag}.npz'}")
    for t in timings:
        print(f"  {t['program']:16s} {t['size']:6s} {t['ms_median']:8.3f} ms  {t['tflops']:7.1f} TFLOP/s")
    for e in errors:
        print(f"  error {e['program']} {e['size']}: {e['error'][:300]}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
