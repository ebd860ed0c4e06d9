"""Record the outputs of the Triton tensor-core programs (programs/triton_kernels: matmul in f16,
bf16, fp8 e4m3/e5m2 and the FlashAttention-style forward pass) on a real H100/H200, with the
same inputs gpusim gets (each program's `case(size, seed=0)`), so that gpusim's outputs can be
compared bit for bit (`python -m validate.triton_compare FILE.npz`, no GPU needed).

On the GPU machine, from the repository root, one command (about 1-2 minutes, mostly Triton
compiles):

    python3 validate/triton_record.py --out $OUT

Needs: a CUDA GPU of compute capability 9.0, PyTorch with CUDA, Triton 3.5 or later (the one
PyTorch ships: 3.6 with torch 2.11), CuPy (cupy-cuda13x), numpy and ml_dtypes. It does not import
gpusim (nor simpy).

Each case runs on two paths:
- `sm90`: the kernel launched by Triton itself on torch CUDA tensors (`kernel[grid](...)`), the
  way a Triton user runs it: Triton compiles it for sm_90a (`tl.dot` -> wgmma). The PTX Triton
  compiled, its signature (specialisation) and launch are recorded, and the same PTX is launched
  again through the CUDA driver (CuPy's RawModule, `sm90_ptx`): equal outputs show that the
  PTX-path launch below passes the arguments as Triton's launcher does.
- `sm80`: the same kernel and specialisation compiled by Triton for sm_80 (`GPUTarget("cuda", 80,
  32)`: ldmatrix + mma.sync), its PTX JIT-compiled by the driver for the GPU and launched through
  CuPy. What an A100 build runs, executed by the Hopper tensor cores (mma.sync numerics are those
  of the GPU that runs it; gpusim's mma.sync model is the H100/H200's).
fp8 e4m3 for sm_80 is refused by Triton's compiler; the refusal is recorded.

Writes into --out:
  triton_outputs_<tag>.npz   per case and path: the input arrays (bf16/fp8 as their uint16/uint8
                             bits), the output array bits, and `meta` (JSON): for each case and
                             path the PTX, the kernel name, the PTX-order arguments (an array by
                             its index into the case's arguments, a scalar by type and value), grid,
                             block, dynamic shared bytes, errors; provenance (GPU, driver, versions
                             of torch/triton/cupy/numpy, date, command, git commit if known)
  triton_record_<tag>.json   the same meta without PTX, for reading
"""
from __future__ import annotations

import importlib
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # run as a script from anywhere

# (program module, size name): the cases gpusim compares. Kept small: gpusim runs them too.
CASES = (("matmul", "default"), ("matmul", "bf16"), ("matmul", "fp8_e4m3"), ("matmul", "fp8_e5m2"),
         ("matmul", "masked"), ("flash_attention", "default"), ("flash_attention", "causal"),
         ("flash_attention", "masked"))
ARCHS = (90, 80)
_TYPES = {"i1": np.int8, "u1": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "fp32": np.float32,
          "fp64": np.float64}


def bits(a: np.ndarray) -> np.ndarray:
    """The array's raw bits as an unsigned integer array of its width (bf16, fp8 survive npz)."""
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def load_case(module: str, size: str):
    """`programs.triton_kernels.<module>.PROGRAM.case(size, seed=0)`."""
    mod = importlib.import_module(f"programs.triton_kernels.{module}")
    return mod.PROGRAM.case(size, seed=0)


