"""A DRAM load's latency under a copy's traffic: warps chasing lines, 1 to 64 a SM, reading or copying (issue 24)

Why: held-out `matrix_copy2d` and the 2-D stencils are predicted 17-25% fast on the H200 with their bytes
matched, and `validate.tile_copy_probe` (data/measurements/tile_copy_h200.json) shows where: a copy of one
word a thread, blocks of 256 x 1, takes 103 us on the H200 and 90 in gpusim, while reading alone (83 / 81 us)
and writing alone (82 / 81) agree, both set by the SMs' block dispatch (a block every ~165 cycles a SM).
Warp 0 of the copy's blocks waits 1,019 cycles (median, its SM's clock) for its load, where an unloaded
DRAM load takes about 673 (an L2 hit's 269 cycles and the chase-measured 204 ns). So the GPU's loads wait
longer under a copy's traffic than gpusim's. `validate.loaded_latency_probe` (section 23) found the model's
DRAM latency right under read streams; this probe asks the same with writes in the traffic, and in a form
gpusim runs whole (the kernel's time, not clock stamps, gives the latency).

The probe: one block a SM (132 on an H100 or H200) of W warps, W = 1 to 64 warps a SM; each warp walks
`STEPS` lines of 128 B of a 512 MiB table, each line's address read from the one before (every lane loads
its word of the line, so a step is one 128-B request, and the next waits for it). `random`: the lines of
one random cycle through the table, each warp its own stretch of it (every step a DRAM row miss, as far as
addresses go); `stream`: each warp its own run of consecutive lines (a row's lines one after another, as a
copy's). With `write` 1, each step also stores the line it read to a second table at the same place (a
copy's traffic: a store that misses the L2 and a write-back for every line read); with `write` 2, to one of
the warp's own 8 lines of it in turn (the same stores, into lines that stay in the L2: no write-backs).
`chase_split`: the odd warps copy (`write` 1) and the even ones only read, or (`write` 2) the warps of the
odd blocks copy, one block a SM, so that the reading warps have SMs of their own; each warp times its own
steps by its SM's clock. `store_beside`: the odd warps
only store, a line every `gap` cycles, new lines (missing the L2; `hit` 2: a line's first 32-B sector only;
`hit` 3: one sector a store, a new line's four in turn) or their own 8 (hitting), beside the even warps' chase (`l2` order: of lines the L2 holds). `prefill` cases read only, after 48 MiB were written (`dirty`: the reads' first
victims are written back) or read (`clean`) once the table was evicted. The kernel's time over `STEPS` is
the latency of a step at that traffic (bytes a second follow); timed with CUDA events, the median of
`REPEATS` after a warm-up, each launch after a 256 MiB read that evicts the table's lines from the L2.

    python -m validate.copy_latency_probe --out $OUT/copy_latency_h200.json      # GPU machine, a minute
    python -m validate.copy_latency_probe --predict h200 --json benchmarks/results/copy_latency_check_h200.json
"""
from __future__ import annotations

from validate.probe_cli import gpu_provenance, nvrtc_module, probe_main, write_probe

LINES = 1 << 22                     # 512 MiB of 128-B lines
STEPS = 256
WARPS = (1, 2, 4, 8, 16, 32, 64)
ORDERS = ("random", "stream")
REPEATS = 3
SEED = 7
EVICT_BYTES = 256 << 20
STORE_GAPS = (0, 4000, 2000, 1000, 500, 250)   # `store_beside`: SM cycles between a storing warp's stores (0: none)
STORE_BUDGET = 230_000              # `store_beside`: SM cycles the storing warps keep storing (the readers' run)
PREFILL_BYTES = 48 << 20          # `prefill`: written (dirty) or read (clean) before the launch, most of the L2
L2_LINES = 1 << 13                  # `l2` order: a 1 MiB cycle, L2-resident after the warm-up launch
VARIANTS = ("chase_one_cg", "chase_one", "chase_cg", "chase")     # at one warp a SM, reading, `random` and `l2`

MAX_WARPS = 132 * 64                # `chase_split`: its per-warp clock array

