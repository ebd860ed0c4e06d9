"""CuPy's RawKernel/RawModule on a GPU against `gpusim.cupy` on the same inputs: the outputs
must agree bit for bit, and the NVRTC options CuPy compiled with are recorded (gpusim.cupy
reproduces them: `-ftz=true` appended, the C++ standard when none is given).

On a machine with the GPU, CuPy (`cupy-cuda13x`, the `gpu` extra) and numpy, from the
repository root (under a minute):

    python -m validate.cupy_dropin --out "$OUT"          # writes cupy_dropin_<gpu>.npz and .json

Check against it on any machine (no GPU):

    python -m validate.cupy_dropin --compare data/measurements/cupy_dropin_h100.npz

The cases are float kernels whose bits depend on how CuPy compiles (flush-to-zero of
single-precision denormals, FMA contraction, the libdevice forms of `expf`/`sinf`/`sqrtf`/
division), a templated kernel through name expressions in both precisions, and a shared-memory
reduction with warp shuffles. Inputs come from numpy's generator with a fixed seed and include
denormals, zeros and infinities. The npz holds each case's inputs (`in:<case>:<k>`) and
outputs (`out:<case>`); the JSON sidecar the GPU, versions and the options NVRTC got for the
cases' module and for a kernel given no options (captured by wrapping
`cupy.cuda.compiler.compile_using_nvrtc`).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np

from validate.datadir import measurement_file

SEED = 2024
N = 4096
BLOCK = 256

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void float_math(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[4 * i + 0] = x[i] / y[i];
        out[4 * i + 1] = sqrtf(fabsf(x[i]));
        out[4 * i + 2] = expf(x[i] * 1e-3f);
        out[4 * i + 3] = sinf(y[i]);
    }
}

template <typename T>
__global__ void scale_add(T* x, T a, T b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a + b;
}

template <int BLOCK>
__global__ void block_sum(const float* x, float* partial, int n) {
    __shared__ float s[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = BLOCK / 2; k >= 32; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] = v = v + s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x < 32) {
        for (int k = 16; k > 0; k >>= 1) v += __shfl_down_sync(0xffffffffu, v, k);
        if (threadIdx.x == 0) partial[blockIdx.x] = v;
    }
}
"""
NAMES = ("scale_add<float>", "scale_add<double>", f"block_sum<{BLOCK}>")
NAMES_OF_CASES = ("saxpy", "float_math", "scale_add_f32", "scale_add_f64", "block_sum")


def inputs() -> dict[str, list[np.ndarray]]:
    """Each case's inputs: float32 with denormals, zeros, infinities and ordinary values."""
    rng = np.random.default_rng(SEED)

    def f32() -> np.ndarray:
        x = (rng.standard_normal(N) * 10.0 ** rng.integers(-30, 30, N)).astype(np.float32)
        x[:16] = [0.0, -0.0, 1e-40, -1e-40, 1e-45, 1.1754942e-38, np.inf, -np.inf, 1.0, -1.0, 3e38, 2.0, 0.5,
                  1e-39, 5e-39, 7.0]
        return x
    return {"saxpy": [np.array([1.5], np.float32), f32(), f32()], "float_math": [f32(), f32()],
            "scale_add_f32": [f32(), np.array([0.3], np.float32), np.array([1e-39], np.float32)],
            "scale_add_f64": [rng.standard_normal(N) * 1e-300, np.array([0.1]), np.array([3e-310])],
            "block_sum": [rng.standard_normal(N).astype(np.float32)]}


