"""Record, on an H100/H200, the outputs of the TMA programs for the inputs gpusim gives them:
`programs/hopper_kernels/tma_wgmma_gemm.cu` (C = A B through TMA and wgmma) at the recorded
sizes, and `tma_box.cu` (one TMA box: its raw shared-memory bytes and the tensor after the box
is stored back) for every case of `programs/hopper_kernels/_tma_cases.py`; the GPU's verdict on
the probes of `_tma_cases.PROBES` (boxes starting off 16 bytes, which gpusim refuses; swizzled
boxes 128-byte but not 1024-byte aligned); and what the driver's cuTensorMapEncodeTiled says to a
few maps (valid, and the bad ones gpusim refuses).

On the GPU machine (driver, CuPy with NVRTC, numpy), from the repository root, one command:

    python validate/semantics/tma_record.py --out $OUT

and the grid that separates the rules of where a tensor copy may start or reach
(`_tma_cases.RULE_PROBES`: negative and past-the-end coordinates per dimension, load and store,
element types of 1, 2, 4, 8 bytes, rank 1 and 3, positions off 16 bytes; about 3 minutes), into
`tma_<gpu>_rules.npz` / `.json` of the same form:

    python validate/semantics/tma_record.py --rules --out $OUT

Needs no gpusim (only numpy, CuPy and `isa`): the .cu texts are compiled by NVRTC through
`cupy.RawModule` (`-arch=sm_90a -std=c++17`, the same text gpusim compiles; CuPy adds its own
`-arch=sm_90`, `-ftz=true` and `--device-as-default-execution-space`, which change nothing here:
NVRTC 13.5 compiles for sm_90a given both -arch options, in either order), the tensor maps are
encoded by the driver's `cuTensorMapEncodeTiled` and the kernels launched by `cuLaunchKernel`
(ctypes, libcuda), since each takes its `__grid_constant__ CUtensorMap` by value. Inputs come
from `_tma_cases.py` (loaded by path), seed 0 for the GEMMs, as `PROGRAM.case(size)` builds them.

Each launch runs in its own process (`--job NAME`, at most JOB_TIMEOUT_S seconds): a fault such as
an illegal instruction ends the CUDA context and every later call in that process, so one kernel's
fault loses nothing else. Its verdict is recorded per launch: "ok", "fault: <the CUDA error>",
"timeout" (a hang, e.g. an mbarrier whose bytes never land) or "error: <the Python error>". Takes
about a minute.

Writes `tma_<gpu>.npz` (e.g. tma_h100.npz): per GEMM size `gemm:<size>:A` / `:B` (f16 bits),
`:C` (f32 bits); per box case `box:<case>:dump` (bytes) and `:out` (the output tensor's bits), and
`probe:<name>:dump` / `:out` for the probes that ran; `driver:<name>` the CUresult of each encode
check; and `tma_<gpu>.json`: provenance (GPU, driver, CUDA / NVRTC / CuPy / numpy / Python
versions, UTC date, command, sha256 of the .cu texts), `launches` (every job's verdict) and the
encode checks by name. Check without a GPU: `tests/programs/test_tma_wgmma_gemm.py` and
`test_tma_box.py` compare gpusim's outputs with the committed file byte for byte, and gpusim's
refusals with the GPU's faults.
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import hashlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))                   # isa, when run as a script from anywhere
HOPPER = ROOT / "programs" / "hopper_kernels"

from isa.semantics import tensor_map as T      # noqa: E402  (after the path insert above)


def load_cases():
    """programs/hopper_kernels/_tma_cases.py, without importing the programs package (Numba)."""
    spec = importlib.util.spec_from_file_location("tma_cases", HOPPER / "_tma_cases.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Driver:
    """The few CUDA driver calls CuPy does not offer: tensor-map encoding and by-value launches."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.lib.cuTensorMapEncodeTiled.restype = ctypes.c_int
        self.lib.cuLaunchKernel.restype = ctypes.c_int
        self.lib.cuFuncSetAttribute.restype = ctypes.c_int

    def error(self, code: int) -> str:
        s = ctypes.c_char_p()
        self.lib.cuGetErrorString(ctypes.c_int(code), ctypes.byref(s))
        return (s.value or b"?").decode()

    def encode(self, f: T.TensorMapFields) -> tuple[int, bytes]:
        """(CUresult, the 128 map bytes) of cuTensorMapEncodeTiled for fields `f`."""
        buf = (ctypes.c_uint8 * 128 * 2)()
        at = (ctypes.addressof(buf) + 63) // 64 * 64               # 64-byte aligned
        r = f.rank
        u64, u32 = ctypes.c_uint64, ctypes.c_uint32
        code = self.lib.cuTensorMapEncodeTiled(
            ctypes.c_void_p(at), ctypes.c_int(f.dtype), u32(r), ctypes.c_void_p(f.address),
            (u64 * r)(*f.dims), (u64 * max(r - 1, 1))(*(f.strides or (0,))), (u32 * r)(*f.box),
            (u32 * r)(*f.element_strides), ctypes.c_int(f.interleave), ctypes.c_int(f.swizzle),
            ctypes.c_int(f.l2_promotion), ctypes.c_int(f.oob_fill))
        return code, ctypes.string_at(at, 128)

    def launch(self, fn_ptr: int, grid, block, shared: int, args: list[bytes]) -> None:
        """cuLaunchKernel with each argument's bytes (a map: 128 bytes, 64-byte aligned copies)."""
        keep = []
        ptrs = (ctypes.c_void_p * len(args))()
        for i, a in enumerate(args):
            b = (ctypes.c_uint8 * (len(a) + 64))()
            at = (ctypes.addressof(b) + 63) // 64 * 64
            ctypes.memmove(at, a, len(a))
            keep.append(b)
            ptrs[i] = at
        if shared > 48 * 1024:
            code = self.lib.cuFuncSetAttribute(ctypes.c_void_p(fn_ptr), ctypes.c_int(8), ctypes.c_int(shared))
            if code:
                raise RuntimeError(f"cuFuncSetAttribute: {self.error(code)}")
        code = self.lib.cuLaunchKernel(ctypes.c_void_p(fn_ptr), *(ctypes.c_uint(v) for v in grid),
                                       *(ctypes.c_uint(v) for v in block), ctypes.c_uint(shared), None, ptrs, None)
        if code:
            raise RuntimeError(f"cuLaunchKernel: {self.error(code)}")