SOURCE = r"""
#define MAX_WARPS %(max_warps)d
// step: lane reads word `lane` of line `l` (every word of a line holds the next line's index); LANES 1: lane 0
// alone (a 4-B request); CG: `ld.global.cg` (not cached in the L1) instead of a plain load
template <int LANES, int CG>
__device__ __forceinline__ void chase_t(const unsigned *next, unsigned *copy, const unsigned *start, int steps,
                                        int write) {
    unsigned w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31u;
    if (lane >= LANES) return;
    unsigned l = start[w];
    for (int s = 0; s < steps; s++) {
        const unsigned *p = next + ((size_t)l * 32u + lane);
        unsigned v = CG ? __ldcg(p) : *p;
        if (write == 1) copy[(size_t)l * 32u + lane] = v;
        else if (write == 2) copy[((size_t)w * 8u + (s & 7)) * 32u + lane] = v;    // the warp's own 8 lines
        l = v;
    }
    if (l == 0xffffffffu) copy[0] = l;          // never: keeps the chain
}
extern "C" __global__ void chase(const unsigned *n, unsigned *c, const unsigned *s, int k, int w) { chase_t<32, 0>(n, c, s, k, w); }
// the odd warps copy (`odd_write` 1; 2: the warps of odd blocks, other SMs than the even blocks') and the others
// only read; each warp's SM cycles over its steps
__device__ unsigned long long g_cycles[MAX_WARPS];
extern "C" __global__ void chase_split(const unsigned *next, unsigned *copy, const unsigned *start, int steps,
                                       int odd_write) {
    unsigned w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31u;
    int writes = odd_write == 1 ? (int)(w & 1u) : odd_write == 2 ? (int)(blockIdx.x & 1u) : 0;
    unsigned long long c0 = clock64();
    unsigned l = start[w];
    for (int s = 0; s < steps; s++) {
        unsigned v = next[(size_t)l * 32u + lane];
        if (writes) copy[(size_t)l * 32u + lane] = v;
        l = v;
    }
    if (l == 0xffffffffu) copy[0] = l;          // never: the clock below waits for the last load
    unsigned long long c1 = clock64();
    if (lane == 0) g_cycles[w] = c1 - c0;
}
extern "C" __global__ void chase_cg(const unsigned *n, unsigned *c, const unsigned *s, int k, int w) { chase_t<32, 1>(n, c, s, k, w); }
extern "C" __global__ void chase_one(const unsigned *n, unsigned *c, const unsigned *s, int k, int w) { chase_t<1, 0>(n, c, s, k, w); }
extern "C" __global__ void chase_one_cg(const unsigned *n, unsigned *c, const unsigned *s, int k, int w) { chase_t<1, 1>(n, c, s, k, w); }
// the odd warps only store, one 128-B line every `gap` SM cycles for `budget` cycles (`hit` 1: into their own 8
// lines, which stay in the L2; else a new line each time, which misses; `hit` 2: its first 32-B sector only;
// `hit` 3: one sector a store, a new line's 4 in turn: one store in 4 finds no line, 3 find the line but not the sector),
// counting their stores; the even warps
// chase as `chase_split`'s, timing their steps
__device__ unsigned long long g_stores[MAX_WARPS];
extern "C" __global__ void store_beside(const unsigned *next, unsigned *copy, const unsigned *start, int steps,
                                        int gap, int hit, long long budget) {
    unsigned w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31u;
    unsigned long long c0 = clock64();
    if (w & 1u) {
        unsigned long long n = 0, t = c0;
        if (gap > 0)
            while ((long long)(clock64() - c0) < budget) {
                unsigned m = hit == 3 ? (unsigned)(n >> 2) : (unsigned)n;   // 3: a line's 4 sectors in turn
                unsigned line = hit == 1 ? w * 8u + (unsigned)(n & 7u) : (w * 2654435761u + m * 40503u) %% %(lines)du;
                if (hit < 2 || (hit == 2 && lane < 8u) || (hit == 3 && lane >> 3 == (unsigned)(n & 3u)))
                    copy[(size_t)line * 32u + lane] = (unsigned)n;
                n++;
                t += gap;
                while (clock64() < t) { }
            }
        if (lane == 0) g_stores[w] = n;
        return;
    }
    unsigned l = start[w];
    for (int s = 0; s < steps; s++) l = next[(size_t)l * 32u + lane];
    if (l == 0xffffffffu) copy[0] = l;
    unsigned long long c1 = clock64();
    if (lane == 0) g_cycles[w] = c1 - c0;
}
""" % {"max_warps": MAX_WARPS, "lines": LINES}


