"""How long does a load wait when the L2 or the DRAM is busy? (issues 24 and 29)

Why: the 8192^3 `mma.sync` GEMMs are predicted 10-14% fast with the model's slices close to their
measured peak, where the H200's run at 78-82% of theirs (docs/mechanisms_24.md sections 21-22):
the GPU's warps wait longer for each tile than the model's. gpusim's slices and DRAM queue a
request only behind the bytes booked before it (a bandwidth server), so a load waits little until
a unit is nearly full; a loaded-latency curve says how long a load really waits at each load.

The probe: one block per SM, warp 0 a chaser and warps 1..W generators. The chaser's lane 0 follows
a random cycle of 128-B lines (`ld.global.cg`, each address the previous load's value) until the
generators are done, and times its hops with %clock64; the generators load 128-B lines (`ld.global.cg`,
coalesced, UNROLL independent loads a round) and time their own run. The chain is L2-resident (each
block's own 256 lines, loaded by the block before it starts) or cold (one cycle through 512 MiB, a new
start each launch: every hop misses); the generators load L2-resident lines (each block's own 1024)
or stream lines of their own stretch of a 2 GiB buffer from DRAM, in order (`dram`) or 16 KB apart, each
a new DRAM row (`rows`, as a GEMM's tile rows). Kinds `l2_l2`, `dram_dram`, `l2_dram`, `dram_rows` and
`l2_rows` (chain_generators); W from 0 (the unloaded latency) to 31.
Reported per case (the launch with the median CUDA-event time of 5): the chaser's SM cycles a hop
(%clock64) while the generators run, and the generators' sectors a cycle per SM (%clock64 over each
generator's own run).

    python -m validate.loaded_latency_probe --out $OUT/loaded_latency_h200.json   # on a GPU machine
    python -m validate.loaded_latency_probe --predict h200                         # gpusim's figures
"""
from __future__ import annotations

from pathlib import Path

from validate.probe_cli import gpu_provenance, probe_main, write_probe

CHAIN_LINES = 256                # L2 kind: the lines of each block's own chain (a multiple of 8)
GEN_LINES = 1024                 # L2 kind: the lines each block's generators load (a power of two)
DRAM_CHAIN_LINES = 4 << 20       # DRAM kind: one cycle through 512 MiB
UNLOADED_HOPS = 256
SIMULATED_HOPS = 160              # gpusim: the chase's length under load (see predict)
STREAM_BYTES = 2 << 30
ROUNDS = 64                      # generator rounds of UNROLL loads each
UNROLL = 4
MAX_HOPS = 1024                  # the chaser's hops at most
GENERATORS = (0, 1, 2, 4, 8, 16, 31)
SPLIT = (("l2_dram", 1), ("l2_dram", 4), ("l2_dram", 31), ("l2_l2", 31), ("dram_dram", 31))   # (kind, W), every 2nd SM
KINDS = ("l2_l2", "dram_dram", "l2_dram", "dram_rows", "l2_rows")   # <where the chain is>_<what the generators load>
REPEATS = 5

