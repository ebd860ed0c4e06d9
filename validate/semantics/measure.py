"""Measure the integer, bit, compare, carry and atomic instruction forms of
`validate.semantics.specs` on a real NVIDIA GPU and write the committed validation data.

Reproduce, on a machine with the GPU, CuPy (`cupy-cuda13x`, the `gpu` extra) and numpy, from the
repository root:

    python -m validate.semantics.measure --out data/measurements

This writes `semantics_<gpu>.npz` (e.g. `semantics_h200.npz`) and its JSON sidecar there; add
`--full PATH` to also keep all 4096 inputs per form. Check the result on any machine (no GPU) with
`python -m validate.semantics.compare data/measurements/semantics_h200.npz`, or through
`tests/validate/test_semantics_h200.py`.

Method: each form becomes one CUDA C kernel whose body is the form's PTX as inline asm
(`asm volatile("setp.lt.s32 ..." : "=r"(d) : "r"(x0), ...)`), operands passed through registers
of their own width ("h" 16-bit, "r" 32-bit, "l" 64-bit, "f"/"d" float); thread i reads its inputs,
runs the one instruction (plus any fixed set-up: the carry-in, predicate packing) and stores the
result's bit pattern as a uint64. Atomics operate on a per-thread slot (global memory, or shared
for `atom.shared`) initialised to input 0; the output is the slot's value afterwards. All kernels
are one module compiled by NVRTC through `cupy.RawModule` with `-arch=<sm of the device>`, so
ptxas turns each asm into the SASS the hardware runs. One launch per form, 4096 threads in blocks
of 256, inputs from `specs.draw_inputs` (seed 1234).

Recorded provenance (JSON sidecar): GPU name, compute capability, driver version (nvidia-smi),
CUDA driver API version, CUDA runtime version (the one CuPy links), NVRTC version, CuPy, numpy and
Python versions, UTC date, the command, seed, and the numbers of forms and inputs.

The npz keeps per form `in:<form>` (k, n) and `out:<form>` (n,) as bit patterns in the narrowest
unsigned type that holds them; of the 4096 inputs, n are kept: the leading edge-case block (at
least 64) and 192 others (`specs.kept_indices`).
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

from validate.datadir import DATA_DIR
from validate.semantics.specs import ATOMS, SEED, SPECS, N, draw_inputs, kept_indices

BLOCK = 256
CT = {16: ("unsigned short", "h"), 32: ("unsigned int", "r"), 64: ("unsigned long long", "l"),
      "f": ("float", "f"), "d": ("double", "d")}
HEAD = ("const unsigned long long* X0, const unsigned long long* X1, const unsigned long long* X2, "
        "const unsigned long long* X3, unsigned long long* M, unsigned long long* D, int n")


def _load(w, v: str) -> str:
    if w == "f":
        return f"__uint_as_float((unsigned int){v})"
    if w == "d":
        return f"__longlong_as_double((long long){v})"
    return f"({CT[w][0]}){v}"


def _store(w, v: str) -> str:
    if w == "f":
        return f"(unsigned long long)__float_as_uint({v})"
    if w == "d":
        return f"(unsigned long long)__double_as_longlong({v})"
    return f"(unsigned long long){v}"


def kernel_source() -> tuple[str, list[str]]:
    """CUDA C for all forms, and the kernel name of each, in `draw_inputs` order."""
    src, names = [], []
    for k, (name, asm, ow, iws, gens) in enumerate(SPECS):
        ins = ", ".join(f'"{CT[w][1]}"(x{j})' for j, w in enumerate(iws))
        decl = " ".join(f"{CT[w][0]} x{j} = {_load(w, f'X{j}[i]')};" for j, w in enumerate(iws))
        src.append(f'''extern "C" __global__ void k{k}({HEAD}) {{
 int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
 {decl} {CT[ow][0]} d;
 asm volatile("{asm}" : "={CT[ow][1]}"(d) : {ins});
 D[i] = {_store(ow, "d")}; }}''')
        names.append(f"k{k}")
    for k, (mn, w, nops) in enumerate(ATOMS):
        t, c = CT[w]
        ops = ", ".join(f'"{c}"(x{j})' for j in range(1, nops + 1))
        decl = " ".join(f"{t} x{j} = {_load(w, f'X{j}[i]')};" for j in range(1, nops + 1))
        operands = ", ".join(f"%{j + 1}" for j in range(1, nops + 1))
        if ".shared." in mn:
            body = f'''__shared__ {t} s[{BLOCK}]; s[threadIdx.x] = {_load(w, "X0[i]")};
 unsigned int sa = (unsigned int)__cvta_generic_to_shared(&s[threadIdx.x]); {t} old;
 asm volatile("{mn} %0, [%1], {operands};" : "={c}"(old) : "r"(sa), {ops} : "memory");
 D[i] = {_store(w, "s[threadIdx.x]")};'''
        else:
            body = f'''{t}* p = ({t}*)&M[i]; *p = {_load(w, "X0[i]")}; {t} old;
 asm volatile("{mn} %0, [%1], {operands};" : "={c}"(old) : "l"(p), {ops} : "memory");
 D[i] = {_store(w, "*p")};'''
        src.append(f'''extern "C" __global__ void a{k}({HEAD}) {{
 int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
 {decl} {body} }}''')
        names.append(f"a{k}")
    return "\n".join(src), names


def measure(device: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray, tuple[str, ...]]]:
    """form -> (inputs (k, N), outputs (N,), generator kinds), all uint64, run on the GPU. A form
    listed twice keeps its later run, as the recorded data does."""
    import cupy as cp  # lazy: cupy is a heavy dependency, loaded only on the GPU machine
    cp.cuda.Device(device).use()
    cc = cp.cuda.Device(device).compute_capability
    code, names = kernel_source()
    mod = cp.RawModule(code=code, options=(f"-arch=sm_{cc}",))
    results = {}
    for kname, (form, x, gens) in zip(names, draw_inputs(SEED), strict=True):
        dx = [cp.asarray(r) for r in x] + [cp.zeros(N, cp.uint64) for _ in range(4 - len(x))]
        mem, out = cp.zeros(N, cp.uint64), cp.zeros(N, cp.uint64)
        mod.get_function(kname)((N // BLOCK,), (BLOCK,), (*dx, mem, out, np.int32(N)))
        results[form] = (x, out.get(), gens)
    return results


def _narrow(a: np.ndarray) -> np.ndarray:
    top = int(a.max()) if a.size else 0
    for t in (np.uint8, np.uint16, np.uint32, np.uint64):
        if top <= np.iinfo(t).max:
            return a.astype(t)
    raise AssertionError("unreachable")


def subsample(results) -> dict[str, np.ndarray]:
    """The arrays of the committed npz: each form's kept inputs and outputs, narrowed."""
    arrays = {}
    for form, (x, y, gens) in results.items():
        keep = kept_indices(gens, SEED, len(y))
        arrays["in:" + form] = _narrow(x[:, keep])
        arrays["out:" + form] = _narrow(y[keep])
    return arrays


