"""A kernel's first constant reads on the H100/H200 (issue 24): what a warp waits when its instructions
name constant-bank lines the SM has not read yet (Nsight's `imc_miss` stall), which gpusim charges an L2
hit latency a line (`gpusim.timing.fetch`, an assumption nobody measured). Held-out launches of 2-3 us are
predicted +7.5% on average, and there the model's warps spend 25-45% of their samples on `imc_miss` where
the GPU's spend 0-20%.

    python -m validate.constant_cache_probe $OUT                 # on a GPU machine: $OUT/constant_cache.json
    python -m validate.constant_cache_probe --predict h100 data/measurements/constant_cache_h100.json

Each kernel takes 136 `long long` parameters after its output pointer, so parameter j sits at
c[0x0][0x218 + 8 j] and parameters 6, 14, 22, ... lie in consecutive 64-B lines of bank 0 (lines
9, 10, 11, ...). A warp reads the clock, runs a chain of K dependent integer multiply-adds whose
constant operands are in K distinct lines (`p` kernels: parameters; `c` kernels: a `__constant__`
array in bank 3, 64 B apart), reads the clock, runs the same chain again (the lines now present),
and reads the clock: lane 0 writes both intervals and its SM. Launch shapes: one warp, one warp on
each of 132 SMs, 32 warps of one block on one SM. Timed twice: by Nsight (`gpu__time_duration`,
`sm__cycles_elapsed.max`; caches flushed between launches as `validate measure` does), and by the
kernels' own clocks without Nsight, each case launched three times back to back with the same
arguments and a fourth time with other parameter values (whether the constant caches keep a
launch's lines for the next one).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

from validate import ncu
from validate.probe_cli import folder_probe_main, gpu_provenance, nvrtc_module

PARAMS = 136                     # long long parameters after `out`: 16 lines' worth and the first line's rest
LINES = (0, 1, 2, 4, 8, 16)
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "smsp__inst_executed.sum")
# What the runs of this probe measured, as the SM's fields (gpusim/timing/fetch.py): a first parameter line 100
# cycles cold (4 warm), each further one about 24 (16 lines 458), `__constant__` lines about 200 each under
# Nsight's flushes, the same on the H100 and the H200 (data/measurements/constant_cache_h*.json); the presets
# leave the fields at 0 for now (docs/mechanisms_24.md section 41)
MEASURED_FILLS = {"parameter_fill_cycles": 96.0, "parameter_next_fill_cycles": 24.0, "constant_fill_cycles": 200.0}
REPEATS = 5


def _chain(lines, bank: str, mult: int) -> str:
    """Dependent multiply-adds, one with a constant of each of `lines` (0: the first line after the one
    holding `out`; bank 0's parameters or bank 3's array)."""
    terms = [f"(int)a{8 * i + 6}" if bank == "p" else f"cdat[{16 * i}]" for i in lines]
    return "".join(f"    acc = acc * {mult} + {t};\n" for t in terms)


# kernel name -> (bank, the lines its chain reads): K consecutive lines, and two lines of two 256-B blocks
# that are not neighbours (a block's fill bringing the next one would show as a cheap second read)
KERNELS = {**{f"{b}_lines{k}": (b, tuple(range(k))) for b in ("p", "c") for k in LINES},
           "p_apart": ("p", (0, 8)), "p_next": ("p", (0, 3))}


def source() -> str:
    params = ", ".join(f"long long a{j}" for j in range(PARAMS))
    head = r"""
typedef unsigned long long u64;
__constant__ int cdat[16 * 16];
__device__ __forceinline__ u64 clk(int dep) {
    u64 t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) : "r"(dep) : "memory");
    return t;
}
__device__ __forceinline__ unsigned smid() { unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); return s; }
"""
    out = [head]
    for name, (bank, lines) in KERNELS.items():
        out.append(f"""
extern "C" __global__ void {name}(u64 *out, {params}) {{
    u64 t0 = clk(0);
    int acc = (int)(t0 >> 62) + (int)threadIdx.x;
{_chain(lines, bank, 3)}    u64 t1 = clk(acc);
{_chain(lines, bank, 5)}    u64 t2 = clk(acc);
    if ((threadIdx.x & 31) == 0) {{
        u64 *o = out + 4 * (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5));
        o[0] = t1 - t0; o[1] = t2 - t1; o[2] = smid(); o[3] = (u64)(unsigned)acc;
    }}
}}
""")
    return "".join(out)


# (case, kernel, blocks, threads)
CASES = ([(f"p{k}_1x32", f"p_lines{k}", 1, 32) for k in LINES]
         + [(f"p{k}_132x32", f"p_lines{k}", 132, 32) for k in (0, 4, 16)]
         + [(f"p{k}_1x1024", f"p_lines{k}", 1, 1024) for k in (0, 4, 16)]
         + [(f"c{k}_1x32", f"c_lines{k}", 1, 32) for k in (0, 4, 16)]
         + [("p_apart_1x32", "p_apart", 1, 32), ("p_next_1x32", "p_next", 1, 32)])


def _args(out, shift: int = 0) -> tuple:
    return (out, *[np.int64(j + 1 + shift) for j in range(PARAMS)])


def _launch(cp, mod, name: str, blocks: int, threads: int, out, shift: int = 0) -> None:
    mod.get_function(name)((blocks,), (threads,), _args(out, shift))


def _module():
    cp, props, mod = nvrtc_module(source())
    cdat = mod.get_global("cdat")
    cp.cuda.runtime.memcpy(cdat.ptr, np.arange(256, dtype=np.int32).ctypes.data, 1024, cp.cuda.runtime.memcpyHostToDevice)
    return cp, props, mod


def _warps(cp, out, warps: int) -> dict:
    """The warps' cold and warm chain cycles of the launch that just wrote `out` (median, min, max)."""
    cp.cuda.Device().synchronize()
    h = cp.asnumpy(out[:4 * warps]).reshape(warps, 4)
    cold, warm = h[:, 0].astype(float), h[:, 1].astype(float)
    return {"cold_median": float(np.median(cold)), "cold_min": float(cold.min()), "cold_max": float(cold.max()),
            "warm_median": float(np.median(warm)), "warm_min": float(warm.min()), "warm_max": float(warm.max()),
            "sms": sorted({int(s) for s in h[:, 2]})[:8]}


