"""Wide shared-memory accesses: how many wavefronts and cycles a warp's 64-bit (LDS.64 / STS.64,
float2) and 128-bit (LDS.128 / STS.128, float4) shared load or store takes on Hopper, by the lanes'
address pattern, beside the 32-bit one. gpusim counted the most distinct 4-B words in one bank
of the whole warp (a broadcast LDS.128: 1 wavefront), yet an H200 counts 2 for a
broadcast LDS.128 (`l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum`). Lane l of every warp
accesses element `PATTERNS[p](l)` of a 1-KiB array of 4-, 8- or 16-B elements (the element's first
word is its byte offset / 4, so the loads' sums tell the pattern):

- `bcast`: every lane element 0; `half_bcast`: lanes 0-15 element 0, 16-31 element 1 (other banks);
- `quarter`: element l / 8 (4 addresses); `pairs`: element l / 2 (two lanes an element);
- `seq`: element l (128, 256, 512 B a warp); `stride2`: element 2 l;
- permutations of `seq`: `seq_half_swapped` (element l ^ 16) and `seq_interleaved` (element
  (l % 4) * 8 + l / 4, so that a half-warp of 8-B lanes, or a quarter-warp of 16-B lanes, holds
  2 or 4 words of every bank it touches: lanes served in fixed groups cost 2x, 4x the whole warp's
  most words in a bank, addresses grouped as they fall cost the same as `seq`).

Each access is an `asm volatile` `ld.volatile.shared.v{2,4}.f32` / `st.volatile.shared...` at one
address a lane, UNROLL of them an iteration (independent; a load's x summed into one of 8
accumulators, one FADD each at every width), REPS iterations: ptxas keeps every one (SASS LDS.64 /
LDS.128 / STS.128; CUDA C++ has no volatile float4 load, and a plain one could be hoisted, merged
or narrowed to the x it feeds). Every kernel has `__launch_bounds__(1024)` so that 32 warps fit
(ptxas 12.8: 64 registers for `ld_b16`, no spills, about 11 LDS.128 in flight a warp). A case is
one block of W warps, alone on its SM (W = 1 and 4; `--warps 1,4,32` adds 32), timed by Nsight as
`validate measure` does (median of 3). `base_w*` is the load kernel without the loop (filling the
array: 8 store wavefronts), subtracted before the rates: wavefronts and bank conflicts a warp
instruction of the loop (over STEPS = REPS x UNROLL a warp), shared instructions a step (1: none
hoisted or merged), cycles a warp instruction a SM. gpusim runs the same kernels (`--predict`);
`table` prints them side by side, then a grid of pattern x width. The worker checks every case's
output (`expected`); a wrong one is a PROBLEM in the file.

    python -m validate.wide_shared_probe $OUT [--warps 1,4,32]   # on a GPU machine: $OUT/wide_shared.json
    python -m validate.wide_shared_probe --predict h100 [$OUT/wide_shared.json]
    python -m validate.wide_shared_probe table $OUT/wide_shared.json

Needs CuPy (NVRTC) and Nsight Compute (`ncu`) on the GPU machine: 98 kernels at W = 1, 4 (147 with
32), 3 launches each; predicted, none over 36 k cycles at W <= 4 (`ld_stride2_b16_w4`: 8 wavefronts
x 4 warps x 1,024 steps), 0.27 M at W = 32.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from validate import ncu

REPS, UNROLL = 64, 16
WORDS = 256                      # 1 KiB of 4-B words: the widest pattern (stride2 of 16 B) ends at byte 1,008
WIDTHS = (4, 8, 16)              # bytes a lane: float (LDS), float2 (LDS.64), float4 (LDS.128)
WARPS = (1, 4)                   # warps a block by default; `--warps 1,4,32` for more
WARPS_ENV = "WIDE_SHARED_WARPS"  # how `measure` tells the worker (run by ncu) its warps
REPEATS = 3
OUT_WORDS = 1024                 # the `out` array: a thread's float, one block of at most 32 warps
PATTERNS = {                     # lane -> element (module docstring)
    "bcast": lambda l: 0,
    "half_bcast": lambda l: l // 16,
    "quarter": lambda l: l // 8,
    "pairs": lambda l: l // 2,
    "seq": lambda l: l,
    "stride2": lambda l: 2 * l,
    "seq_half_swapped": lambda l: l ^ 16,
    "seq_interleaved": lambda l: (l % 4) * 8 + l // 4,
}
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "smsp__inst_executed.sum",
           "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")

SOURCE = r"""
#define UNROLL 16
#define ACC 8
#define WORDS 256