def provenance(device: int = 0) -> dict:
    """What was measured on, read from the machine."""
    import cupy as cp  # lazy: cupy is a heavy dependency, loaded only on the GPU machine
    props = cp.cuda.runtime.getDeviceProperties(device)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", f"-i={device}"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        driver = "unknown (nvidia-smi failed)"

    def version(v: int) -> str:
        return f"{v // 1000}.{v % 1000 // 10}"
    cc = cp.cuda.Device(device).compute_capability
    return {"gpu": name, "arch": f"sm_{cc}", "driver": driver,
            "cuda_driver_api": version(cp.cuda.runtime.driverGetVersion()),
            "cuda_runtime": version(cp.cuda.runtime.runtimeGetVersion()),
            "nvrtc": ".".join(map(str, cp.cuda.nvrtc.getVersion())),
            "cupy": cp.__version__, "numpy": np.__version__, "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DATA_DIR, help="folder for the npz and json")
    ap.add_argument("--stem", help="file name stem (default semantics_<gpu>, e.g. semantics_h200)")
    ap.add_argument("--full", type=Path, help="also write all inputs and outputs to this npz")
    ap.add_argument("--device", type=int, default=0)
    args = ap.parse_args(argv)
    prov = provenance(args.device)
    results = measure(args.device)
    stem = args.stem or "semantics_" + prov["gpu"].lower().replace("nvidia", "").split()[0]
    args.out.mkdir(parents=True, exist_ok=True)
    arrays = subsample(results)
    np.savez_compressed(args.out / f"{stem}.npz", **arrays)
    if args.full:
        np.savez_compressed(args.full, **{f"{p}:{f}": a for f, (x, y, _) in results.items()
                                          for p, a in (("in", x), ("out", y))})
    meta = {"what": "PTX integer/bit/compare/carry/atomic instruction forms run one per thread through "
                    "inline asm; per form in:<form> (inputs x lanes) and out:<form>, unsigned bit patterns",
            **prov,
            "forms": len(results), "inputs_per_form_measured": N,
            "inputs_kept": sum(len(a) for k, a in arrays.items() if k.startswith("out:")),
            "seed": SEED,
            "command": "python -m validate.semantics.measure " + " ".join(sys.argv[1:] if argv is None else argv),
            "check": f"python -m validate.semantics.compare {args.out / stem}.npz"}
    (args.out / f"{stem}.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{len(results)} forms measured on {prov['gpu']}; wrote {args.out / stem}.npz/.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