SOURCE = r"""
#ifndef CHASE_DRAM
#define CHASE_DRAM 0                 // 1: the chain cold, over 512 MiB; 0: each block's own L2-resident lines
#endif
#ifndef GEN_DRAM
#define GEN_DRAM 0                   // 1: the generators stream lines from DRAM; 0: each block's own L2-resident lines
#endif
#ifndef GEN_ROWS
#define GEN_ROWS 0                   // with GEN_DRAM: the streamed lines 16 KB apart (each a new DRAM row), not in order
#endif
// MAX_HOPS (the chaser's hops at most, their end times kept in shared memory), CHAIN_LINES (L2 kind: the
// lines of each block's own chain) and GEN_LINES (L2 kind: the lines each block's generators load): source()
extern "C" __global__ void probe(const unsigned *chain, unsigned start, const float *gen,
                                 unsigned long long first_line, int rounds, int max_hops, int use_flag, int every,
                                 unsigned long long *chase, unsigned long long *span, float *out,
                                 long long *stamps) {
    __shared__ volatile int running;
    __shared__ unsigned sink[8];
    __shared__ long long ts[MAX_HOPS];
    unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x / 32, gens = warps - 1;
    if (threadIdx.x == 0) running = gens;
    float acc = 0.f;
    // the block's own lines into the L2 (the kernel starts from any L2), 8 independent loads in flight
    for (unsigned l0 = CHASE_DRAM ? CHAIN_LINES : 0; l0 < (GEN_DRAM ? CHAIN_LINES : CHAIN_LINES + GEN_LINES);
         l0 += warps * 8) {
        unsigned l1 = l0 + warp * 8;
        if (l1 >= (GEN_DRAM ? CHAIN_LINES : CHAIN_LINES + GEN_LINES)) break;
        float v[8];                  // (CHAIN_LINES is a multiple of 8)
        #pragma unroll
        for (int u = 0; u < 8; u++)
            v[u] = l1 < CHAIN_LINES ? (float)__ldcg(chain + (blockIdx.x * CHAIN_LINES + l1 + u) * 32 + lane)
                                    : __ldcg(gen + (blockIdx.x * GEN_LINES + l1 + u - CHAIN_LINES) * 32 + lane);
        #pragma unroll
        for (int u = 0; u < 8; u++)
            acc += v[u];
    }
    __syncthreads();
    if (warp == 0) {
        if (lane == 0) {
            unsigned p = CHASE_DRAM ? start + (blockIdx.x * 977u % 1024u) * 32u : blockIdx.x * CHAIN_LINES * 32u;
            p = __ldcg(chain + p);
            long long t0 = clock64();
            int h = 0;
            for (; h < max_hops && (!use_flag || gens == 0 || h < 4 || running > 0); h++) {
                p = __ldcg(chain + p);
                sink[h & 7] = p;     // waits for the load: the clock read after it is the hop's end
                ts[h] = clock64();
            }
            long long t1 = clock64();
            for (int i = 0; i < h; i++)
                stamps[blockIdx.x * MAX_HOPS + i] = ts[i];
            chase[blockIdx.x * 2] = (unsigned long long)(t1 - t0);
            chase[blockIdx.x * 2 + 1] = (unsigned long long)h;
            if (p == 0xffffffffu || acc == -1.f) out[0] = 1.f;
        }
        return;
    }
    unsigned g = blockIdx.x * gens + warp - 1;                        // generator index
    long long t0 = clock64();
    int my_rounds = blockIdx.x % every == 0 ? rounds : 0;             // split cases: odd blocks' generators idle
    for (int r = 0; r < my_rounds; r++) {
        float v[UNROLL];
        #pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            unsigned long long line;
            if (GEN_DRAM && GEN_ROWS) {       // 131,072 runs of lines 16 KB apart through the 2 GiB buffer
                unsigned long long seq = first_line + ((unsigned long long)g * rounds + r) * UNROLL + u;
                line = (seq % 131072ull) * 128ull + (seq / 131072ull) % 128ull;
            } else if (GEN_DRAM)
                line = first_line + ((unsigned long long)g * rounds + r) * UNROLL + u;
            else
                line = blockIdx.x * GEN_LINES + ((warp * 7919u + (unsigned)(r * UNROLL + u) * 40503u) & (GEN_LINES - 1));
            v[u] = __ldcg(gen + line * 32 + lane);
        }
        #pragma unroll
        for (int u = 0; u < UNROLL; u++)
            acc += v[u];
    }
    long long t1 = clock64();
    if (lane == 0) {
        atomicSub((int *)&running, 1);
        span[g] = (unsigned long long)(t1 - t0);
    }
    if (acc == -1.f) out[0] = acc;
}
"""