def worker() -> None:
    """The launches Nsight times; each one's clocks (under Nsight's cache flushes, as `validate measure`
    runs) go to the file named by GPUSIM_PROBE_CLOCKS."""
    cp, _props, mod = _module()
    out = cp.zeros(4 * 1024, dtype=cp.uint64)
    got = {}
    for case, name, blocks, threads in CASES:
        for _ in range(REPEATS):
            cp.cuda.runtime.memset(out.data.ptr, 0, out.nbytes)    # not a kernel: Nsight times only the probe's
            _launch(cp, mod, name, blocks, threads, out)
            got.setdefault(case, []).append(_warps(cp, out, blocks * threads // 32))
    cp.cuda.Device().synchronize()
    if os.environ.get("GPUSIM_PROBE_CLOCKS"):
        Path(os.environ["GPUSIM_PROBE_CLOCKS"]).write_text(json.dumps(got))


def _clocks(cp, mod) -> dict:
    """Per case: per launch (three alike, then one with other parameter values), the warps' cold and
    warm chain cycles (median, min, max over warps) and the SMs they ran on."""
    out = cp.zeros(4 * 1024, dtype=cp.uint64)
    got = {}
    for case, name, blocks, threads in CASES:
        warps = blocks * threads // 32
        runs = []
        for shift in (0, 0, 0, 1000):
            cp.cuda.runtime.memset(out.data.ptr, 0, out.nbytes)    # not a kernel: Nsight times only the probe's
            _launch(cp, mod, name, blocks, threads, out, shift)
            runs.append({**_warps(cp, out, warps), "new_params": shift != 0})
        got[case] = runs
    return got


def measure(out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "constant_cache_ncu.csv"
    clock_file = out_dir / "constant_cache_ncu_clocks.json"
    os.environ["GPUSIM_PROBE_CLOCKS"] = str(clock_file)
    cmd, rc, kernels = ncu.profile_worker("validate.constant_cache_probe", METRICS, log)
    ncu_clocks = json.loads(clock_file.read_text()) if clock_file.exists() else {}
    per_case, problems = ncu.repeated_cases(kernels, len(CASES), REPEATS)
    cp, _props, mod = _module()
    clocks = _clocks(cp, mod)
    rows = []
    for (case, name, blocks, threads), got in zip(CASES, per_case):
        ms = [k["metrics"] for k in got]
        durs = sorted(m.get("gpu__time_duration.sum") or 0 for m in ms)
        cyc, _ = ncu.median_cycles(got)
        rows.append({"case": case, "kernel": name, "blocks": blocks, "threads": threads,
                     "duration_ns_median": durs[len(durs) // 2] if durs else None, "duration_ns": durs,
                     "sm_cycles_median": cyc, "metrics": ms[-1] if ms else {}, "clocks": clocks.get(case),
                     "clocks_under_ncu": ncu_clocks.get(case)})
    prov = gpu_provenance(cp, "python -m validate.constant_cache_probe $OUT", __doc__,
                          ncu=" ".join(cmd[:12]), ncu_rc=rc.returncode, problems=problems, params=PARAMS)
    path = out_dir / "constant_cache.json"
    path.write_text(json.dumps({"provenance": prov, "kernels": rows}, indent=1) + "\n")
    for r in rows:
        c = r["clocks"]
        print(f"{r['case']:14s} {r['duration_ns_median']} ns  cold/warm " +
              " | ".join(f"{x['cold_median']:.0f}/{x['warm_median']:.0f}" for x in c) + "  under ncu " +
              " | ".join(f"{x['cold_median']:.0f}/{x['warm_median']:.0f}" for x in r["clocks_under_ncu"] or []))
    return path


def predict(gpu: str, measured: Path | None = None) -> list[dict]:
    """gpusim's duration, SM cycles and `imc_miss` warp-cycles of each case, the measured ones beside them."""
    import gpusim                        # here: the GPU machine's side runs without gpusim's dependencies
    meas = {}
    if measured:
        meas = {r["case"]: r for r in json.loads(Path(measured).read_text())["kernels"]}
    out = np.zeros(4 * 1024, np.uint64)
    rows = []
    src = source()
    for case, name, blocks, threads in CASES:
        m = gpusim.launch(gpusim.CudaSource(src, name), blocks, threads, _args(out), gpu=gpu,
                          timing=True, outputs=False).metrics
        got = meas.get(case, {})
        rows.append({"case": case, "predicted_ns": m["gpu__time_duration.sum"], "measured_ns": got.get("duration_ns_median"),
                     "predicted_sm_cycles": m["sm__cycles_elapsed.max"], "measured_sm_cycles": got.get("sm_cycles_median"),
                     "predicted_imc_miss_warp_cycles": m.get("smsp__pcsamp_warps_issue_stalled_imc_miss"),
                     "measured_cold_chain_cycles": (got.get("clocks") or [{}])[0].get("cold_median")})
    return rows


if __name__ == "__main__":
    sys.exit(folder_probe_main(__doc__, "validate.constant_cache_probe", measure, predict, worker))
