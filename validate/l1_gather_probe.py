"""The L1's throughput for loads that hit, by how a warp's lanes spread over lines and banks
(issue 24: `gather_small_table` predicted +29% slow in full simulation, +52% sampled, with its
L1 hits exact). gpusim's L1 stage holds a request one cycle per distinct line (`l1_stage.py`,
from `stride_read/l1_s*`: lanes 128-1024 B apart, 32 lines a request, 32.7 cycles), but in those
strides every lane's word is also in one 4-B bank of the data array. This probe separates the
two: lane l of every warp loads word `pattern(l)` of an L1-resident table (64 KiB, filled by a
first pass), moved each step by a warp-uniform whole number of lines (so neither the lines'
distinctness nor the banks change), 16 independent loads an iteration, summed:

- 32 lines in one bank (`s32`, `s64`: 128 and 256 B between lanes) against 32 lines in 32
  banks (`s33`, `s65`, `s513`: 132, 260 and 2,052 B) and in 16 / 4 banks (`s34`, `s40`):
  one cycle a line, or one wavefront a bank conflict;
- 2, 4, 8, 16 lines each holding a different share of the 32 banks (`l2` .. `l16`);
- a coalesced line (`coal`), one word for all (`bcast`), 8 lines of 4 sectors each in
  4 banks (`s8`), and random words of 16 KiB and 64 KiB (`rand16k`, `rand64k`: the held-out
  gather's shape).

One block of 32 warps a SM (the grid is the SM count), REPS x UNROLL loads a warp; `base` is
the kernel without the loop, subtracted. Timed by Nsight as `validate measure` does (median of
3). gpusim runs the same kernels (`--predict`).

    python -m validate.l1_gather_probe $OUT       # on a GPU machine: $OUT/l1_gather.json
    python -m validate.l1_gather_probe --predict h100 [$OUT/l1_gather.json]
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from validate import ncu

REPS, UNROLL, WARPS = 64, 16, 32
TABLE_WORDS = 16384                   # 64 KiB: L1-resident after the first pass
REPEATS = 3
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "smsp__inst_executed.sum",
           "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
           "l1tex__data_pipe_lsu_wavefronts.sum", "l1tex__data_bank_conflicts_pipe_lsu.sum",
           "l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum", "lts__t_sectors_op_read.sum")

SOURCE = r"""
#define UNROLL 16
// Lane l loads word pat[l] of the table, moved by a warp-uniform whole number of lines each step.
extern "C" __global__ void gather(const int *table, int *out, const int *pat, int reps, int mask) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int p = pat[lane];
    int acc = 0;
    for (int i = threadIdx.x; i <= mask; i += blockDim.x) acc += table[i];      // the first pass: fill the L1
    __syncthreads();
    for (int r = 0; r < reps; r++) {
#pragma unroll
        for (int u = 0; u < UNROLL; u++) acc += table[(p + 32 * (u * 7 + r * 13 + warp * 5)) & mask];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
"""


def patterns() -> dict[str, list[int]]:
    """Lane -> word of every case (module docstring)."""
    lanes = range(32)
    rng = np.random.default_rng(24)
    pats = {"coal": list(lanes), "bcast": [0] * 32}
    for s in (8, 32, 33, 34, 40, 64, 65, 513):
        pats[f"s{s}"] = [s * l for l in lanes]
    for n in (2, 4, 8, 16):                          # n lines, lanes in order: 32 / n consecutive words each
        pats[f"l{n}"] = [l + 32 * (l // (32 // n)) for l in lanes]
    pats["rand16k"] = [int(v) for v in rng.integers(0, 4096, 32)]
    pats["rand64k"] = [int(v) for v in rng.integers(0, TABLE_WORDS, 32)]
    return pats


PATTERNS = patterns()
CASES = [{"case": "base", "pattern": "coal", "reps": 0}] + [{"case": n, "pattern": n, "reps": REPS} for n in PATTERNS]


def shape(words: list[int]) -> dict:
    """Distinct lines, sectors and words of a pattern, and the most distinct words in one 4-B bank."""
    words = sorted(set(words))
    banks: dict[int, int] = {}
    for w in words:
        banks[w % 32] = banks.get(w % 32, 0) + 1
    return {"lines": len({w // 32 for w in words}), "sectors": len({w // 8 for w in words}),
            "words": len(words), "bank_max": max(banks.values())}


def _args(c: dict, xp):
    table = xp.asarray(np.arange(TABLE_WORDS, dtype=np.int32) & 1)
    pat = xp.asarray(np.array(PATTERNS[c["pattern"]], np.int32))
    return table, pat


def worker() -> None:
    import cupy as cp                    # here, not at the top: only running needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    arch = f"--gpu-architecture=sm_{props['major']}{props['minor']}"
    mod = cp.RawModule(code=SOURCE, options=(arch,), backend="nvrtc")
    out = cp.empty(props["multiProcessorCount"] * 32 * WARPS, dtype=cp.int32)
    for c in CASES:
        table, pat = _args(c, cp)
        for _ in range(REPEATS):
            mod.get_function("gather")((props["multiProcessorCount"],), (32 * WARPS,),
                                       (table, out, pat, cp.int32(c["reps"]), cp.int32(TABLE_WORDS - 1)))
    cp.cuda.Device().synchronize()


def measure(out_dir: str) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "l1_gather_ncu.csv"
    cmd, rc, kernels, metrics = ncu.profile_worker_known("validate.l1_gather_probe", METRICS, log)
    groups, problems = ncu.repeated_cases(kernels, len(CASES), REPEATS)
    rows = []
    for c, got in zip(CASES, groups):
        mid, cyc = ncu.median_cycles(got)
        rows.append({**c, **shape(PATTERNS[c["pattern"]]), "cycles": mid,
                     "cycles_all": cyc, "metrics": got[-1]["metrics"] if got else {}})
    doc = {"provenance": {"gpu": ncu.gpu_identity(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                          "command": "python -m validate.l1_gather_probe $OUT", "ncu": " ".join(cmd[:12]),
                          "metrics": metrics, "reps": REPS, "unroll": UNROLL, "warps": WARPS, "repeats": REPEATS,
                          "method": __doc__.split("\n\n")[0]},
           "ncu_rc": rc.returncode, "ncu_tail": rc.stdout[-1500:], "problems": problems, "kernels": rows}
    path = out / "l1_gather.json"
    path.write_text(json.dumps(doc, indent=1))
    print(table(derive(rows)))
    for p in problems:
        print("PROBLEM:", p)
    return path


def predict(gpu: str, measured: str | None = None) -> list[dict]:
    """gpusim's cycles of each case, with the measured ones beside them from a file `measure` wrote."""
    import gpusim                                      # here: the GPU machine's side runs without gpusim's dependencies
    from gpusim.specs.overrides import resolve         # here: as gpusim above
    spec = resolve(gpu)
    meas = {r["case"]: r for r in json.loads(Path(measured).read_text())["kernels"]} if measured else {}
    out = np.zeros(spec.sm_count * 32 * WARPS, np.int32)
    rows = []
    for c in CASES:
        table, pat = _args(c, np)
        m = gpusim.launch(gpusim.CudaSource(SOURCE, "gather"), spec.sm_count, 32 * WARPS,
                          (table, out, pat, np.int32(c["reps"]), np.int32(TABLE_WORDS - 1)), gpu=spec,
                          timing=True, outputs=False).metrics
        got = meas.get(c["case"], {})
        rows.append({**c, **shape(PATTERNS[c["pattern"]]), "cycles": m["sm__cycles_elapsed.max"], "metrics": m,
                     "measured_cycles": got.get("cycles"), "measured_metrics": got.get("metrics", {})})
    return derive(rows)


def derive(rows: list[dict]) -> list[dict]:
    """Each row with cycles a warp load a SM (the base case taken off), measured and predicted."""
    steps = REPS * UNROLL * WARPS
    base = {key: next((r.get(key) for r in rows if r["case"] == "base"), 0) or 0
            for key in ("cycles", "measured_cycles")}
    out = []
    for r in rows:
        d = dict(r)
        for key in ("cycles", "measured_cycles"):
            if r.get(key) and r["reps"]:
                d[key.replace("cycles", "per_load")] = (r[key] - base[key]) / steps
        out.append(d)
    return out


def table(rows: list[dict]) -> str:
    """Per case: its lines, sectors, most words in a bank, and cycles a warp load a SM."""
    lines = [f"{'case':9s} {'lines':>5s} {'sect':>4s} {'bank':>4s} {'pred':>7s} {'meas':>7s}"]
    for r in rows:
        def f(v):
            return f"{v:7.2f}" if isinstance(v, (int, float)) and not math.isnan(v) else f"{'-':>7s}"
        lines.append(f"{r['case']:9s} {r['lines']:5d} {r['sectors']:4d} {r['bank_max']:4d} "
                     f"{f(r.get('per_load')) if 'measured_cycles' in r else f(None)} "
                     f"{f(r.get('measured_per_load') if 'measured_cycles' in r else r.get('per_load'))}")
    return "\n".join(lines)


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    elif "--predict" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--predict"]
        print(table(predict(rest[0], rest[1] if len(rest) > 1 else None)))
    else:
        print(measure(next((a for a in sys.argv[1:] if not a.startswith("-")), os.environ.get("OUT", "."))))