def specialisation(case, ck=None) -> tuple[dict, dict, dict]:
    """(signature, constexprs, attrs) of the case's kernel: those of the kernel Triton's launcher
    compiled (`ck.src`) when given, else Triton's rules (int 1 constexpr, multiples of 16 and
    arrays divisible by 16) as gpusim's TritonSource applies them."""
    if ck is not None and getattr(ck, "src", None) is not None and hasattr(ck.src, "signature"):
        src = ck.src
        return dict(src.signature), dict(src.constants), dict(getattr(src, "attrs", {}) or {})
    fn = case.kernel
    consts = dict(case.options["constexprs"])
    args = iter(case.args)
    sig, constants, attrs = {}, {}, {}
    pointer = {"float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32", "float8_e4m3fn": "*fp8e4nv",
               "float8_e5m2": "*fp8e5", "int32": "*i32"}
    for i, p in enumerate(fn.params):
        if p.is_constexpr:
            sig[p.name] = "constexpr"
            constants[(i,)] = consts[p.name]
            continue
        a = next(args)
        if isinstance(a, np.ndarray):
            sig[p.name] = pointer[a.dtype.name]
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif isinstance(a, (bool, np.bool_)):
            sig[p.name] = "u1"
        elif isinstance(a, (int, np.integer)):
            if int(a) == 1:
                sig[p.name] = "constexpr"
                constants[(i,)] = 1
                continue
            sig[p.name] = "i32" if -2**31 <= int(a) < 2**31 else "i64"
            if int(a) % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            sig[p.name] = "fp32"
    return sig, constants, attrs


def ptx_arguments(case, signature: dict) -> list:
    """PTX-order arguments: ("array", index into case.args) or ("scalar", type, value)."""
    runtime = [p for p in case.kernel.params if not p.is_constexpr]
    out = []
    for k, (p, a) in enumerate(zip(runtime, case.args)):
        ty = signature[p.name]
        if ty == "constexpr":
            continue
        if ty.startswith("*"):
            out.append(("array", k))
        else:
            out.append(("scalar", ty, float(a) if ty.startswith("fp") else int(a)))
    return out


def entry_param_count(ptx: str, name: str) -> int:
    """How many .param entries the kernel's .entry declares."""
    start = ptx.index(f".entry {name}(")
    return ptx[start:ptx.index(")", start)].count(".param")


class Gpu:
    """The GPU side: torch for Triton's own launch, CuPy for launching a PTX text."""

    def __init__(self):
        import cupy  # lazy: cupy is a heavy dependency, loaded only on the GPU machine
        import torch  # lazy: torch is a heavy dependency, loaded only on the GPU machine
        self.torch, self.cupy = torch, cupy
        self.cc = torch.cuda.get_device_capability()
        self.name = torch.cuda.get_device_name()

    def tensor(self, a: np.ndarray):
        t = self.torch
        special = {"bfloat16": t.bfloat16, "float8_e4m3fn": t.float8_e4m3fn, "float8_e5m2": t.float8_e5m2}
        if a.dtype.name in special:         # through a signed integer view: torch reads int16 from numpy
            raw = a.view({1: np.uint8, 2: np.int16}[a.dtype.itemsize]).copy()
            return t.from_numpy(raw).cuda().view(special[a.dtype.name])
        return t.from_numpy(a.copy()).cuda()

    def from_tensor(self, t, like: np.ndarray) -> np.ndarray:
        u = {1: self.torch.uint8, 2: self.torch.int16, 4: self.torch.int32, 8: self.torch.int64}[like.itemsize]
        raw = t.detach().contiguous().view(u).cpu().numpy()
        return raw.view(like.dtype).reshape(like.shape)

    def triton_launch(self, case):
        """Triton's own launch on torch tensors: (outputs by arg index, the CompiledKernel, grid)."""
        targs = [self.tensor(a) if isinstance(a, np.ndarray) else a for a in case.args]
        o = case.options
        meta = dict(o["constexprs"])
        ck = case.kernel[case.grid](*targs, **meta, num_warps=o["num_warps"], num_stages=o.get("num_stages", 3))
        self.torch.cuda.synchronize()
        outs = {i: self.from_tensor(targs[i], case.args[i]) for i in case.expected}
        return outs, ck

    def ptx_launch(self, case, ptx: str, name: str, args: list, grid, block: int, shared: int, scratch: list):
        """The PTX launched through the driver (JIT for this GPU): outputs by arg index."""
        cp = self.cupy
        dev = {}
        vals = []
        for a in args:
            if a[0] == "array":
                host = case.args[a[1]]
                dev[a[1]] = cp.asarray(bits(host).copy())
                vals.append(dev[a[1]])
            else:
                vals.append(_TYPES[a[1]](a[2]))
        for size in scratch:
            vals.append(cp.zeros(size, cp.uint8) if size else np.uint64(0))
        with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
            f.write(ptx)
        try:
            fn = cp.RawModule(path=f.name).get_function(name)
            if shared > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = shared
            fn(tuple(grid), (block, 1, 1), tuple(vals), shared_mem=shared)
            cp.cuda.runtime.deviceSynchronize()
        finally:
            os.unlink(f.name)
        return {i: cp.asnumpy(dev[i]).view(case.args[i].dtype).reshape(case.args[i].shape) for i in case.expected}