def run_cases(cp, ins: dict[str, list[np.ndarray]]) -> dict[str, np.ndarray]:
    """The outputs of every case, run through `cp` (cupy on a GPU, gpusim.cupy here)."""
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=NAMES)
    grid, out = ((N + BLOCK - 1) // BLOCK,), {}
    a, x, y = ins["saxpy"]
    dy = cp.asarray(y)
    mod.get_function("saxpy")(grid, (BLOCK,), (a[0], cp.asarray(x), dy, np.int32(N)))
    out["saxpy"] = cp.asnumpy(dy)
    x, y = ins["float_math"]
    res = cp.zeros(4 * N, dtype=cp.float32)
    mod.get_function("float_math")(grid, (BLOCK,), (cp.asarray(x), cp.asarray(y), res, np.int32(N)))
    out["float_math"] = cp.asnumpy(res)
    for case, name in (("scale_add_f32", NAMES[0]), ("scale_add_f64", NAMES[1])):
        x, s, b = ins[case]
        dx = cp.asarray(x)
        mod.get_function(name)(grid, (BLOCK,), (dx, s[0], b[0], np.int32(N)))
        out[case] = cp.asnumpy(dx)
    (x,) = ins["block_sum"]
    partial = cp.zeros(grid[0], dtype=cp.float32)
    mod.get_function(NAMES[2])(grid, (BLOCK,), (cp.asarray(x), partial, np.int32(N)))
    out["block_sum"] = cp.asnumpy(partial)
    return out


def measure(out_dir: Path) -> Path:
    """Run the cases with CuPy on this machine's GPU; write the npz and its JSON sidecar."""
    os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp()         # compile afresh, so the options are seen
    import cupy as cp  # lazy: cupy is a heavy dependency, loaded only on the GPU machine
    from cupy.cuda import compiler  # lazy: cupy is a heavy dependency, loaded only on the GPU machine
    seen = []
    original = compiler.compile_using_nvrtc

    def recording(source, options=(), *args, **kwargs):
        seen.append(list(options))
        return original(source, options, *args, **kwargs)
    compiler.compile_using_nvrtc = recording
    ins = inputs()
    outs = run_cases(cp, ins)
    module_options = list(seen)
    seen.clear()
    cp.RawKernel('extern "C" __global__ void nothing() {}', "nothing").compile()     # no options: CuPy's own
    default_options = list(seen)
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    stem = "cupy_dropin_" + name.lower().replace("nvidia", "").split()[0]
    out_dir.mkdir(parents=True, exist_ok=True)
    arrays = {f"in:{c}:{k}": a for c, xs in ins.items() for k, a in enumerate(xs)}
    arrays.update({f"out:{c}": a for c, a in outs.items()})
    np.savez_compressed(out_dir / f"{stem}.npz", **arrays)
    meta = {"what": __doc__.splitlines()[0], "gpu": name, "arch": f"sm_{cp.cuda.Device(0).compute_capability}",
            "cupy": cp.__version__, "nvrtc": ".".join(map(str, cp.cuda.nvrtc.getVersion())),
            "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(), "numpy": np.__version__,
            "python": platform.python_version(), "seed": SEED, "n": N,
            "nvrtc_options": module_options, "nvrtc_options_given_none": default_options,
            "command": "python -m validate.cupy_dropin --out DIR",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    (out_dir / f"{stem}.json").write_text(json.dumps(meta, indent=1) + "\n")
    return out_dir / f"{stem}.npz"


def compare(npz: Path, gpu: str = "h100") -> dict[str, int]:
    """Case -> number of outputs whose bits differ between the recording and gpusim.cupy."""
    got, data = outputs(npz, gpu)
    return {c: _differing(got[c], data[f"out:{c}"]) for c in got}


def outputs(npz: Path, gpu: str = "h100"):
    """(gpusim.cupy's outputs of every case {case: array}, the recording's npz)."""
    import gpusim.cupy as gcp  # lazy: the GPU side (--out) measures with real CuPy and needs no gpusim
    data = np.load(npz)
    ins: dict[str, list[np.ndarray]] = {}
    for key in sorted(k for k in data.files if k.startswith("in:")):
        _, case, k = key.split(":")
        ins.setdefault(case, []).insert(int(k), data[key])
    gcp.set_gpu(gpu)
    return run_cases(gcp, ins), data


def _differing(a: np.ndarray, b: np.ndarray) -> int:
    """How many elements of `a` and `b` differ in any bit."""
    ra, rb = a.view(np.uint8).reshape(a.size, -1), b.view(np.uint8).reshape(b.size, -1)
    return int(np.count_nonzero((ra != rb).any(axis=1)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="measure on this machine's GPU, writing here")
    ap.add_argument("--compare", type=measurement_file, help="a recorded npz to check gpusim.cupy against (no GPU)")
    ap.add_argument("--gpu", default="h100", help="the preset --compare runs on")
    args = ap.parse_args(argv)
    if args.out is not None:
        print(measure(args.out))
        return 0
    if args.compare is None:
        ap.error("give --out DIR (on a GPU) or --compare FILE.npz")
    diffs = compare(args.compare, args.gpu)
    for case, n in diffs.items():
        print(f"{case}: {n} outputs differ in their bits")
    return 1 if any(diffs.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
