"""Which SMs pull L2-resident data faster, and whether they do alone: the crossbar probe's copies on chosen SMs
(issue 29; docs/mechanisms_24.md section 43).

Why: the double-buffered `mma.sync` GEMM at 7 blocks a SM runs 24 of its 132 SMs 35-39% faster than the rest
on both GPUs, and that is its whole gain over the single-buffered kernel there (block_drift.py); the crossbar
probe's copies into 80-B-pitch rows with 32 warps a SM (many L2 lookups, deep) show a set like it, aligned copies
do not. A model of it needs to know what the fast SMs have: a path of their own (they stay fast, and the others
slow, whichever others run beside them), or fewer SMs on a shared one (the others speed up when fewer of them run).

One block a SM (`crossbar_probe`'s kernel and sizes: 120 KiB of dynamic shared memory, `ITERS` rounds of 4 x 16 B
a thread from a 64 KiB region of the block's own, cp.async.cg, wait_group 0), 32 warps, the 80-B pitch
(`pitch80`) and aligned (`own`) ways; a block whose %smid is not in the run's mask leaves at once. Runs: every SM
(which SMs are fast: under 0.9 of the mean cycles), then the fast ones alone, as many slow ones alone, all the
slow ones, one SM a TPC (even %smid), every SM with 8 warps; the last of three launches each. Per run, each
active SM's cycles a round (%clock64) and the mean of the fast and the other active SMs; and the same GPU's GPCs
as thread-block clusters find them (`validate/gpc_topology.py`), to set beside the fast SMs.

    python -m validate.tensor_timing.sm_paths --out $OUT/sm_paths_h100.json     # GPU machine, seconds
    python -m validate.tensor_timing.sm_paths --summary data/measurements/sm_paths_h100.json

Needs CuPy (NVRTC). The GPU side imports nothing of gpusim.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from validate.gpc_topology import discover
from validate.probe_cli import gpu_provenance, write_probe
from validate.tensor_timing.crossbar_probe import ITERS, REGION_INT4, SHARED_BYTES, SOURCE

FAST = 0.9                                    # an SM whose cycles are under this share of the mean is fast
MASKED = SOURCE + r"""
template <int KIND>
__device__ void masked(const int4 *s, int i, u64 *o, int *k, const unsigned char *mask) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (!mask[smid]) {                         // not in this run: %smid, no cycles
        if (threadIdx.x == 0) o[blockIdx.x * 33] = smid;
        return;
    }
    pull<KIND>(s, i, o, k);
}
extern "C" __global__ void pull_own_masked(const int4 *s, int i, u64 *o, int *k, const unsigned char *m) {
    masked<0>(s, i, o, k, m);
}
extern "C" __global__ void pull_pitch80_masked(const int4 *s, int i, u64 *o, int *k, const unsigned char *m) {
    masked<2>(s, i, o, k, m);
}
"""


def per_sm_cycles(rec: np.ndarray, warps: int) -> dict[int, float]:
    """{%smid: cycles a round} of the active blocks of one launch's records (33 words a block)."""
    out = {}
    for r in rec:
        cyc = r[1:1 + warps]
        if cyc.max() > 0:
            out[int(r[0])] = float(cyc.max()) / ITERS
    return out


def split(cycles: dict[int, float], fast) -> dict:
    """The mean cycles a round of the run's active SMs in `fast` and of the others."""
    f = [v for k, v in cycles.items() if k in fast]
    o = [v for k, v in cycles.items() if k not in fast]
    return {"active": len(cycles), "fast_active": len(f), "fast_cycles": round(float(np.mean(f)), 1) if f else None,
            "other_cycles": round(float(np.mean(o)), 1) if o else None}


def run(out: str) -> None:
    import cupy as cp                    # here, not at the top: only measuring needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    sms = int(props["multiProcessorCount"])
    mod = cp.RawModule(code=MASKED, backend="nvrtc",
                       options=(f"--gpu-architecture=sm_{props['major']}{props['minor']}",))
    for kind in ("own", "pitch80"):
        mod.get_function(f"pull_{kind}_masked").max_dynamic_shared_size_bytes = SHARED_BYTES
    src, sink = cp.ones((sms + 1) * REGION_INT4 * 4, dtype=cp.int32), cp.zeros(1, dtype=cp.int32)

    def launch(kind: str, warps: int, active) -> dict[int, float]:
        mask = np.zeros(1024, dtype=np.uint8)
        mask[list(active)] = 1
        m = cp.asarray(mask)
        for _ in range(3):                      # the last of three: the regions in the L2, clocks up
            o = cp.zeros(sms * 33, dtype=cp.uint64)
            mod.get_function(f"pull_{kind}_masked")((sms,), (32 * warps,), (src, cp.int32(ITERS), o, sink, m),
                                                    shared_mem=SHARED_BYTES)
        cp.cuda.Device().synchronize()
        return per_sm_cycles(o.get().reshape(sms, 33), warps)

    everyone = range(1024)
    first = launch("pitch80", 32, everyone)
    mean = np.mean(list(first.values()))
    fast = sorted(k for k, v in first.items() if v < FAST * mean)
    slow = sorted(k for k in first if k not in fast)
    runs = [("pitch80/w32/all", "pitch80", 32, everyone), ("pitch80/w32/fast", "pitch80", 32, fast),
            ("pitch80/w32/slow_as_many", "pitch80", 32, slow[:len(fast)]), ("pitch80/w32/slow", "pitch80", 32, slow),
            ("pitch80/w32/even", "pitch80", 32, [k for k in first if k % 2 == 0]),
            ("pitch80/w8/all", "pitch80", 8, everyone), ("own/w32/all", "own", 32, everyone)]
    rows = []
    for label, kind, warps, active in runs:
        cycles = first if label == "pitch80/w32/all" else launch(kind, warps, active)
        rows.append({"run": label, "kind": kind, "warps": warps, **split(cycles, fast),
                     "cycles": {str(k): round(v, 1) for k, v in sorted(cycles.items())}})
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "cycles"}), flush=True)
    gpcs, _launches = discover(sms)             # the same GPU's GPCs (thread-block clusters), beside its fast SMs
    prov = gpu_provenance(cp, "python -m validate.tensor_timing.sm_paths --out " + out, __doc__, sm_count=sms,
                          fast_sms=fast, gpcs=gpcs, iters=ITERS,
                          kernel_source="validate/tensor_timing/crossbar_probe.py + sm_paths.py")
    print(write_probe(out, prov, rows))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="the JSON to write (on a GPU machine)")
    ap.add_argument("--summary", metavar="FILE", help="print a committed run's figures")
    a = ap.parse_args(argv)
    if a.out:
        run(a.out)
    elif a.summary:
        doc = json.loads(Path(a.summary).read_text())
        prov = doc["provenance"]
        print(prov["gpu"], "fast SMs:", prov["fast_sms"])
        for g in prov.get("gpcs") or []:
            print(f"    GPC of {len(g):2d} SMs (clusters): {sum(k in prov['fast_sms'] for k in g):2d} fast")
        for row in doc["rows"]:
            print(json.dumps({k: v for k, v in row.items() if k != "cycles"}))
    else:
        ap.error("--out or --summary")
    return 0


if __name__ == "__main__":
    sys.exit(main())