def tables(np, order: str, warps_total: int):
    """(next, start): the table of next-line indices (every word of line l holds next(l)) and each warp's first
    line. `random`: one random cycle over every line, warp w starting at an even share of it (`l2`: over the first
    `L2_LINES` lines only, which stay in the L2 from launch to launch; `half`: over the first half, 256 MiB);
    `stream`: the
    lines in order, warp w from line w * LINES / warps_total (each warp's steps stay in its own run)."""
    if order in ("random", "half", "l2"):
        span = {"random": LINES, "half": LINES // 2, "l2": L2_LINES}[order]
        perm = np.random.default_rng(SEED).permutation(span).astype(np.uint32)
        nxt = np.zeros(LINES, np.uint32)
        nxt[perm] = np.roll(perm, -1)
        start = perm[(np.arange(warps_total) * (span // warps_total)).astype(np.int64)]
    else:
        nxt = ((np.arange(LINES, dtype=np.int64) + 1) % LINES).astype(np.uint32)
        start = (np.arange(warps_total, dtype=np.int64) * (LINES // warps_total)).astype(np.uint32)
    return nxt, start.astype(np.uint32)


def launch_shape(case: dict) -> tuple[tuple, tuple]:
    """(grid, block): W warps a SM as one block of W warps, or W / 32 blocks of 32 (a block has at most 1,024
    threads); warp ids follow blockIdx, so each warp has its own start either way."""
    w = case["warps_per_sm"]
    return (case["blocks"] * max(1, w // 32),), (32 * min(w, 32),)


def cases(sms: int) -> list[dict]:
    return ([{"kernel": "chase", "order": o, "write": wr, "warps_per_sm": w, "blocks": sms}
             for o in ORDERS for wr in (0, 1) for w in WARPS]
            + [{"kernel": "chase", "order": "random", "write": 2, "warps_per_sm": w, "blocks": sms} for w in WARPS]
            + [{"kernel": k, "order": o, "write": 0, "warps_per_sm": 1, "blocks": sms}
               for o in ("random", "l2") for k in VARIANTS]
            + [{"kernel": "chase_one_cg", "order": o, "write": 0, "warps_per_sm": 1, "blocks": b}
               for o in ("random", "half") for b in (1, 2, 16)]
            + [{"kernel": "chase", "order": "random", "write": 0, "warps_per_sm": w, "blocks": sms, "prefill": p}
               for p in ("clean", "dirty") for w in (16, 32)]
            + [{"kernel": "chase_split", "order": "random", "write": wr, "warps_per_sm": w, "blocks": sms}
               for wr in (0, 1) for w in (16, 32, 64)]
            + [{"kernel": "chase_split", "order": "random", "write": 2, "warps_per_sm": w, "blocks": sms}
               for w in (16, 32)]
            + [{"kernel": "store_beside", "order": "random", "write": 0, "warps_per_sm": 32, "blocks": sms,
                "gap": g, "hit": h} for h in (0, 1, 2, 3) for g in STORE_GAPS]
            + [{"kernel": "store_beside", "order": "l2", "write": 0, "warps_per_sm": 32, "blocks": sms,
                "gap": g, "hit": 0} for g in STORE_GAPS])


def run(out_path: str):
    import numpy as np                   # here: numpy on the GPU machine, as CuPy
    cp, props, mod = nvrtc_module(SOURCE)
    sms = props["multiProcessorCount"]
    copy = cp.zeros(LINES * 32, cp.uint32)
    evict = cp.ones(EVICT_BYTES // 4, cp.float32)
    prefill = cp.ones(PREFILL_BYTES // 4, cp.float32)
    rows, built = [], {}
    for case in cases(sms):
        total = case["blocks"] * case["warps_per_sm"]
        key = (case["order"], total)
        if key not in built:
            built.clear()
            nxt, start = tables(np, case["order"], total)
            built[key] = (cp.asarray(np.repeat(nxt, 32)), cp.asarray(start))
        nxt_d, start_d = built[key]
        args = (nxt_d, copy, start_d, np.int32(STEPS), np.int32(case["write"]))
        if case["kernel"] == "store_beside":
            args = (nxt_d, copy, start_d, np.int32(STEPS), np.int32(case["gap"]), np.int32(case["hit"]),
                    np.int64(STORE_BUDGET))
        grid, block = launch_shape(case)
        fn = mod.get_function(case["kernel"])
        times = []
        for _ in range(REPEATS + 1):          # the first a warm-up; each after an eviction (the lines come from DRAM)
            if case["order"] != "l2":
                float(evict.sum())
            if case.get("prefill") == "dirty":          # the L2 full of written lines: the reads' victims are dirty
                prefill.fill(1.0)
            elif case.get("prefill") == "clean":        # the same lines read: clean victims
                float(prefill.sum())
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            fn(grid, block, args)
            b.record()
            b.synchronize()
            times.append(cp.cuda.get_elapsed_time(a, b) * 1e3)
        times = times[1:]
        us = sorted(times)[len(times) // 2]
        row = {**case, "us": us, "us_all": times, **_derived(us, total, case["write"], props["clockRate"] * 1e3)}
        if case["kernel"] in ("chase_split", "store_beside"):   # one more launch: each warp's own clock (and stores)
            if case["order"] != "l2":
                float(evict.sum())
            fn(grid, block, args)
            cp.cuda.Device().synchronize()
            cyc = _per_warp(cp, mod, "g_cycles", total) / STEPS
            if case["kernel"] == "chase_split":
                group = np.arange(total) // (block[0] // 32 if case["write"] == 2 else 1)   # its block, or itself
                odd = (group & 1) == 1
                row["even_step_cycles"], row["odd_step_cycles"] = float(cyc[~odd].mean()), float(cyc[odd].mean())
            else:                                        # the readers' cycles a step, the storers' bytes a second
                row["even_step_cycles"] = float(cyc[0::2].mean())
                seconds = STORE_BUDGET / (props["clockRate"] * 1e3)
                line_bytes = 32 if case["hit"] >= 2 else 128
                row["store_TBps"] = float(_per_warp(cp, mod, "g_stores", total)[1::2].sum() * line_bytes / seconds / 1e12)
        rows.append(row)
        _print(row)
        if "store_TBps" in row:
            print(f"    readers {row['even_step_cycles']:.0f} cycles a step beside {row['store_TBps']:.2f} TB/s of stores")
        elif "even_step_cycles" in row:
            print(f"    even (reading) warps {row['even_step_cycles']:.0f}, odd warps {row['odd_step_cycles']:.0f} cycles a step")
    prov = gpu_provenance(cp, "python -m validate.copy_latency_probe --out $OUT/copy_latency_<gpu>.json", __doc__,
                          sms=sms, lines=LINES, steps=STEPS, repeats=REPEATS, clock_khz=props["clockRate"])
    return write_probe(out_path, prov, rows)


def _per_warp(cp, mod, name: str, warps: int):
    """The first `warps` entries of the module's per-warp counter array `name` (host numpy)."""
    return cp.ndarray((MAX_WARPS,), cp.uint64, mod.get_global(name)).get()[:warps]


def _derived(us: float, warps_total: int, write: int, clock_hz: float) -> dict:
    """A step's latency (ns, and cycles at `clock_hz`) and the DRAM-side traffic it implies (read and written
    bytes a second, if every step misses the L2; written only where the stores miss too, `write` 1)."""
    step_ns = us * 1e3 / STEPS
    bps = warps_total * 128 / (step_ns * 1e-9)
    return {"step_ns": step_ns, "step_cycles": step_ns * clock_hz * 1e-9, "read_TBps": bps / 1e12,
            "write_TBps": bps / 1e12 if write == 1 else 0.0}


def _print(r: dict) -> None:
    print(f"{r['kernel']:12s} {r['order']:6s} {r.get('prefill', ''):5s} write={r['write']} {r['warps_per_sm']:2d} warps/SM: {r['us']:8.1f} us  step "
          f"{r['step_ns']:6.1f} ns ({r['step_cycles']:6.0f} cyc)  read {r['read_TBps']:.2f} TB/s")


def predict(gpu: str) -> list[dict]:
    """gpusim's time for each case but the `l2`, `prefill`, `chase_split` and `store_beside` ones (sampled timing, as
    `gpusim.launch` does by default)."""
    import numpy as np                                 # here: the GPU machine's side runs without gpusim's dependencies
    import gpusim                                      # here: as numpy above
    from gpusim.specs.overrides import resolve         # here: as numpy above
    spec = resolve(gpu)
    sms = spec.sm_count
    copy = np.zeros(LINES * 32, np.uint32)
    rows = []
    for case in cases(sms):
        if case["order"] == "l2" or "prefill" in case or case["kernel"] in ("chase_split", "store_beside"):
            continue                     # a launch starts with an empty L2 here: the GPU's warm or prefilled L2 has no twin
        total = case["blocks"] * case["warps_per_sm"]
        nxt, start = tables(np, case["order"], total)
        args = (np.repeat(nxt, 32), copy, start, np.int32(STEPS), np.int32(case["write"]))
        grid, block = launch_shape(case)
        m = gpusim.launch(gpusim.CudaSource(SOURCE, case["kernel"]), grid, block, args, gpu=spec,
                          timing=True, outputs=False).metrics
        us = m["gpu__time_duration.sum"] / 1e3
        row = {**case, "us": us, **_derived(us, total, case["write"], m["sm__cycles_elapsed.avg.per_second"]),
               "dram_read_bytes": m.get("dram__bytes_read.sum"), "dram_write_bytes": m.get("dram__bytes_write.sum"),
               "unplaced_accesses": m.get("gpusim__sass_unplaced_accesses.sum"), "timing_mode": m.get("timing__mode")}
        rows.append(row)
        _print(row)
    return rows


def main(argv=None) -> int:
    return probe_main(__doc__, run, predict, argv)


if __name__ == "__main__":
    raise SystemExit(main())