def compile_for(case, signature, constants, attrs, arch: int):
    """Triton's compile of the case's kernel for sm_<arch>: (PTX, metadata)."""
    import triton  # lazy: triton is a heavy dependency, loaded only on the GPU machine
    from triton.backends.compiler import GPUTarget  # lazy: triton is a heavy dependency, loaded only on the GPU machine
    from triton.compiler import ASTSource  # lazy: triton is a heavy dependency, loaded only on the GPU machine
    o = case.options
    src = ASTSource(case.kernel, dict(signature), constexprs=dict(constants), attrs=dict(attrs))
    k = triton.compile(src, target=GPUTarget("cuda", arch, 32),
                       options={"num_warps": o["num_warps"], "num_stages": o.get("num_stages", 3)})
    return k.asm["ptx"], k.metadata


def scratch_sizes(md, nblocks: int) -> list:
    """Bytes of the trailing scratch buffers Triton's launcher passes (0 = null)."""
    out = []
    for what in ("global_scratch_size", "profile_scratch_size"):
        if hasattr(md, what):
            out.append(int(getattr(md, what) or 0) * nblocks)
    return out


def launch_of(case, md, arch_args, ptx, name):
    grid = case.grid(dict(case.options["constexprs"])) if callable(case.grid) else case.grid
    grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    nblocks = grid[0] * grid[1] * grid[2]
    scratch = scratch_sizes(md, nblocks)
    want = entry_param_count(ptx, name)
    if len(arch_args) + len(scratch) != want:
        raise RuntimeError(f"{name}: the PTX entry has {want} parameters but {len(arch_args)} arguments and "
                           f"{len(scratch)} scratch pointers were derived")
    return {"grid": list(grid), "block": case.options["num_warps"] * 32, "shared": int(md.shared),
            "scratch": scratch}


def provenance(tag: str, gpu) -> dict:
    def q(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
        except Exception as e:          # nvidia-smi or git missing: recorded, not fatal
            return f"unavailable: {e}"
    import triton  # lazy: triton is a heavy dependency, loaded only on the GPU machine
    versions = {"python": platform.python_version(), "numpy": np.__version__, "triton": triton.__version__}
    for m in ("torch", "cupy", "ml_dtypes"):
        try:
            versions[m] = __import__(m).__version__
        except Exception as e:          # recorded, not fatal
            versions[m] = f"unavailable: {e}"
    return {"tag": tag, "gpu": None if gpu is None else gpu.name, "cc": None if gpu is None else list(gpu.cc),
            "nvidia_smi": q(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm",
                             "--format=csv,noheader"]),
            "git_commit": q(["git", "-C", str(Path(__file__).resolve().parents[1]), "rev-parse", "HEAD"]),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv), "host": platform.node(), "versions": versions, "seed": 0}