def source(kind: str) -> str:
    """The probe's source for `kind`, '<chase>_<generators>' ('l2' or 'dram' each)."""
    chase, gen = kind.split("_")
    return (f"#define CHASE_DRAM {int(chase == 'dram')}\n#define GEN_DRAM {int(gen in ('dram', 'rows'))}\n"
            f"#define GEN_ROWS {int(gen == 'rows')}\n#define UNROLL {UNROLL}\n#define MAX_HOPS {MAX_HOPS}\n"
            f"#define CHAIN_LINES {CHAIN_LINES}\n#define GEN_LINES {GEN_LINES}\n" + SOURCE)


def chain_array(lines: int, cycle: int, seed: int = 1):
    """A u32 array of `lines` 128-B lines whose every 32nd word (one a line) holds the word index of
    the next line: random cycles through each run of `cycle` consecutive lines."""
    import numpy as np                                  # here: the GPU machine's side imports it too
    rng = np.random.default_rng(seed)
    a = np.zeros(lines * 32, np.uint32)
    for base in range(0, lines, cycle):
        order = base + rng.permutation(min(cycle, lines - base)).astype(np.int64)
        a[order * 32] = (np.roll(order, -1) * 32).astype(np.uint32)
    return a


def _chains(sms: int) -> dict:
    return {"l2": chain_array(sms * CHAIN_LINES, CHAIN_LINES), "dram": chain_array(DRAM_CHAIN_LINES, DRAM_CHAIN_LINES)}


def _args(chain, start: int, gen, first: int, hops: int, use_flag: bool, every: int, chase, span, out, stamps,
          ints) -> tuple:
    """The probe's arguments; `ints`: (np or cp) for the scalar types."""
    return (chain, ints.uint32(start), gen, ints.uint64(first), ints.int32(ROUNDS), ints.int32(hops),
            ints.int32(use_flag), ints.int32(every), chase, span, out, stamps)


SLOW_CYCLES = 400                # a hop slower than this: well past every L2 hit of an unloaded chase (<= 330)


def hop_stats(lat) -> dict:
    """Percentiles of single hops' cycles and the share slower than SLOW_CYCLES."""
    import numpy as np                                  # here: as in chain_array
    lat = np.asarray(lat, np.float64)
    if not lat.size:
        return {}
    q = np.percentile(lat, [10, 50, 90, 99])
    return {"hop_p10": float(q[0]), "hop_p50": float(q[1]), "hop_p90": float(q[2]), "hop_p99": float(q[3]),
            "slow_share": float((lat > SLOW_CYCLES).mean())}


def cases() -> list[tuple[str, int, int]]:
    """(kind, W, every): generators on every SM for each kind and W, then the SPLIT cases with generators
    on the even SMs only (a chaser's wait that its own SM's misses cause, or the whole GPU's)."""
    return [(k, w, 1) for k in KINDS for w in GENERATORS] + [(k, w, 2) for k, w in SPLIT]


def _row(kind: str, gens: int, ns: float, hop_cycles, hops, gen_sectors_per_cycle_sm, times=None) -> dict:
    row = {"kind": kind, "generators": gens, "ns": ns, "hop_cycles": hop_cycles, "hops": hops,
           "generator_sectors_per_cycle_per_sm": gen_sectors_per_cycle_sm}
    if times is not None:
        row["ns_all"] = times
    return row


def _print(r: dict) -> None:
    print(f"{r['kind']:9s} W={r['generators']:2d}: {r['ns'] / 1e3:8.1f} us  generators "
          f"{r['generator_sectors_per_cycle_per_sm'] or 0:6.2f} sectors/cycle/SM  hop {r['hop_cycles'] or 0:7.1f} cycles "
          f"({r['hops'] or 0:.0f} hops, {100 * r.get('slow_share', 0):4.1f}% over {SLOW_CYCLES})" + (f"  idle SMs' hop {r['hop_cycles_idle_sms'] or 0:7.1f} (every "
                                            f"{r['loaded_every']})" if r.get("loaded_every") else ""))