// One volatile shared access of 4, 8 or 16 bytes at shared address a: kept, never merged or narrowed.
template <int B> __device__ __forceinline__ float lds(unsigned a);
template <> __device__ __forceinline__ float lds<4>(unsigned a) {
    float x; asm volatile("ld.volatile.shared.f32 %0, [%1];" : "=f"(x) : "r"(a)); return x; }
template <> __device__ __forceinline__ float lds<8>(unsigned a) {
    float x, y; asm volatile("ld.volatile.shared.v2.f32 {%0, %1}, [%2];" : "=f"(x), "=f"(y) : "r"(a)); return x; }
template <> __device__ __forceinline__ float lds<16>(unsigned a) {
    float x, y, z, w;
    asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(x), "=f"(y), "=f"(z), "=f"(w) : "r"(a));
    return x; }
template <int B> __device__ __forceinline__ void sts(unsigned a, float v);
template <> __device__ __forceinline__ void sts<4>(unsigned a, float v) {
    asm volatile("st.volatile.shared.f32 [%0], %1;" :: "r"(a), "f"(v)); }
template <> __device__ __forceinline__ void sts<8>(unsigned a, float v) {
    asm volatile("st.volatile.shared.v2.f32 [%0], {%1, %1};" :: "r"(a), "f"(v)); }
template <> __device__ __forceinline__ void sts<16>(unsigned a, float v) {
    asm volatile("st.volatile.shared.v4.f32 [%0], {%1, %1, %1, %1};" :: "r"(a), "f"(v)); }

// Word i holds i (x[0] is 1.0f: not folded); the lane's element of the pattern `which`.
__device__ __forceinline__ int setup(float *s, const float *x, const int *pat, int which) {
    for (int i = threadIdx.x; i < WORDS; i += blockDim.x) s[i] = i * x[0];
    __syncthreads();
    return pat[which * 32 + (threadIdx.x & 31)];
}
// Loads: UNROLL independent loads an iteration, their x summed into ACC accumulators (2 FADDs in a row each).
template <int B> __device__ void ld(const float *x, const int *pat, float *out, int reps, int which) {
    __shared__ __align__(16) float s[WORDS];
    unsigned a = (unsigned)__cvta_generic_to_shared(s + setup(s, x, pat, which) * (B / 4));
    float acc[ACC];
#pragma unroll
    for (int u = 0; u < ACC; u++) acc[u] = 0.0f;
    for (int r = 0; r < reps; r++) {
#pragma unroll
        for (int u = 0; u < UNROLL; u++) acc[u % ACC] += lds<B>(a);
    }
    float t = 0.0f;
#pragma unroll
    for (int u = 0; u < ACC; u++) t += acc[u];
    out[threadIdx.x] = t;
}
// Stores: UNROLL volatile stores of r (every component) an iteration; the lane's element read back.
template <int B> __device__ void st(const float *x, const int *pat, float *out, int reps, int which) {
    __shared__ __align__(16) float s[WORDS];
    int e = setup(s, x, pat, which) * (B / 4);
    unsigned a = (unsigned)__cvta_generic_to_shared(s + e);
    for (int r = 0; r < reps; r++) {
#pragma unroll
        for (int u = 0; u < UNROLL; u++) sts<B>(a, (float)r);
    }
    __syncthreads();
    out[threadIdx.x] = s[e];
}
// 1,024 threads a block at most, so at most 64 registers a thread (8 accumulators: 64 without spills).
#define KERNELS(B) \
extern "C" __global__ void __launch_bounds__(1024) ld_b##B(const float *x, const int *pat, float *out, int reps, \
                                                          int which) { \
    ld<B>(x, pat, out, reps, which); } \
extern "C" __global__ void __launch_bounds__(1024) st_b##B(const float *x, const int *pat, float *out, int reps, \
                                                          int which) { \
    st<B>(x, pat, out, reps, which); }
KERNELS(4)
KERNELS(8)
KERNELS(16)
"""


def lane_elements(pattern: str) -> np.ndarray:
    """The element each of a warp's 32 lanes accesses (`PATTERNS`)."""
    return np.array([PATTERNS[pattern](l) for l in range(32)], np.int32)