def provenance(cp, texts: dict[str, str]) -> dict:
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i=0"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        driver = "unknown (nvidia-smi failed)"

    def version(v: int) -> str:
        return f"{v // 1000}.{v % 1000 // 10}"
    return {"gpu": name, "arch": f"sm_{cp.cuda.Device(0).compute_capability}", "driver": driver,
            "cuda_driver_api": version(cp.cuda.runtime.driverGetVersion()),
            "cuda_runtime": version(cp.cuda.runtime.runtimeGetVersion()),
            "nvrtc": ".".join(map(str, cp.cuda.nvrtc.getVersion())), "cupy": cp.__version__,
            "numpy": np.__version__, "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv), "nvrtc_options": list(OPTIONS),
            "sources_sha256": {k: hashlib.sha256(v.encode()).hexdigest() for k, v in texts.items()}}


OPTIONS = ("-std=c++17", "-arch=sm_90a")
JOB_TIMEOUT_S = 60
RULE_JOB_TIMEOUT_S = 20                         # --rules: 57 launches of a few seconds each, under 5 minutes
SOURCES = ("tma_wgmma_gemm.cu", "tma_box.cu")


class DeviceFault(Exception):
    """The GPU refused a launch or stopped the kernel (the CUDA error's text)."""


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize]).copy()


def jobs(rules: bool = False) -> list[str]:
    """Every launch the script makes, by name (each runs in its own process); with `rules`, the
    grid of `_tma_cases.RULE_PROBES` only."""
    C = load_cases()
    if rules:
        return [f"rule:{n}" for n in C.RULE_PROBES]
    return (["encode"] + [f"gemm:{s}" for s in C.GEMM_RECORDED] + [f"box:{n}" for n in C.BOX_CASES]
            + [f"probe:{n}" for n in C.PROBES])