def run(out_path: str) -> Path:
    import cupy as cp                    # here, not at the top: only the GPU machine needs CuPy
    import numpy as np                   # here: beside CuPy, on the GPU machine
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    sms = props["multiProcessorCount"]
    chains = {k: cp.asarray(v) for k, v in _chains(sms).items()}
    res = cp.ones(sms * GEN_LINES * 32, cp.float32)
    stream = cp.ones(STREAM_BYTES // 4, cp.float32)
    out = cp.zeros(1, cp.float32)
    chase = cp.zeros(2 * sms, cp.uint64)
    stamps = cp.zeros(sms * MAX_HOPS, cp.int64)
    first = 0
    rows = []
    arch = f"--gpu-architecture=sm_{props['major']}{props['minor']}"
    fns = {k: cp.RawModule(code=source(k), options=(arch,), backend="nvrtc").get_function("probe")
           for k in KINDS}
    per_launch = sms * max(GENERATORS) * ROUNDS * UNROLL
    for kind, gens, every in cases():
        span = cp.zeros(max(sms * gens, 1), cp.uint64)
        times, hop_cycles, hops, rates, idle, stats, idle_stats = [], [], [], [], [], [], []
        chase_on, gen_on = kind.split("_")
        for rep in range(REPEATS):
            start = 0 if chase_on == "l2" else (rep * 2654435761 + gens * 40503 + every) % (DRAM_CHAIN_LINES - 1024) * 32
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            fns[kind]((sms,), (32 * (gens + 1),), _args(chains[chase_on], start, res if gen_on == "l2" else stream, first,
                                                        MAX_HOPS if gens else UNLOADED_HOPS, True, every, chase, span,
                                                        out, stamps, cp))
            b.record()
            b.synchronize()
            times.append(cp.cuda.get_elapsed_time(a, b) * 1e6)
            c = chase.get().reshape(sms, 2).astype(np.float64)
            loaded = np.arange(sms) % every == 0
            hop_cycles.append(float(c[loaded, 0].sum() / c[loaded, 1].sum()))
            idle.append(float(c[~loaded, 0].sum() / c[~loaded, 1].sum()) if every > 1 else None)
            hops.append(float(c[loaded, 1].mean()))
            st = stamps.get().reshape(sms, MAX_HOPS)
            lat = [np.diff(st[b, :int(c[b, 1])]) for b in range(sms)]       # single hops' cycles
            stats.append(hop_stats(np.concatenate([lat[b] for b in range(sms) if loaded[b]])))
            idle_stats.append(hop_stats(np.concatenate([lat[b] for b in range(sms) if not loaded[b]]))
                              if every > 1 else {})
            if gens:                 # each loaded SM's generators: sectors over their mean run
                sp = span.get().astype(np.float64).reshape(sms, gens)[loaded]
                rates.append(ROUNDS * UNROLL * 4 / float(sp.mean()) * gens)
            else:
                rates.append(None)
            if gen_on != "l2":
                first = first + per_launch if first + 2 * per_launch <= STREAM_BYTES // 128 else 0
        med = sorted(range(REPEATS), key=lambda i: times[i])[REPEATS // 2]
        row = _row(kind, gens, times[med], hop_cycles[med], hops[med], rates[med], times)
        row["hop_cycles_all"] = hop_cycles
        row.update(stats[med])
        if every > 1:
            row.update(loaded_every=every, hop_cycles_idle_sms=idle[med],
                       **{"idle_sms_" + k: v for k, v in idle_stats[med].items()})
        rows.append(row)
        _print(row)
    prov = gpu_provenance(cp, "python -m validate.loaded_latency_probe --out $OUT/loaded_latency_<gpu>.json", __doc__,
                          sms=sms, rounds=ROUNDS, unroll=UNROLL, generators=GENERATORS, repeats=REPEATS,
                          chain_lines=CHAIN_LINES, gen_lines=GEN_LINES, dram_chain_lines=DRAM_CHAIN_LINES,
                          stream_bytes=STREAM_BYTES)
    return write_probe(out_path, prov, rows)


def _recorded_hops(hops, sm: int, end: float) -> tuple:
    """SM `sm`'s chaser hops (recorded memory events) issued before `end`, the first left out: their
    mean cycles, count and `hop_stats`."""
    lat = [m[5] - m[4] for m in hops if m[0] == sm and m[4] < end][1:]
    return (sum(lat) / len(lat) if lat else None), len(lat), hop_stats(lat)


def predict(gpu: str, only=None) -> list[dict]:
    """gpusim's figures for each case (`only`: a list of (kind, W, every) of `cases()`): every SM
    simulated, every loop iteration timed; from SM 0's recorded memory requests, the chaser's hops (its
    1-sector loads issued while the generators run, issue to data) and the generators' sectors a cycle
    (their first issue to their last data); in split cases, SM 1's chaser's hops as the idle SMs'."""
    import numpy as np                                  # here: as in run
    import gpusim                                       # here: the GPU machine's side runs without gpusim
    from gpusim.specs.overrides import resolve          # here: as gpusim
    from gpusim.timing.engine import TimingOptions      # here: as gpusim
    from gpusim.timing.record import TraceWindow        # here: as gpusim
    spec = resolve(gpu)
    sms = spec.sm_count
    chains = _chains(sms)
    res = np.ones(sms * GEN_LINES * 32, np.float32)
    stream = np.ones(STREAM_BYTES // 4, np.float32)
    rows = []
    for kind, gens, every in (only or cases()):
        opts = TimingOptions(mode="full", instruction_budget=None,
                             record=TraceWindow(sms=(0, 1), start_cycle=0, end_cycle=10**9, max_events=4_000_000))
        # gpusim's functional run, not its timing, would decide when the chaser sees the flag: a fixed
        # chase instead, longer than the generators' run, of which the hops issued during it count
        chase_on, gen_on = kind.split("_")
        args = _args(chains[chase_on], 0, res if gen_on == "l2" else stream, 0, SIMULATED_HOPS if gens else UNLOADED_HOPS,
                     False, every, np.zeros(2 * sms, np.uint64), np.zeros(max(sms * gens, 1), np.uint64),
                     np.zeros(1, np.float32), np.zeros(sms * MAX_HOPS, np.int64), np)
        r = gpusim.launch(gpusim.CudaSource(source(kind), "probe"), sms, 32 * (gens + 1), args,
                          gpu=spec, timing=True, timing_options=opts, outputs=False)
        loads = [m for m in r.extra["recording"].memory if m[3] == "load"]
        hops_all = [m for m in loads if m[7] == 1]
        chase_from = min(m[4] for m in hops_all if m[0] == 0)        # SM 0's chase starts after its warm-up
        big = [m for m in loads if m[7] > 1 and m[4] >= chase_from and m[0] == 0]
        end = max((m[5] for m in big), default=float("inf"))

        cyc, n, st = _recorded_hops(hops_all, 0, end)
        rate = sum(m[7] for m in big) / (end - min(m[4] for m in big)) if big else None
        row = _row(kind, gens, r.metrics["gpu__time_duration.sum"], cyc, n, rate)
        row.update(st)
        if every > 1:
            idle, _, idle_st = _recorded_hops(hops_all, 1, end)
            row.update(loaded_every=every, hop_cycles_idle_sms=idle, **{"idle_sms_" + k: v for k, v in idle_st.items()})
        row["bound"] = r.metrics.get("timing__bound")
        rows.append(row)
        _print(row)
    return rows


def main(argv=None) -> int:
    return probe_main(__doc__, run, predict, argv)


if __name__ == "__main__":
    raise SystemExit(main())
