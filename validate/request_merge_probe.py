"""Whether the L2 looks a sector up once for several SMs that ask for it at about the same time, and
for which SMs (issue 29; docs/mechanisms_24.md section 37).

The tensor set's Nsight counters (data/measurements/h{100,200}_tensor.json) show the L2 looking up
fewer sectors for the SMs (`lts__t_sectors_srcunit_tex_op_read`) than their L1s receive from it
(`l1tex__m_xbar2l1tex_read_bytes` / 32): 0.92 for the cp.async GEMMs at 4096^3, 0.43 for the wmma GEMM
at 2048^3, 0.27 for Triton's attention at 16K; gpusim looks up every sector an L1 misses.

One block an SM (120 KiB of dynamic shared memory), 8 warps. Every block waits until all are resident
(a counter in global memory), then, after `delay[smid]` cycles, reads `ROUNDS` rounds of `UNROLL`
16-byte loads a thread from region `role[smid]` (256 KiB, each sector once, in the same order on every
SM): `ld.global.cg.v4` (`cg`), `ld.global.v4` (`ca`) or `cp.async.cg` (`async`, a round's copies
waited for before the next; `paced`: round r of an SM starts `delay` ns + r microseconds after a
common start, so a late SM stays as late). An SM with role -1 reads nothing. The roles (`roles`):
every SM its own region (`own`); the two SMs of a TPC (SM ids 2k, 2k+1: `tpc`); SMs s and s + 66
(`apart`), 4j and 4j+2 (`next_tpc`), the four of two TPCs 4j..4j+3 (`quad`), all three in different
GPCs; the SMs of one GPC (`gpc`; the GPCs from cluster launches, validate/gpc_topology.py), one SM of
each of its TPCs (`gpc_one_sm_a_tpc`), two of its TPCs (`gpc_two_tpcs`, and with one SM each:
`..._one_sm`); every SM one region (`all`); `tpc` and `gpc_two_tpcs` with the second SM or TPC late
(`..._late<cycles>`, `tpc_lag<ns>` paced). The regions are read once by a launch of the same case
before (Nsight with `--cache-control none`), so the lookups hit; Nsight's counters of each case's
second launch give the merging: the sectors the L2 looked up over those the L1s received.

    python -m validate.request_merge_probe $OUT                      # on a GPU machine, 25 s
    python -m validate.request_merge_probe --predict h100 FILE [--only RE] [--json F]
    python -m validate.request_merge_probe --predict h100:noc.gpc_merge_window_cycles=750,l2.join_queued_reads=false FILE

Needs CuPy (NVRTC) and Nsight Compute. The GPU side imports nothing of gpusim.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from validate import gpc_topology, ncu
from validate.probe_cli import folder_probe_main, nvrtc_module

WARPS = 8
UNROLL = 4
REGION_INT4 = 16384                          # 256 KiB a region
ROUNDS = REGION_INT4 // (UNROLL * 32 * WARPS)  # each sector of the region once
SHARED_BYTES = 120 * 1024
KINDS = ("cg", "ca", "async", "paced")
PACE_NS = 1000                               # 'paced': a round each SM every microsecond (a round alone takes ~0.3)
PACED_LAGS_NS = (0, 250, 500, 1000, 2000, 3000, 4000, 6000, 8000)
PACE_SPIN_CYCLES = 2000                      # gpusim's 'paced' rounds: this spin before each (its clock is no timer)
DELAYS = (250, 1000, 2000, 4000, 8000, 16000)
GPC_DELAYS = (250, 1000, 4000)
GPCS_ENV = "REQUEST_MERGE_GPCS"
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_requests_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
           "lts__t_sectors_srcunit_ltcfabric.sum", "lts__t_sectors_op_read.sum", "l1tex__m_xbar2l1tex_read_bytes.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
           "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum", "dram__bytes_read.sum")

SOURCE = r"""
typedef unsigned long long u64;
__device__ __forceinline__ u64 clk() { u64 t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }

__device__ __forceinline__ u64 ns() { u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }

// out[block * 6]: %smid, the role, the read's cycles, thread 0's sum of what it read, the read's start
// and end (%globaltimer, ns). KIND 0 / 1 / 2: ld.global.cg / ld.global / cp.async.cg, each SM delay[smid]
// cycles late; 3: cp.async.cg paced, round r of an SM starting at the common start + delay[smid] ns +
// r * PACE ns, so that a late SM stays exactly that late.
template <int KIND>
__device__ void reader(const int4 *data, const int *role, const int *delay, u64 *arrived, u64 *out) {
    extern __shared__ __align__(128) int4 smem[];
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (SYNC && threadIdx.x == 0) {         // every block resident; the last to arrive sets a start for all
        if (atomicAdd(arrived, 1ull) == gridDim.x - 1)
            atomicExch(arrived + 1, ns() + 20000);
        while (atomicAdd(arrived + 1, 0ull) == 0) { }
    }
    __syncthreads();
    int g = role[smid];
    u64 start = SYNC ? atomicAdd(arrived + 1, 0ull) : 0;
#if SYNC
    if (KIND == 3) {
        while (ns() < start) { }
    } else {
        u64 tw = clk();
        while (clk() - tw < (u64)delay[smid]) { }
    }
#else
    // gpusim: the region read into the L2 first (the GPU's measured launch had one before it), then a
    // wait well past a merge window; gpusim's %clock64 counts its functional steps, not cycles: a
    // chain of dependent FMAs (8 an iteration, 4 cycles each on Hopper) takes each wait instead
    float f = (float)smid;
    if (WARM && g >= 0) {
        const int4 *q = data + (size_t)g * REGION + threadIdx.x;
        unsigned d0 = (unsigned)__cvta_generic_to_shared(smem + threadIdx.x);
        for (int r = 0; r < ROUNDS; r++) {
            #pragma unroll
            for (int u = 0; u < UNROLL; u++)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                             :: "r"(d0 + u * blockDim.x * 16), "l"(q + (r * UNROLL + u) * blockDim.x));
            asm volatile("cp.async.commit_group;" ::: "memory");
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        #pragma unroll 1
        for (int i = 0; i < 20000 / 32; i++) {
            #pragma unroll
            for (int k = 0; k < 8; k++)
                asm volatile("fma.rn.f32 %0, %0, 0f3F800001, 0f3F800000;" : "+f"(f));
        }
    }
    __syncthreads();
    int spins = delay[smid] / 32;
    #pragma unroll 1
    for (int i = 0; i < spins; i++) {
        #pragma unroll
        for (int k = 0; k < 8; k++)
            asm volatile("fma.rn.f32 %0, %0, 0f3F800001, 0f3F800000;" : "+f"(f));
    }
    if (f == 1.5f) out[0] = 1;
#endif
    __syncthreads();
    u64 t0 = clk(), n0 = ns();
    int acc = 0;
    if (MEASURE && g >= 0) {
        const int4 *p = data + (size_t)g * REGION + threadIdx.x;
        unsigned dst = (unsigned)__cvta_generic_to_shared(smem + threadIdx.x);
        for (int r = 0; r < ROUNDS; r++) {
            if (KIND == 3) {
#if SYNC
                u64 at = start + (u64)delay[smid] + (u64)r * PACE;
                while (ns() < at) { }
#else
                // gpusim: the same spin before every round on every SM keeps the first delay between them
                float h = (float)r;
                #pragma unroll 1
                for (int i = 0; i < PACE_SPIN / 32; i++) {
                    #pragma unroll
                    for (int k = 0; k < 8; k++)
                        asm volatile("fma.rn.f32 %0, %0, 0f3F800001, 0f3F800000;" : "+f"(h));
                }
                if (h == 1.5f) out[1] = 1;
#endif
            }
            #pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                const int4 *a = p + (r * UNROLL + u) * blockDim.x;
                if (KIND == 0) {
                    int4 v;
                    asm volatile("ld.global.cg.v4.s32 {%0, %1, %2, %3}, [%4];"
                                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(a));
                    acc += v.x ^ v.w;
                } else if (KIND == 1) {
                    int4 v;
                    asm volatile("ld.global.v4.s32 {%0, %1, %2, %3}, [%4];"
                                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(a));
                    acc += v.x ^ v.w;
                } else {
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                                 :: "r"(dst + u * blockDim.x * 16), "l"(a));
                }
            }
            if (KIND >= 2) {
                asm volatile("cp.async.commit_group;" ::: "memory");
                asm volatile("cp.async.wait_group 0;" ::: "memory");
            }
        }
    }
    __syncthreads();
    u64 t1 = clk(), n1 = ns();
    if (KIND >= 2) acc = smem[threadIdx.x].x;
    if (threadIdx.x == 0) {
        out[blockIdx.x * 6 + 0] = smid;
        out[blockIdx.x * 6 + 1] = (u64)(long long)g;
        out[blockIdx.x * 6 + 2] = t1 - t0;
        out[blockIdx.x * 6 + 3] = (u64)(unsigned)acc;
        out[blockIdx.x * 6 + 4] = n0;
        out[blockIdx.x * 6 + 5] = n1;
    }
}