def run_job(name: str) -> tuple[dict[str, np.ndarray], dict]:
    """Launch job `name` in this process: (arrays for the .npz, extra facts for the .json)."""
    import cupy as cp                              # lazy: only on the GPU machine
    C = load_cases()
    drv = Driver()
    kind, _, key = name.partition(":")
    arrays: dict[str, np.ndarray] = {}

    def tmap(dev, host, **kw) -> bytes:
        f = C.fields(host, dev.data.ptr, **kw)
        code, raw = drv.encode(f)
        if code:
            raise RuntimeError(f"cuTensorMapEncodeTiled({f}): {drv.error(code)}")
        return raw

    def launch(fn, grid, shared: int, args: list[bytes]) -> None:
        try:
            drv.launch(fn.kernel.ptr, grid, (128, 1, 1), shared, args)
            cp.cuda.Device(0).synchronize()
        except RuntimeError as e:                  # CuPy's CUDARuntimeError / CUDADriverError, cuLaunchKernel's
            raise DeviceFault(str(e)) from None

    i32 = lambda v: np.int32(v).tobytes()          # noqa: E731
    if kind == "gemm":
        p = C.GEMM_SIZES[key]
        names = [f"tma_wgmma_gemm<{C.GEMM_SIZES[s]['bn']}, {C.GEMM_SIZES[s]['bk']}, {C.GEMM_SIZES[s]['stages']}>"
                 for s in C.GEMM_RECORDED]
        mod = cp.RawModule(code=(HOPPER / SOURCES[0]).read_text(), options=OPTIONS, name_expressions=names)
        A, B = C.gemm_inputs(np.random.default_rng(0), p["m"], p["n"], p["k"])
        dA, dB = cp.asarray(A), cp.asarray(B)
        dC = cp.full((p["m"], p["n"]), np.nan, np.float32)
        kA, kB, kC = C.gemm_maps(p["bn"], p["bk"])
        fn = mod.get_function(names[C.GEMM_RECORDED.index(key)])
        launch(fn, (p["n"] // p["bn"], p["m"] // C.BM, 1), C.gemm_shared_bytes(p["bn"], p["bk"], p["stages"]),
               [tmap(dA, A, **kA), tmap(dB, B, **kB), tmap(dC, dC.get(), **kC), i32(p["m"]), i32(p["n"]),
                i32(p["k"])])
        arrays[f"{name}:A"], arrays[f"{name}:B"], arrays[f"{name}:C"] = _bits(A), _bits(B), _bits(dC.get())
        return arrays, {}
    if kind in ("box", "probe", "rule"):
        case = {"box": C.BOX_CASES, "probe": C.PROBES, "rule": C.RULE_PROBES}[kind][key]
        names = [f"tma_box<{r}>" for r in (1, 2, 3)]
        mod = cp.RawModule(code=(HOPPER / SOURCES[1]).read_text(), options=OPTIONS, name_expressions=names)
        t = C.box_tensor(case)
        d_t, d_o = cp.asarray(t), cp.zeros_like(cp.asarray(t))
        kw = C.box_map_keywords(case)
        dump = cp.zeros(C.box_nbytes(case), np.uint8)
        fn = mod.get_function(f"tma_box<{len(case['box'])}>")
        launch(fn, (1, 1, 1), C.box_shared_bytes(case),
               [tmap(d_t, t, **kw), tmap(d_o, t, **kw), np.uint64(dump.data.ptr).tobytes()]
               + [i32(v) for v in C.box_scalars(case)])
        arrays[f"{name}:dump"], arrays[f"{name}:out"] = dump.get(), _bits(d_o.get())
        return arrays, {}
    if kind == "encode":
        base = cp.zeros(4096, np.uint8)
        m = np.zeros((64, 64), np.float16)
        checks = {}
        for check, kw in ENCODE_CHECKS.items():
            f = C.fields(m, base.data.ptr + kw.get("offset", 0),
                         **{k: v for k, v in kw.items() if k not in ("fields", "offset")})
            for k, v in kw.get("fields", {}).items():
                f = T.TensorMapFields(**{**f.__dict__, k: v})
            code, _ = drv.encode(f)
            arrays[f"driver:{check}"] = np.array(code, np.int32)
            checks[check] = "ok" if code == 0 else drv.error(code)
        return arrays, {"encode_checks": checks}
    raise ValueError(f"unknown job {name!r} (one of: {', '.join(jobs())})")


def _child(name: str, part: Path) -> int:
    """--job: run one job, write its arrays to `part` (.npz) and facts to part.json; exit 3 on a device fault."""
    try:
        arrays, extra = run_job(name)
    except DeviceFault as e:
        print(f"fault: {e}", flush=True)
        os._exit(3)                                # the context is dead: skip CuPy's teardown (more errors)
    np.savez_compressed(part, **arrays)
    part.with_suffix(".json").write_text(json.dumps(extra))
    return 0


def _verdict(r: subprocess.CompletedProcess, ok: bool) -> str:
    if ok:
        return "ok"
    out = [ln for ln in r.stdout.splitlines() if ln.startswith("fault: ")]
    if r.returncode == 3 and out:
        return out[-1]
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    return "error: " + (err[-1].strip() if err else f"exit status {r.returncode}")


def record(out: Path, rules: bool = False) -> Path:
    import cupy as cp                              # lazy: only on the GPU machine
    launches: dict[str, str] = {}
    arrays: dict[str, np.ndarray] = {}
    extra: dict = {}
    limit = RULE_JOB_TIMEOUT_S if rules else JOB_TIMEOUT_S
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(jobs(rules)):
            part = Path(tmp) / f"job{i}.npz"
            cmd = [sys.executable, str(Path(__file__).resolve()), "--job", name, "--part", str(part)]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
            except subprocess.TimeoutExpired:
                launches[name] = f"timeout: did not finish in {limit} s"
            else:
                ok = r.returncode == 0 and part.exists()
                launches[name] = _verdict(r, ok)
                if ok:
                    with np.load(part) as z:
                        arrays.update({k: z[k] for k in z.files})
                    extra.update(json.loads(part.with_suffix(".json").read_text()))
            print(f"{name}: {launches[name]}", flush=True)
    texts = {n: (HOPPER / n).read_text() for n in SOURCES}
    prov = provenance(cp, texts)
    tag = prov["gpu"].lower().replace("nvidia", "").split()[0]
    out.mkdir(parents=True, exist_ok=True)
    stem = f"tma_{tag}_rules" if rules else f"tma_{tag}"
    path = out / f"{stem}.npz"
    np.savez_compressed(path, **arrays)
    (out / f"{stem}.json").write_text(json.dumps({"provenance": prov, "launches": launches,
                                                     "encode_checks": extra.get("encode_checks", {})},
                                                    indent=1) + "\n")
    return path


# maps over a 64 x 64 f16 tensor: one valid, and each requirement of cuTensorMapEncodeTiled broken once
ENCODE_CHECKS = {
    "valid_128B": {"box": (64, 64), "swizzle": "128B"},
    "misaligned_base": {"box": (64, 64), "offset": 8},
    "box_257": {"box": (64, 64), "fields": {"box": (64, 257)}},
    "stride_not_16": {"box": (64, 64), "fields": {"strides": (136,)}},
    "inner_box_not_16B": {"box": (4, 8)},
    "inner_wider_than_swizzle": {"box": (64, 8), "swizzle": "64B"},
    "inner_narrower_than_swizzle": {"box": (32, 8), "swizzle": "128B"},
    "element_stride_9": {"box": (64, 64), "element_strides": (1, 9)},
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="folder for tma_<gpu>.npz and .json")
    ap.add_argument("--rules", action="store_true",
                    help="record only the grid of _tma_cases.RULE_PROBES (tma_<gpu>_rules.npz and .json)")
    ap.add_argument("--job", help="(internal) run one launch by name in this process")
    ap.add_argument("--part", type=Path, help="(internal) where --job writes its arrays")
    args = ap.parse_args(argv)
    if args.job:
        return _child(args.job, args.part)
    if args.out is None:
        ap.error("--out is required")
    path = record(args.out, args.rules)
    print(f"wrote {path} and its .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
