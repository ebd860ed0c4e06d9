"""Shared-memory banks under several warps (issue 24): the held-out `scan_blelloch_block` is
predicted 40% fast, yet one warp's dependent 32-way conflicted loads match (97 cycles a step
measured, 96 predicted; `scan_phases_probe`). gpusim's shared data path has one free time (a
k-way conflicted access holds it k wavefronts of a cycle; its result comes
`shared_wavefront_latency_cycles` later per further wavefront) and no state per bank. This probe
times shared accesses with k-way conflicts, k = 1, 2, 8, 32: lane l of warp w reads or writes word
`l % (32/k) + (l / (32/k)) * 32 + w * shift`, i.e. 32/k banks, k words each, from W = 1 to 32
warps of one block, all warps on the SAME banks (shift 0) or each warp on banks of its own (DIFF:
shift 32/k words, warp w on banks w*32/k onwards, mod 32; k = 1 uses every bank: ALL), to tell:

- (a) warps conflicting in one bank are served slower than warps conflicting in different banks:
  same/diff of `cycles_per_inst_sm` at k = 32 (and 8, 2) for W >= 2;
- (b) one shared data path a SM against one a SMSP (warp w issues from SMSP w % 4):
  `cycles_per_inst_sm` of `ld_k32` at W = 1, 2, 4, 8 stays at 32 x (cycles a wavefront) for one a
  SM and falls to 32/min(W, 4) x that for one a SMSP; 4 blocks of 4 warps a SM (`*_4b`; the blocks'
  windows start at multiples of 128 B, so SAME is one physical bank for all 16 warps, DIFF is warp w
  of every block on bank w) against one block of 16 warps tell a per-SM effect from a per-block one;
- (c) stores (`st_*`, volatile: each one kept) against loads (`ld_*`) of the same shape;
- (d) throughput (`ld_*`: 16 independent volatile loads an iteration, summed after) against
  latency (`chain_*`: each address from the value the last load returned, all zeros).

Every warp makes STEPS = REPS x UNROLL shared accesses in the loop; `base_*` (W = 1 and 32) are
the load kernel without the loop (launch, filling the array, one global load and store a thread),
subtracted (the one nearest in warps a SM) before the rates. A case is one block on one SM
(`*_4b`: 4 x SMs blocks, 48 KiB of shared memory each so that exactly 4 fit a SM, which
`sm__ctas_launched.max/min` check), timed by Nsight as `validate measure` does (median of 3). Its
shared wavefronts an instruction of the loop (`wavefronts_per_inst`) are k, so a hoisted or merged
access would show. gpusim runs the same kernels (`predict`); `table` prints the rates measured
and predicted side by side, then the ratios for (a) to (d).

    python -m validate.shared_banks_probe $OUT      # on a GPU machine: $OUT/shared_banks.json
    python -m validate.shared_banks_probe --predict h100 [$OUT/shared_banks.json]

Needs CuPy (NVRTC) and Nsight Compute (`ncu`) on the GPU machine: 40 kernels, 3 launches each,
none over about 3 ms on an H100 (2.1 M cycles predicted for the longest).
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

from validate import ncu

REPS, UNROLL, WORDS = 128, 16, 2048
# Dynamic shared memory a block: the 2,048 words, or for 4 blocks a SM 48 KiB, so that no fifth block fits
# (5 x (48 + 1 reserved) KiB > 228 KiB, the H100's and H200's most a SM) and 4 x SMs blocks land 4 on every SM.
SHARED_BYTES = {1: WORDS * 4, 4: 48 * 1024}
REPEATS = 3
OUT_WORDS = 1 << 20                 # the `out` array: a thread's word, blocks x threads <= 4 x 144 SMs x 1024
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "smsp__inst_executed.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
           "sm__ctas_launched.max", "sm__ctas_launched.min")       # the last two: were *_4b 4 blocks on every SM?

SOURCE = r"""
#define WORDS 2048
#define UNROLL 16