PATTERN_TABLE = np.stack([lane_elements(p) for p in PATTERNS])       # the kernels' `pat`: row `which`


def bank_words(pattern: str, width: int) -> int:
    """The most distinct 4-B words of one bank (of 32) the whole warp touches: the 32-bit rule
    applied to the whole warp (what gpusim counted for wide accesses before this probe)."""
    words = {int(e) * (width // 4) + k for e in lane_elements(pattern) for k in range(width // 4)}
    return max(sum(1 for w in words if w % 32 == b) for b in range(32))


def _case(op: str, pattern: str, width: int, warps: int) -> dict:
    name = f"base_w{warps}" if op == "base" else f"{op}_{pattern}_b{width}_w{warps}"
    return {"case": name, "op": op, "kernel": f"{'st' if op == 'st' else 'ld'}_b{width}", "pattern": pattern,
            "which": list(PATTERNS).index(pattern), "width": width, "warps": warps,
            "reps": 0 if op == "base" else REPS}


def cases(warps=WARPS) -> list[dict]:
    """A base a W, then loads and stores of every pattern and width at each W."""
    return ([_case("base", "seq", 4, w) for w in warps]
            + [_case(op, p, b, w) for w in warps for op in ("ld", "st") for p in PATTERNS for b in WIDTHS])


def warps_chosen(env=os.environ) -> tuple[int, ...]:
    """W of the run: `WIDE_SHARED_WARPS` ("1,4,32") where set, else WARPS."""
    text = env.get(WARPS_ENV, "").strip()
    return tuple(int(w) for w in text.split(",")) if text else WARPS


def expected(c: dict) -> np.ndarray:
    """What a case writes to `out` a thread: a load's sum of x (UNROLL x reps x the element's first
    word), a store's element read back (reps - 1, its last value), the base's 0."""
    words = np.tile(lane_elements(c["pattern"]) * (c["width"] // 4), c["warps"]).astype(np.float32)
    if c["op"] == "st":
        return np.full(words.shape, c["reps"] - 1, np.float32)
    return words * (UNROLL * c["reps"])


def worker() -> list[str]:
    """Launch every case REPEATS times in a row (under ncu); the cases whose output is wrong."""
    import cupy as cp                    # here, not at the top: only running needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    arch = f"--gpu-architecture=sm_{props['major']}{props['minor']}"
    mod = cp.RawModule(code=SOURCE, options=(arch,), backend="nvrtc")
    x = cp.asarray(np.ones(4, np.float32))                 # copied, not filled: no kernel of CuPy's own is profiled
    pat = cp.asarray(PATTERN_TABLE.ravel())
    out = cp.empty(OUT_WORDS, dtype=cp.float32)
    wrong = []
    for c in cases(warps_chosen()):
        for _ in range(REPEATS):
            mod.get_function(c["kernel"])((1,), (32 * c["warps"],),
                                          (x, pat, out, cp.int32(c["reps"]), cp.int32(c["which"])))
        got = cp.asnumpy(out[:32 * c["warps"]])
        if not np.array_equal(got, expected(c)):
            wrong.append(f"{c['case']}: out {got[:4].tolist()}..., expected {expected(c)[:4].tolist()}...")
    cp.cuda.Device().synchronize()
    return wrong


def _machine(ncu_path: str) -> dict:
    """Clocks (nvidia-smi), CUDA runtime, driver, NVRTC and CuPy versions, the version of the ncu at `ncu_path`."""
    def run(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            return f"{cmd[0]}: {e}"
    info = {"clocks": run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem",
                           "--format=csv"]),
            "ncu_version": run([ncu_path, "--version"]).splitlines()[-1:]}
    try:
        import cupy as cp                # here: only the GPU machine has CuPy
        info.update(cupy=cp.__version__, cuda_runtime=cp.cuda.runtime.runtimeGetVersion(),
                    cuda_driver=cp.cuda.runtime.driverGetVersion(), nvrtc=list(cp.cuda.nvrtc.getVersion()))
    except Exception as e:               # provenance only: a missing field, not a lost run
        info["cupy"] = f"unavailable: {e}"
    return info


def measure(out_dir: str, warps=WARPS) -> tuple[Path, list[dict], list[str]]:
    """Profile every case under ncu (the worker sees `warps` through WIDE_SHARED_WARPS); write
    $OUT/wide_shared.json. Returns its path, the rows (with rates) and the problems found."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "wide_shared_ncu.csv"
    os.environ[WARPS_ENV] = ",".join(map(str, warps))
    todo = cases(warps)
    cmd, rc, kernels, metrics = ncu.profile_worker_known("validate.wide_shared_probe", METRICS, log)
    groups, problems = ncu.repeated_cases(kernels, len(todo), REPEATS)
    problems += [ln for ln in rc.stdout.splitlines() if ln.startswith("WRONG OUTPUT")]
    rows = []
    for c, got in zip(todo, groups):
        mid, cyc = ncu.median_cycles(got)
        durs = sorted(k["metrics"].get("gpu__time_duration.sum") or 0 for k in got)
        if any(c["kernel"] not in k["kernel_name"] for k in got):
            problems.append(f"{c['case']}: profiled {[k['kernel_name'][:40] for k in got]}, launched {c['kernel']}")
        rows.append({**c, "kernel_name": got[-1]["kernel_name"] if got else None, "cycles": mid, "cycles_all": cyc,
                     "duration_ns_median": durs[len(durs) // 2] if durs else None, "duration_ns": durs,
                     "metrics": got[-1]["metrics"] if got else {}})
    doc = {"provenance": {"gpu": ncu.gpu_identity(), **_machine(cmd[0]),
                          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                          "command": " ".join(["python -m validate.wide_shared_probe", *sys.argv[1:]]),
                          "ncu": " ".join(cmd[:12]), "metrics": metrics, "reps": REPS, "unroll": UNROLL,
                          "warps": list(warps), "repeats": REPEATS, "method": __doc__.split("\n\n")[0]},
           "ncu_rc": rc.returncode, "ncu_tail": rc.stdout[-1500:], "problems": problems, "kernels": rows}
    path = out / "wide_shared.json"
    path.write_text(json.dumps(doc, indent=1))
    return path, derive(rows), problems


def predict(gpu: str, measured: str | None = None, todo: list[dict] | None = None, warps=None) -> list[dict]:
    """gpusim's cycles and counters of each case (those of the measured file, else of `warps`, unless
    `todo`), with the measured ones beside them (`measured_*`); rates by `derive`."""
    import gpusim                                      # here: the GPU machine's side runs without gpusim's dependencies
    from gpusim.specs.overrides import resolve         # here: as gpusim above
    spec = resolve(gpu)
    doc = json.loads(Path(measured).read_text()) if measured else {}
    meas = {r["case"]: r for r in doc.get("kernels", [])}
    todo = todo or cases(warps or tuple(doc.get("provenance", {}).get("warps") or WARPS))
    x, pat, out = np.ones(4, np.float32), PATTERN_TABLE.ravel().copy(), np.zeros(OUT_WORDS, np.float32)
    rows = []
    for c in todo:
        m = gpusim.launch(gpusim.CudaSource(SOURCE, c["kernel"]), 1, 32 * c["warps"],
                          (x, pat, out, np.int32(c["reps"]), np.int32(c["which"])), gpu=spec,
                          timing=True, outputs=False).metrics
        got = meas.get(c["case"], {})
        rows.append({**c, "cycles": m["sm__cycles_elapsed.max"], "metrics": m,
                     "measured_cycles": got.get("cycles"), "measured_metrics": got.get("metrics", {})})
    return derive(rows)


def _rates(c: dict, cycles: float | None, metrics: dict, base: dict, base_cycles: float | None) -> dict:
    """Wavefronts, bank conflicts and shared instructions a warp instruction of the loop, and cycles
    an instruction a SM, the base kernel's (same W) taken off."""
    n = c["warps"] * c["reps"] * UNROLL
    op = "st" if c["op"] == "st" else "ld"

    def each(name):
        v = metrics.get(name)
        return (v - (base.get(name) or 0)) / n if v is not None and n else None
    return {"wavefronts_per_inst": each(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"),
            "conflicts_per_inst": each(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"),
            "shared_inst_per_step": each(f"smsp__inst_executed_op_shared_{op}.sum"),
            "cycles_per_inst_sm": (cycles - (base_cycles or 0)) / n if cycles and n else None}


def derive(rows: list[dict]) -> list[dict]:
    """Each row with its rates (`_rates`), measured (`measured_*`, or plain for a measured file) and predicted."""
    bases = {r["warps"]: r for r in rows if r["op"] == "base"}
    out = []
    for r in rows:
        b = bases.get(r["warps"]) or (bases[min(bases, key=lambda w: abs(w - r["warps"]))] if bases else {})
        d = dict(r)
        for prefix in ("", "measured_"):
            if prefix + "cycles" in r:
                rates = _rates(r, r.get(prefix + "cycles"), r.get(prefix + "metrics") or {},
                               b.get(prefix + "metrics") or {}, b.get(prefix + "cycles"))
                d.update({prefix + k: v for k, v in rates.items()})
        out.append(d)
    return out


def _fmt(v, width: int = 7, digits: int = 2) -> str:
    return f"{v:{width}.{digits}f}" if isinstance(v, (int, float)) else f"{'-':>{width}}"     # a value, or -


def _sides(rows: list[dict]) -> list[tuple[str, str]]:
    """(label, key prefix) of the sides a table shows: a measured file's rows, or `predict`'s with
    the measured beside where a file was given."""
    if all("measured_cycles" in r for r in rows):
        return [("pred", "")] + ([("meas", "measured_")] if any(r["measured_cycles"] for r in rows) else [])
    return [("meas", "")]


def table(rows: list[dict]) -> str:
    """Per case: the most words of one bank the warp touches (`bank_words`), then wavefronts, bank
    conflicts, cycles a warp instruction a SM and (measured) shared instructions a step, each side
    by side; then `grid`."""
    sides = _sides(rows)
    columns = (("wavefronts_per_inst", "wf/inst"), ("conflicts_per_inst", "conf/inst"),
               ("cycles_per_inst_sm", "cyc/inst/SM"), ("shared_inst_per_step", "inst/step"))
    shown = [(key, label, side, p) for key, label in columns for side, p in sides
             if any(r.get(p + key) is not None for r in rows if r["op"] != "base")]
    lines = [f"{'case':26s} {'words':>6s}" + "".join(f" {label + ' ' + side:>16s}" for _, label, side, _ in shown)]
    for r in rows:
        model = "" if r["op"] == "base" else f"{bank_words(r['pattern'], r['width']):6d}"
        lines.append(f"{r['case']:26s} {model:>6s}" + "".join(f" {_fmt(r.get(p + key), 16)}" for key, _, _, p in shown))
    return "\n".join(lines + [""] + grid(rows))


def grid(rows: list[dict]) -> list[str]:
    """Pattern (rows) x width (columns) for each side, op and W: `wavefronts/cycles` a warp instruction."""
    by = {r["case"]: r for r in rows}
    lines = []
    for side, p in _sides(rows):
        for w in sorted({r["warps"] for r in rows}):
            for op in ("ld", "st"):
                lines.append(f"[{side}] {op}, W = {w}: wavefronts / cycles a SM, a warp instruction")
                lines.append(f"  {'pattern':18s}" + "".join(f" {f'{b} B':>13s}" for b in WIDTHS))
                for pat in PATTERNS:
                    cells = [by.get(f"{op}_{pat}_b{b}_w{w}") or {} for b in WIDTHS]
                    lines.append(f"  {pat:18s}" + "".join(
                        f" {_fmt(c.get(p + 'wavefronts_per_inst'), 5)} /{_fmt(c.get(p + 'cycles_per_inst_sm'), 6, 1)}"
                        for c in cells))
    return lines


def main(argv: list[str]) -> None:
    """The command line (module docstring)."""
    warps = None
    if "--warps" in argv:
        at = argv.index("--warps")
        warps = tuple(int(w) for w in argv[at + 1].split(","))
        argv = argv[:at] + argv[at + 2:]
    rest = [a for a in argv if not a.startswith("-")]
    if "--worker" in argv:
        for line in worker():
            print("WRONG OUTPUT", line)
    elif "--predict" in argv:
        print(table(predict(rest[0], rest[1] if len(rest) > 1 else None, warps=warps)))
    elif rest[:1] == ["table"]:
        print(table(derive(json.loads(Path(rest[1]).read_text())["kernels"])))
    else:
        path, rows, problems = measure(rest[0] if rest else os.environ.get("OUT", "."), warps or WARPS)
        print(table(rows))
        for p in problems:
            print("PROBLEM:", p)
        print(path)


if __name__ == "__main__":
    main(sys.argv[1:])