extern "C" __global__ void merge_cg(const int4 *d, const int *r, const int *w, u64 *a, u64 *o) { reader<0>(d, r, w, a, o); }
extern "C" __global__ void merge_ca(const int4 *d, const int *r, const int *w, u64 *a, u64 *o) { reader<1>(d, r, w, a, o); }
extern "C" __global__ void merge_async(const int4 *d, const int *r, const int *w, u64 *a, u64 *o) { reader<2>(d, r, w, a, o); }
extern "C" __global__ void merge_paced(const int4 *d, const int *r, const int *w, u64 *a, u64 *o) { reader<3>(d, r, w, a, o); }

"""


ROLE_SLOTS = 256                             # the role and delay tables' length (%smid below it)


def source(sync: bool = True, warm: bool = False, measure: bool = True) -> str:
    """The kernels; without `sync` (gpusim's runs: its functional pass runs blocks in turn, and every
    block is resident from the start there) no block waits for the others, waits are FMA chains, and
    with `warm` each reading SM first reads its region into the L2 (`measure` False: only that)."""
    return (f"#define REGION {REGION_INT4}\n#define ROUNDS {ROUNDS}\n#define UNROLL {UNROLL}\n"
            f"#define SYNC {int(sync)}\n#define WARM {int(warm)}\n#define MEASURE {int(measure)}\n"
            f"#define PACE {PACE_NS}ull\n#define PACE_SPIN {PACE_SPIN_CYCLES}\n" + SOURCE)


def roles(sms: int, gpcs: list[list[int]] | None = None) -> dict[str, tuple[list[int], list[int]]]:
    """(role by SM id, delay by SM id) of every case (module docstring)."""
    none = [0] * sms
    out = {"own": (list(range(sms)), none), "tpc": ([s // 2 for s in range(sms)], none),
           "apart": ([s % (sms // 2) if s < 2 * (sms // 2) else -1 for s in range(sms)], none),
           "next_tpc": ([(s // 4) * 2 + s % 2 for s in range(sms)], none),
           "quad": ([s // 4 for s in range(sms)], none), "all": ([0] * sms, none)}
    for d in DELAYS:
        out[f"tpc_late{d}"] = ([s // 2 for s in range(sms)], [d if s % 2 else 0 for s in range(sms)])
    for d in PACED_LAGS_NS:
        out[f"tpc_lag{d}ns"] = ([s // 2 for s in range(sms)], [d if s % 2 else 0 for s in range(sms)])
    if gpcs:
        gpc, one, two, two_one = [-1] * sms, [-1] * sms, [-1] * sms, [-1] * sms
        late = {d: [0] * sms for d in GPC_DELAYS}
        for i, members in enumerate(gpcs):
            tpcs = sorted({s // 2 for s in members if s < sms})
            for s in members:
                if s < sms:
                    gpc[s] = i
                    if s % 2 == 0:
                        one[s] = i
            for j in range(0, len(tpcs) - 1, 2):          # two TPCs of one GPC share a region
                for t, second in ((tpcs[j], False), (tpcs[j + 1], True)):
                    for s in (2 * t, 2 * t + 1):
                        if s < sms:
                            two[s] = tpcs[j]
                            for d in GPC_DELAYS:
                                late[d][s] = d if second else 0
                    if 2 * t < sms:
                        two_one[2 * t] = tpcs[j]          # one SM of each of the two TPCs
        out["gpc"] = (gpc, none)
        out["gpc_one_sm_a_tpc"] = (one, none)
        out["gpc_two_tpcs"] = (two, none)
        out["gpc_two_tpcs_one_sm"] = (two_one, none)
        for d in GPC_DELAYS:
            out[f"gpc_two_tpcs_late{d}"] = (two, late[d])
    return out


def cases(sms: int, gpcs=None) -> list[tuple[str, str]]:
    """(kind, role name) of every launch, in launch order: the paced reads only on TPCs, the second
    SM of each a lag late."""
    names = [n for n in roles(sms, gpcs) if "_lag" not in n]
    plain = [(k, n) for k in KINDS[:3] for n in names if not ("late" in n and k != "async")]
    return plain + [("paced", f"tpc_lag{d}ns") for d in PACED_LAGS_NS]


def _module():
    cp, props, mod = nvrtc_module(source())
    for k in KINDS:
        mod.get_function(f"merge_{k}").max_dynamic_shared_size_bytes = SHARED_BYTES
    return cp, props, mod


def _tables(role: list[int], delay: list[int]) -> tuple[list[int], list[int]]:
    """`role` and `delay` padded to `ROLE_SLOTS` entries (an SM id past the GPU's count reads nothing)."""
    return role + [-1] * (ROLE_SLOTS - len(role)), delay + [0] * (ROLE_SLOTS - len(delay))


def _launch(cp, mod, sms, kind, role, delay, data):
    out = cp.zeros(sms * 6, dtype=cp.uint64)
    arrived = cp.zeros(2, dtype=cp.uint64)
    role, delay = _tables(role, delay)
    mod.get_function(f"merge_{kind}")((sms,), (32 * WARPS,), (data, cp.asarray(role, dtype=cp.int32),
                                       cp.asarray(delay, dtype=cp.int32), arrived, out), shared_mem=SHARED_BYTES)
    return out


def _data(cp, sms: int):
    return cp.arange(sms * REGION_INT4 * 4, dtype=cp.int32)


def worker() -> None:
    """Every case launched twice, in `cases` order (the second is the one read: the first warms the L2)."""
    cp, _props, mod = _module()
    sms = _props["multiProcessorCount"]
    gpcs, _ = gpc_topology.discover(sms, GPCS_ENV)
    data = _data(cp, sms)
    table = roles(sms, gpcs)
    for kind, name in cases(sms, gpcs):
        for _ in range(2):
            _launch(cp, mod, sms, kind, *table[name], data)
    cp.cuda.Device().synchronize()


def merged(m: dict) -> dict:
    """What one case's counters say: sectors the L1s received, the L2 looked up for them, and the ratio."""
    rx = m.get("l1tex__m_xbar2l1tex_read_bytes.sum", 0.0) / 32
    looked = m.get("lts__t_sectors_srcunit_tex_op_read.sum")
    if looked is None:                   # gpusim counts the SMs' read lookups as hits and misses
        looked = (m.get("lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", 0.0)
                  + m.get("lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum", 0.0))
    return {"received_sectors": rx, "looked_up_sectors": looked,
            "looked_up_per_received": round(looked / rx, 4) if rx else None}


def measure(out_dir: Path) -> Path:
    cp, props, mod = _module()
    sms = props["multiProcessorCount"]
    gpcs, cluster_launches = gpc_topology.discover(sms, GPCS_ENV)
    data = _data(cp, sms)
    table = roles(sms, gpcs)
    rows = []
    for kind, name in cases(sms, gpcs):
        for _ in range(3):
            out = _launch(cp, mod, sms, kind, *table[name], data)
        cp.cuda.Device().synchronize()
        rec = out.get().reshape(sms, 6)
        active = [int(r[2]) for r in rec if int(r[1]) < 2 ** 63]
        t0 = min(int(r[4]) for r in rec)
        rows.append({"kind": kind, "case": name, "readers": len(active),
                     "cycles_median": sorted(active)[len(active) // 2] if active else None,
                     "smids": [int(r[0]) for r in rec], "roles": [int(r[1]) if int(r[1]) < 2 ** 63 else -1 for r in rec],
                     "cycles": [int(r[2]) for r in rec], "start_ns": [int(r[4]) - t0 for r in rec],
                     "end_ns": [int(r[5]) - t0 for r in rec]})
        print(f"{kind:6s} {name:14s} readers {len(active):4d} cycles {rows[-1]['cycles_median']}", flush=True)
    gpu = ncu.gpu_identity()
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "request_merge_probe_ncu.csv"
    t = time.time()
    cmd = ncu.command(ncu.find_ncu(), METRICS, str(log), [sys.executable, "-m", "validate.request_merge_probe",
                                                          "--worker"])
    cmd[cmd.index("--cache-control") + 1] = "none"      # the first launch of a case warms the L2 for the second
    env = dict(os.environ, **{GPCS_ENV: json.dumps(gpcs)}) if gpcs else None
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=500, env=env)
    kernels = [k for k in (ncu.parse_csv(log.read_text()) if log.exists() else []) if "merge_" in k["kernel_name"]]
    problems = [] if len(kernels) == 2 * len(rows) else [f"ncu profiled {len(kernels)} merge kernels, "
                                                          f"the worker launched {2 * len(rows)}"]
    for i, row in enumerate(rows):
        if 2 * i + 1 < len(kernels) and f"merge_{row['kind']}" in kernels[2 * i + 1]["kernel_name"]:
            row["metrics"] = kernels[2 * i + 1]["metrics"]
            row.update(merged(row["metrics"]))
    doc = {"provenance": {"gpu": gpu, "sm_count": sms,
                          "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                          "clocks": "not locked (as found); cycles are SM cycles (%clock64)",
                          "command": "python -m validate.request_merge_probe $OUT",
                          "ncu": {"command": " ".join(cmd), "rc": done.returncode, "seconds": round(time.time() - t, 1),
                                  "tail": done.stdout[-1500:], "problems": problems},
                          "method": __doc__.split("\n\n")[2]},
           "warps": WARPS, "unroll": UNROLL, "region_bytes": REGION_INT4 * 16, "rounds": ROUNDS,
           "shared_bytes": SHARED_BYTES, "gpcs": gpcs, "cluster_launches": cluster_launches, "topology_source": gpc_topology.SOURCE,
           "kernel_source": source(), "rows": rows}
    path = out_dir / "request_merge_probe.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


def predict(gpu: str, measured: Path, only: str | None = None) -> list[dict]:
    """gpusim's lookups per received sector and cycles of the reads for every case of a measured file
    (`gpu`: a preset or PRESET:KEY=VALUE,...; `only`: the cases whose KIND/CASE matches), the roles given
    to gpusim's SMs as to the GPU's SMs of the same GPCs (`gpc_topology.in_gpusim_order`), the regions
    read into the L2 first (counters and cycles less those of a run of that alone; all simulated)."""
    import numpy as np                   # here: only predicting needs gpusim
    import gpusim                        # here: the GPU side imports nothing of gpusim
    from gpusim.specs.overrides import resolve   # here: as gpusim above
    from gpusim.timing.engine import TimingOptions   # here: as gpusim above
    doc = json.loads(measured.read_text())
    preset, _, sets = gpu.partition(":")
    spec = resolve(preset, [x for x in sets.split(",") if x])
    sms = spec.sm_count
    table = roles(sms, doc.get("gpcs"))
    order = gpc_topology.in_gpusim_order(doc.get("gpcs"), sms, spec.noc.gpcs)
    got = []
    for row in doc["rows"]:
        if only and not re.search(only, f"{row['kind']}/{row['case']}"):
            continue
        role, delay = table[row["case"]]
        if row["kind"] == "paced":                   # the lags in ns, as cycles at the preset's clock
            delay = [round(d * spec.clocks.sm_clock_mhz / 1000) for d in delay]
        role, delay = _tables([role[s] for s in order], [delay[s] for s in order])
        runs = []
        for measure in (False, True):             # the warm-up alone, then with the measured reads
            out = np.zeros(sms * 6, np.uint64)
            args = (np.arange(sms * REGION_INT4 * 4, dtype=np.int32), np.asarray(role, np.int32),
                    np.asarray(delay, np.int32), np.zeros(2, np.uint64), out)
            r = gpusim.launch(gpusim.CudaSource(source(sync=False, warm=True, measure=measure), f"merge_{row['kind']}"),
                              sms, 32 * WARPS, args, gpu=spec, shared_bytes=SHARED_BYTES,
                              timing=TimingOptions(mode="full", instruction_budget=None))
            runs.append((merged(r.metrics), r.metrics["sm__cycles_elapsed.max"]))
        (before, c0), (after, c1) = runs
        rx = after["received_sectors"] - before["received_sectors"]
        looked = after["looked_up_sectors"] - before["looked_up_sectors"]
        got.append({"kind": row["kind"], "case": row["case"],
                    "predicted_looked_up_per_received": round(looked / rx, 4) if rx else None,
                    "measured_looked_up_per_received": row.get("looked_up_per_received"),
                    "predicted_cycles": round(c1 - c0), "measured_cycles_median": row.get("cycles_median")})
        print(json.dumps(got[-1]), flush=True)
    return got


def main(argv=None) -> int:
    return folder_probe_main(__doc__, "validate.request_merge_probe", measure, predict, worker, argv, only=True)


if __name__ == "__main__":
    sys.exit(main())