// Lane l of warp w: word l % g + (l / g) * 32 + w * shift, g = 32 / k banks (k words each: k-way).
__device__ __forceinline__ volatile int *lane_word(int *s, int k, int shift) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = 32 / k;
    return s + lane % g + (lane / g) * 32 + warp * shift;
}
// Zeros the compiler cannot see (x[0] is 1.0f), so no access is folded; one global load a thread.
__device__ __forceinline__ int fill(int *s, const float *x) {
    int z = (int)x[0] - 1;
    for (int i = threadIdx.x; i < WORDS; i += blockDim.x) s[i] = z;
    __syncthreads();
    return z;
}
// Independent loads: UNROLL volatile loads an iteration (each one kept, in order), summed.
extern "C" __global__ void ld_indep(const float *x, int *out, int reps, int k, int shift) {
    extern __shared__ int s[];
    int acc = fill(s, x);
    volatile int *p = lane_word(s, k, shift);
    for (int r = 0; r < reps; r++) {
#pragma unroll
        for (int u = 0; u < UNROLL; u++) acc += *p;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
// Stores: UNROLL volatile stores an iteration, read back once at the end.
extern "C" __global__ void st_indep(const float *x, int *out, int reps, int k, int shift) {
    extern __shared__ int s[];
    fill(s, x);
    volatile int *p = lane_word(s, k, shift);
    for (int r = 0; r < reps; r++) {
#pragma unroll
        for (int u = 0; u < UNROLL; u++) *p = r;
    }
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = s[threadIdx.x];
}
// Dependent loads: each address from the value the last load returned (all zeros).
extern "C" __global__ void ld_chain(const float *x, int *out, int reps, int k, int shift) {
    extern __shared__ int s[];
    int v = fill(s, x);
    volatile int *p = lane_word(s, k, shift);
    for (int r = 0; r < reps; r++) {
#pragma unroll
        for (int u = 0; u < UNROLL; u++) v = p[v];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
"""
KERNELS = {"ld": "ld_indep", "st": "st_indep", "chain": "ld_chain", "base": "ld_indep"}


def _case(op: str, k: int, warps: int, banks: str, blocks_per_sm: int = 1) -> dict:
    name = f"{op}_k{k}_w{warps}_{banks}" + ("_4b" if blocks_per_sm == 4 else "")
    shift = 32 // k if banks == "diff" else 0
    return {"case": name, "op": op, "kernel": KERNELS[op], "k": k, "warps": warps, "banks": banks,
            "shift": shift, "blocks_per_sm": blocks_per_sm, "reps": 0 if op == "base" else REPS}


def _cases() -> list[dict]:
    """40 kernels: W x k x banks for loads, fewer for stores, chains and 4 blocks a SM, 2 baselines."""
    out = [_case("base", 1, 1, "all"), _case("base", 1, 32, "all")]
    for op, ks in (("ld", {32: (1, 2, 4, 8, 16, 32), 8: (4, 16), 2: (4, 16), 1: (1, 32)}),
                   ("st", {32: (1, 4, 16, 32), 1: (32,)}), ("chain", {32: (1, 4, 16)})):
        for k, ws in ks.items():
            for w in ws:
                out += ([_case(op, k, w, "all")] if k == 1 else [_case(op, k, w, "same")] if w == 1
                        else [_case(op, k, w, "same"), _case(op, k, w, "diff")])
    out += [_case("ld", 32, 4, "same", 4), _case("ld", 32, 4, "diff", 4), _case("st", 32, 4, "same", 4),
            _case("chain", 32, 4, "same", 4)]
    return out


CASES = _cases()


def _blocks(case: dict, sm_count: int) -> int:
    return 1 if case["blocks_per_sm"] == 1 else case["blocks_per_sm"] * sm_count


def _grid_x(grid: str) -> int | None:
    """Blocks of ncu's "Grid Size" column, "(528, 1, 1)" -> 528."""
    nums = [int(n) for n in re.findall(r"\d+", grid or "")]
    return math.prod(nums) if nums else None


def worker() -> None:
    import cupy as cp                    # here, not at the top: only running needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    arch = f"--gpu-architecture=sm_{props['major']}{props['minor']}"
    mod = cp.RawModule(code=SOURCE, options=(arch,), backend="nvrtc")
    x = cp.asarray(np.ones(WORDS, np.float32))            # copied, not filled: no kernel of CuPy's own is profiled
    out = cp.empty(OUT_WORDS, dtype=cp.int32)
    for c in CASES:
        for _ in range(REPEATS):
            mod.get_function(c["kernel"])((_blocks(c, props["multiProcessorCount"]),), (32 * c["warps"],),
                                          (x, out, cp.int32(c["reps"]), cp.int32(c["k"]), cp.int32(c["shift"])),
                                          shared_mem=SHARED_BYTES[c["blocks_per_sm"]])
    cp.cuda.Device().synchronize()


def measure(out_dir: str) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "shared_banks_ncu.csv"
    cmd, rc, kernels, metrics = ncu.profile_worker_known("validate.shared_banks_probe", METRICS, log)
    rows = []
    groups, problems = ncu.repeated_cases(kernels, len(CASES), REPEATS)
    for c, got in zip(CASES, groups):
        mid, cyc = ncu.median_cycles(got)
        durs = sorted(k["metrics"].get("gpu__time_duration.sum") or 0 for k in got)
        if any(c["kernel"] not in k["kernel_name"] for k in got):
            problems.append(f"{c['case']}: profiled {[k['kernel_name'][:40] for k in got]}, launched {c['kernel']}")
        rows.append({**c, "kernel_name": got[-1]["kernel_name"] if got else None,
                     "blocks": _grid_x(got[-1]["grid"]) if got else None,
                     "cycles": mid, "cycles_all": cyc,
                     "duration_ns_median": durs[len(durs) // 2] if durs else None, "duration_ns": durs,
                     "metrics": got[-1]["metrics"] if got else {}})
    doc = {"provenance": {"gpu": ncu.gpu_identity(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                          "command": "python -m validate.shared_banks_probe $OUT", "ncu": " ".join(cmd[:12]),
                          "metrics": metrics, "reps": REPS, "unroll": UNROLL, "repeats": REPEATS,
                          "method": __doc__.split("\n\n")[0]},
           "ncu_rc": rc.returncode, "ncu_tail": rc.stdout[-1500:], "problems": problems, "kernels": rows}
    path = out / "shared_banks.json"
    path.write_text(json.dumps(doc, indent=1))
    print(table(derive(rows)))
    for p in problems:
        print("PROBLEM:", p)
    return path


def predict(gpu: str, measured: str | None = None, cases: list[dict] | None = None) -> list[dict]:
    """gpusim's cycles and counters of each case (all of CASES unless `cases`), with the measured
    ones beside them (`measured_*`) from a file `measure` wrote; rates by `derive`."""
    import gpusim                                      # here: the GPU machine's side runs without gpusim's dependencies
    from gpusim.specs.overrides import resolve         # here: as gpusim above
    spec = resolve(gpu)
    meas = {r["case"]: r for r in json.loads(Path(measured).read_text())["kernels"]} if measured else {}
    x = np.ones(WORDS, np.float32)
    out = np.zeros(OUT_WORDS, np.int32)
    rows = []
    for c in cases or CASES:
        m = gpusim.launch(gpusim.CudaSource(SOURCE, c["kernel"]), _blocks(c, spec.sm_count), 32 * c["warps"],
                          (x, out, np.int32(c["reps"]), np.int32(c["k"]), np.int32(c["shift"])), gpu=spec,
                          shared_bytes=SHARED_BYTES[c["blocks_per_sm"]], timing=True, outputs=False).metrics
        got = meas.get(c["case"], {})
        rows.append({**c, "blocks": _blocks(c, spec.sm_count), "cycles": m["sm__cycles_elapsed.max"], "metrics": m,
                     "measured_blocks": got.get("blocks"), "measured_cycles": got.get("cycles"),
                     "measured_metrics": got.get("metrics", {})})
    return derive(rows)


def _rates(c: dict, cycles: float | None, base: float, metrics: dict, blocks: int | None) -> dict:
    """Cycles a warp instruction a SM and a SMSP (the baseline taken off), and shared wavefronts a
    warp instruction of the loop (over the launch's `blocks`)."""
    steps = c["reps"] * UNROLL
    per_sm = c["warps"] * c["blocks_per_sm"]
    if not cycles or not steps:
        return {"cycles_per_inst_sm": None, "cycles_per_inst_smsp": None, "wavefronts_per_inst": None}
    wf = metrics.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_%s.sum" % ("st" if c["op"] == "st" else "ld"))
    return {"cycles_per_inst_sm": (cycles - base) / (per_sm * steps),
            "cycles_per_inst_smsp": (cycles - base) / (math.ceil(per_sm / 4) * steps),
            "wavefronts_per_inst": wf / (blocks * c["warps"] * steps) if wf is not None and blocks else None}


def derive(rows: list[dict]) -> list[dict]:
    """Each row with its rates (`_rates`), measured (`measured_*` / plain for a measured file) and predicted."""
    def base_of(r, key):
        bases = {b["warps"]: b.get(key) or 0 for b in rows if b["op"] == "base"}
        if not bases:
            return 0.0
        w = r["warps"] * r["blocks_per_sm"]
        return bases[min(bases, key=lambda b: abs(math.log2(b) - math.log2(w)))]
    out = []
    for r in rows:
        d = dict(r)
        for prefix, key, mkey in (("", "cycles", "metrics"), ("measured_", "measured_cycles", "measured_metrics")):
            if key in r:
                rates = _rates(r, r.get(key), base_of(r, key), r.get(mkey) or {}, r.get(prefix + "blocks"))
                for name, v in rates.items():
                    d[prefix + name] = v
        out.append(d)
    return out


def _fmt(v, width: int = 7) -> str:
    return f"{v:{width}.1f}" if isinstance(v, (int, float)) else f"{'-':>{width}}"     # a value, or - where none


def table(rows: list[dict]) -> str:
    """Per case: cycles, cycles a warp instruction a SM and a SMSP, wavefronts an instruction (rows of
    `predict`: their own values as `pred`, `measured_*` as `meas` where a file was given; rows of
    `measure`: as `meas`); then the ratios that test hypotheses (a) to (d) of the module docstring."""
    if all("measured_cycles" in r for r in rows):            # from `predict`: measured beside where given
        sides = [("pred", "")] + ([("meas", "measured_")] if any(r["measured_cycles"] for r in rows) else [])
    else:
        sides = [("meas", "")]
    columns = (("cycles", "cycles", 16), ("cycles_per_inst_sm", "cyc/inst/SM", 16),
               ("cycles_per_inst_smsp", "cyc/inst/SMSP", 18), ("wavefronts_per_inst", "wf/inst", 12))
    lines = [f"{'case':22s}" + "".join(f" {label + ' ' + side:>{w}s}" for _, label, w in columns for side, _ in sides)]
    for r in rows:
        lines.append(f"{r['case']:22s}" + "".join(f" {_fmt(r.get(p + key), w)}" for key, _, w in columns
                                                 for _, p in sides))
    for side, p in sides:
        lines += _ratios(rows, side, p)
    return "\n".join(lines)


def _ratios(rows: list[dict], side: str, p: str) -> list[str]:
    """The lines of (a) to (d) for one side (`p`: the keys' prefix) of `table`."""
    by = {r["case"]: r for r in rows}

    def val(case: str, key: str = "cycles_per_inst_sm"):
        return (by.get(case) or {}).get(p + key)

    def ratio(a: str, b: str) -> str:
        return f"{val(a) / val(b):5.2f}" if val(a) and val(b) else "  -  "
    lines = [f"\n[{side}] (a) same/diff banks, cycles a warp instruction a SM:"]
    for op, k in (("ld", 32), ("st", 32), ("ld", 8), ("ld", 2), ("chain", 32)):
        ws = [r["warps"] for r in rows
              if r["op"] == op and r["k"] == k and r["banks"] == "diff" and r["blocks_per_sm"] == 1]
        lines.append(f"  {op}_k{k}: " + ", ".join(f"W{w} {ratio(f'{op}_k{k}_w{w}_same', f'{op}_k{k}_w{w}_diff')}"
                                                  for w in ws))
    lines.append(f"[{side}] (b) ld_k32, cycles a warp instruction a SM / a SMSP (one path a SM: 32 x cycles a "
                 "wavefront at every W; one a SMSP: that a SMSP):")
    lines.append("  " + ", ".join(f"W{w} {_fmt(val(c), 5)} / {_fmt(val(c, 'cycles_per_inst_smsp'), 5)}"
                                  for w, c in ((1, "ld_k32_w1_same"),
                                               *((w, f"ld_k32_w{w}_diff") for w in (2, 4, 8, 16, 32)))))
    quads = ("ld_k32_w4_same", "ld_k32_w4_diff", "st_k32_w4_same", "chain_k32_w4_same")
    lines.append("  4 blocks x 4 warps / 1 block x 16 warps a SM: "
                 + ", ".join(f"{c} {ratio(c + '_4b', c.replace('w4', 'w16'))}" for c in quads))
    ctas = [(r["case"], (r.get(p + "metrics") or {}).get("sm__ctas_launched.max"),
             (r.get(p + "metrics") or {}).get("sm__ctas_launched.min")) for r in rows if r["blocks_per_sm"] == 4]
    if any(hi is not None for _, hi, _ in ctas):
        lines.append("  blocks a SM, most / fewest (4 wanted): "
                     + ", ".join(f"{c} {_fmt(hi, 1)} / {_fmt(lo, 1)}" for c, hi, lo in ctas))
    pairs = [(r["case"], r["case"].replace("st_", "ld_", 1)) for r in rows if r["op"] == "st"]
    lines.append(f"[{side}] (c) st/ld: " + ", ".join(f"{a[3:]} {ratio(a, b)}" for a, b in pairs if b in by))
    pairs = [(r["case"], r["case"].replace("chain_", "ld_", 1)) for r in rows if r["op"] == "chain"]
    lines.append(f"[{side}] (d) chain/ld (latency/throughput): "
                 + ", ".join(f"{a[6:]} {ratio(a, b)}" for a, b in pairs if b in by))
    return lines


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    elif "--predict" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--predict"]
        print(table(predict(rest[0], rest[1] if len(rest) > 1 else None)))
    else:
        print(measure(next((a for a in sys.argv[1:] if not a.startswith("-")), os.environ.get("OUT", "."))))