def record(out_dir: Path, compile_only: bool, budget_s: float = 240.0) -> dict:
    gpu = None if compile_only else Gpu()
    tag = "compile_only" if gpu is None else gpu.name.split()[1].lower() if len(gpu.name.split()) > 1 else "gpu"
    arrays: dict[str, np.ndarray] = {}
    meta = {"provenance": provenance(tag, gpu), "cases": {}}
    t0 = time.time()
    for module, size in CASES:
        key = f"{module}.{size}"
        entry = meta["cases"][key] = {"program": module, "size": size, "paths": {}, "inputs": {}}
        if time.time() - t0 > budget_s:       # keep the whole run under the device call's limit
            entry["error"] = f"skipped: the {budget_s:.0f} s budget was spent"
            continue
        try:
            case = load_case(module, size)
        except Exception as e:          # one case's failure is recorded; the others go on
            entry["error"] = f"{type(e).__name__}: {e}"
            continue
        entry["options"] = {k: v for k, v in case.options.items()}
        for i, a in enumerate(case.args):
            if isinstance(a, np.ndarray):
                arrays[f"{key}__in{i}"] = bits(a)
                entry["inputs"][str(i)] = {"dtype": a.dtype.name, "shape": list(a.shape)}
        ck = None
        if gpu is not None:
            path = entry["paths"]["sm90"] = {}
            try:
                outs, ck = gpu.triton_launch(case)
                for i, o in outs.items():
                    arrays[f"{key}__sm90__out{i}"] = bits(o)
                path["ptx"] = ck.asm["ptx"]
                path["name"] = ck.metadata.name
            except Exception as e:      # recorded, the other paths go on
                path["error"] = f"{type(e).__name__}: {e}"
                path["traceback"] = traceback.format_exc()[-2000:]
        signature, constants, attrs = specialisation(case, ck)
        entry["signature"] = {k: v for k, v in signature.items()}
        entry["constants"] = {str(list(k)): repr(v) for k, v in constants.items()}
        args = ptx_arguments(case, signature)
        entry["ptx_args"] = [list(a) for a in args]
        for arch in ARCHS:
            name = f"sm{arch}_ptx" if arch == 90 else f"sm{arch}"
            path = entry["paths"].setdefault(name, {})
            try:
                ptx, md = compile_for(case, signature, constants, attrs, arch)
                path.update(ptx=ptx, name=md.name, **launch_of(case, md, args, ptx, md.name))
                if arch == 90 and "ptx" in entry["paths"].get("sm90", {}):
                    path["same_ptx_as_sm90"] = ptx == entry["paths"]["sm90"]["ptx"]
                if gpu is not None:
                    outs = gpu.ptx_launch(case, ptx, md.name, args, path["grid"], path["block"], path["shared"],
                                          path["scratch"])
                    for i, o in outs.items():
                        arrays[f"{key}__{name}__out{i}"] = bits(o)
            except Exception as e:      # e.g. Triton's refusal of fp8e4nv on sm_80; recorded
                path["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"
        if gpu is not None and f"{key}__sm90__out{min(case.expected)}" in arrays and \
                f"{key}__sm90_ptx__out{min(case.expected)}" in arrays:
            entry["sm90_paths_equal"] = all(np.array_equal(arrays[f"{key}__sm90__out{i}"],
                                                           arrays[f"{key}__sm90_ptx__out{i}"]) for i in case.expected)
        entry["seconds_so_far"] = round(time.time() - t0, 1)
        print(f"{key}: " + ", ".join(f"{p}: {'error' if 'error' in v else 'ok'}" for p, v in entry["paths"].items())
              + (f", sm90 paths equal: {entry.get('sm90_paths_equal')}" if gpu is not None else ""), flush=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez_compressed(out_dir / f"triton_outputs_{tag}.npz", **arrays)
    light = json.loads(json.dumps(meta))
    for entry in light["cases"].values():
        for path in entry["paths"].values():
            path.pop("ptx", None)
    (out_dir / f"triton_record_{tag}.json").write_text(json.dumps(light, indent=1))
    return meta


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for the .npz and .json")
    ap.add_argument("--compile-only", action="store_true",
                    help="no GPU: compile every case for both targets and check the argument lists")
    ap.add_argument("--budget-s", type=float, default=240.0, help="cases that would start after this are skipped")
    a = ap.parse_args(argv)
    meta = record(Path(a.out), a.compile_only, a.budget_s)
    errors = sum("error" in p for e in meta["cases"].values() for p in e["paths"].values())
    print(f"{len(meta['cases'])} cases, {errors} path errors (fp8_e4m3 on sm80 is Triton's refusal)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
