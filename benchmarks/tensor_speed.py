"""Speed of the tensor-core numerics: the scalar reference against the batched compiled model,
per warp instruction and in whole mma.sync GEMM kernels.

    python benchmarks/tensor_speed.py [--warps 64] [--repeats 5] [--before-gemm 128]
        [--gemm 128 256 512] [--json benchmarks/results/tensor_speed.json]

Per form (mma.sync m16n8k16 f16 -> f32, bf16 -> f32, m16n8k8 tf32 -> f32, m16n8k32 s8 -> s32,
e4m3 -> f32; one warp's share, 16 x 128, of wgmma m64n128k16 f16 -> f32), on random finite
inputs (normal values encoded in the format):
- before: one warp through the scalar reference (`isa.semantics.tensor.mma_sync(...,
  reference=True)`, `wgmma.warp_mma(..., reference=True)`: `mma_numerics.mma`, a Python loop
  per element), which is what the functional core ran per warp before the batched numerics
  (s8 has always been numpy sums: its "before" is the same call for one warp);
- after: the same call on the batched numerics (`isa.semantics.mma_batch`) for one warp, and
  for `--warps` warps at once (how the functional core hands over every warp of a step), per
  warp; the batch's first warp is checked equal to the reference's bits.
Times are the minimum over repeats, CPU (process_time) and wall, in microseconds per warp
instruction, with the speed-ups.

Whole kernels: `tests/functional/mma_kernels.gemm_kernel` (one 16 x 8 tile of D per warp, a
`mma.sync.m16n8k16` f16 -> f32 per 16 of K) at each `--gemm` size n^3 through `gpusim.launch`
in functional mode (fast core, one worker): a first launch (cold: numba caches loaded, PTX
parsed) and a second (warm), wall and CPU, per mma instruction; D is checked bit for bit
against the batched model chained over K. `--before-gemm` sizes run once more with the scalar
reference in place of the batched numerics (slow: about 50 ms per mma instruction).
Machine, versions, load averages, date and command are written with the results.
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
from functools import partial

import numba
import numpy as np

ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "functional"))

import gpusim  # noqa: E402
from isa.semantics import mma_batch as MB  # noqa: E402
from isa.semantics import mma_layout as L  # noqa: E402
from isa.semantics import mma_numerics as M  # noqa: E402
from isa.semantics import tensor as T  # noqa: E402
from isa.semantics import wgmma as W  # noqa: E402
from isa.semantics.tensor_formats import FORMATS, encode_rn  # noqa: E402
from mma_kernels import gemm_kernel  # noqa: E402

MMA_FORMS = [("m16n8k16", "f16", "f32"), ("m16n8k16", "bf16", "f32"), ("m16n8k8", "tf32", "f32"),
             ("m16n8k32", "s8", "s32"), ("m16n8k32", "e4m3", "f32")]


def bits(rng, t: str, shape) -> np.ndarray:
    """Random finite inputs of type t as bit patterns (uint64)."""
    if t in ("s8", "u8", "s32"):
        return rng.integers(0, 1 << T.ELEM_BITS[t], shape).astype(np.uint64)
    return encode_rn(rng.standard_normal(shape), FORMATS[t])


def timed(fn, repeats: int) -> tuple[float, float]:
    """(min CPU seconds, min wall seconds) of `repeats` calls."""
    cpu = wall = float("inf")
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        cpu, wall = min(cpu, time.process_time() - c), min(wall, time.perf_counter() - t)
    return cpu, wall


def row(name: str, before, one, batch, nwarps: int, equal: bool) -> dict:
    us = lambda s: round(s * 1e6, 1)                                        # noqa: E731
    r = {"form": name, "before_cpu_us": us(before[0]), "before_wall_us": us(before[1]),
         "after_one_warp_cpu_us": us(one[0]), "after_one_warp_wall_us": us(one[1]),
         f"after_{nwarps}_warps_cpu_us_per_warp": us(batch[0] / nwarps),
         f"after_{nwarps}_warps_wall_us_per_warp": us(batch[1] / nwarps),
         "speedup_one_warp_cpu": round(before[0] / one[0], 1),
         f"speedup_{nwarps}_warps_cpu": round(before[0] / (batch[0] / nwarps), 1),
         "first_warp_equals_reference": equal}
    print(f"{name:28s} before {r['before_cpu_us']:>10.0f} us  after: one warp {r['after_one_warp_cpu_us']:>7.1f} us "
          f"({r['speedup_one_warp_cpu']:.0f}x), {nwarps} warps {batch[0] / nwarps * 1e6:>6.1f} us/warp "
          f"({r[f'speedup_{nwarps}_warps_cpu']:.0f}x) CPU; equal {equal}", flush=True)
    return r


def mma_row(shape: str, t: str, ct: str, nwarps: int, repeats: int, rng) -> dict:
    form = T.MmaForm(shape, t, t, ct)
    m, n, k = form.mnk
    ab, cb = T.ELEM_BITS[t], T.ELEM_BITS[ct]
    a = L.pack(bits(rng, t, (nwarps, m, k)), L.frag_map(shape, "a", ab), ab)
    b = L.pack(bits(rng, t, (nwarps, k, n)), L.frag_map(shape, "b", ab), ab)
    c = L.pack(bits(rng, ct, (nwarps, m, n)), L.frag_map(shape, "c", cb), cb)
    want = T.mma_sync(form, a[0], b[0], c[0], reference=True)
    before = timed(lambda: T.mma_sync(form, a[0], b[0], c[0], reference=True), max(1, repeats // 2))
    one = timed(lambda: T.mma_sync(form, a[:1], b[:1], c[:1]), repeats)
    batch = timed(lambda: T.mma_sync(form, a, b, c), repeats)
    equal = bool(np.array_equal(T.mma_sync(form, a, b, c)[0], want))
    return row(f"mma.sync {shape} {t}->{ct}", before, one, batch, nwarps, equal)


def wgmma_row(nwarps: int, repeats: int, rng) -> dict:
    form = W.WgmmaForm(128, 16, "f16", "f16", "f32", False)
    A = bits(rng, "f16", (nwarps, 16, 16))
    B = bits(rng, "f16", (nwarps, 16, 128))
    c = L.pack(bits(rng, "f32", (nwarps, 16, 128)), L.wgmma_acc_map(128, 32)[:32], 32)
    sd = np.ones(nwarps, bool)
    want = W.warp_mma(form, A[0], B[0], c[0], True, reference=True)
    before = timed(lambda: W.warp_mma(form, A[0], B[0], c[0], True, reference=True), 1)
    one = timed(lambda: W.warp_mma(form, A[:1], B[:1], c[:1], sd[:1]), repeats)
    batch = timed(lambda: W.warp_mma(form, A, B, c, sd), repeats)
    equal = bool(np.array_equal(W.warp_mma(form, A, B, c, sd)[0], want))
    return row("wgmma m64n128k16 f16->f32 (one warp's 16 x 128)", before, one, batch, nwarps, equal)


def gemm(size: int, reference: bool) -> dict:
    """One size of the mma.sync GEMM in functional mode: cold and warm launches."""
    rng = np.random.default_rng(size)
    A = rng.standard_normal((size, size)).astype(np.float16)
    B = rng.standard_normal((size, size)).astype(np.float16)
    Bt = np.ascontiguousarray(B.T)
    src = gpusim.PtxSource(gemm_kernel(), "gemm")
    grid = ((size // 16) * (size // 8) // 4,)
    original = T.mma_sync
    if reference:      # the scalar reference in place of the batched numerics, for this run only
        T.mma_sync = partial(original, reference=True)
    out, times = [], []
    try:
        for _ in range(1 if reference else 2):
            D = np.zeros((size, size), np.float32)
            t, c = time.perf_counter(), time.process_time()
            res = gpusim.launch(src, grid, (128,), (A, Bt, D, np.uint32(size), np.uint32(size)), workers=1)
            times.append((time.process_time() - c, time.perf_counter() - t))
            out.append(D)
    finally:
        T.mma_sync = original
    model = M.hopper_model("mma", "f16", "f32", 16)
    acc = np.zeros((size, size), np.uint64)
    for k0 in range(0, size, 16):
        acc = MB.mma(A[:, k0:k0 + 16].view(np.uint16), B[k0:k0 + 16].view(np.uint16), acc, "f16", "f16", "f32", model)
    ninst = int(res.metrics["sm__inst_executed_pipe_tensor_op_hmma.sum"])
    r = {"size": size, "numerics": "reference (scalar)" if reference else "batched", "mma_instructions": ninst,
         "warps": grid[0] * 4, "equal_to_chained_model": bool(all(np.array_equal(acc.astype(np.uint32).view(np.float32), d)
                                                                  for d in out)),
         "first_cpu_s": round(times[0][0], 2), "first_wall_s": round(times[0][1], 2)}
    if not reference:
        r.update(warm_cpu_s=round(times[1][0], 2), warm_wall_s=round(times[1][1], 2),
                 warm_cpu_us_per_mma=round(times[1][0] / ninst * 1e6, 1))
    else:
        r["cpu_us_per_mma"] = round(times[0][0] / ninst * 1e6, 1)
    print(f"gemm {size}^3 {r['numerics']}: {ninst} mma.sync, " + ", ".join(f"{k} {v}" for k, v in r.items()
                                                                             if k.endswith(("_s", "_mma"))), flush=True)
    return r


def machine() -> dict:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(__file__)).stdout.strip()
    return {"node": platform.node(), "cpu": cpu, "cpus": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__, "commit": commit}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warps", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--gemm", type=int, nargs="*", default=[128, 256, 512])
    ap.add_argument("--before-gemm", type=int, nargs="*", default=[128])
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "tensor_speed.json"))
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    load_before, host = os.getloadavg(), machine()
    T.mma_sync(T.MmaForm("m16n8k16", "f16", "f16", "f32"), *(np.zeros((1, 32, n), np.uint32) for n in (4, 2, 4)))
    rows = [mma_row(s, t, c, a.warps, a.repeats, rng) for s, t, c in MMA_FORMS] + [wgmma_row(a.warps, a.repeats, rng)]
    gemms = [gemm(n, False) for n in a.gemm] + [gemm(n, True) for n in a.before_gemm]
    doc = {"what": __doc__.strip().splitlines()[0], "command": "python benchmarks/tensor_speed.py " + " ".join(argv or sys.argv[1:]),
           "date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": host,
           "load_average_before": [round(x, 2) for x in load_before],
           "load_average_after": [round(x, 2) for x in os.getloadavg()],
           "per_warp_instruction": rows, "gemm_functional": gemms}
    with open(a.json, "w") as fh:
        json.dump(doc, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
