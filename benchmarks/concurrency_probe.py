"""A compute kernel beside an NCCL-like channel kernel on one GPU: how two kernels on two
streams share the SMs and the memory, for `gpusim.System`'s overlap of a kernel (stream
"compute") with a collective (stream "comm") on the same GPU (DEVIATIONS.md, row
"concurrency"). Run on a one-GPU machine (device kind nvidia-h200), from the repository root:

    python benchmarks/concurrency_probe.py --out FILE

Kernels: `programs.matmul_tiled` (compute-bound, many waves of 256-thread blocks),
`programs.vector_add` (DRAM-bound, many waves) and `channel_copy` here, a stand-in for
NCCL's channels: `channels` blocks of 512 threads, each copying its own contiguous part of
a buffer with 8-byte words (NCCL runs one block of 512 threads per channel). Each case is
timed with CUDA events from a common start: a one-thread gate kernel holds stream A until
every launch is queued, an event after it releases stream B, and the kernel meant to start
second waits 20 us more on its stream (a short sleep kernel), so which kernel holds the SMs
first is fixed. Cases: each kernel alone, then every (compute kernel, channels, order) with
order "comm_first", "comp_first" and "comp_first_high" (the channel kernel's stream at the
device's highest priority, as NCCL's stream can be). Five rounds, interleaved; records carry
the end time of each kernel from the common start. Provenance: GPU, driver, clocks, versions,
date, command. Needs numba-cuda and cupy (for streams with priorities and events).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402
from programs._matmul import TILE  # noqa: E402
from programs.matmul_tiled import matmul_tiled  # noqa: E402
from programs.vector_add import BLOCK, vector_add  # noqa: E402

THREADS = 512
OFFSET_US = 20


@cuda.jit
def channel_copy(src, dst):
    """Block b copies words [b * per, (b + 1) * per) of src into dst, 512 threads striding."""
    per = src.size // cuda.gridDim.x
    lo = cuda.blockIdx.x * per
    i = lo + cuda.threadIdx.x
    while i < lo + per:
        dst[i] = src[i]
        i += cuda.blockDim.x


@cuda.jit
def sleep_us(us):
    for _ in range(us):
        cuda.nanosleep(1000)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--channels", default="8,16,24,32")
    a = ap.parse_args(argv)
    import cupy as cp  # GPU machine only: CuPy / the CUDA driver are not installed on CPU machines

    channels = [int(c) for c in a.channels.split(",")]
    rng = np.random.default_rng(0)
    m, n, k = 1024, 2048, 2048
    mat = [cuda.to_device(rng.uniform(0.5, 1.5, s).astype(np.float32)) for s in ((m, k), (k, n))]
    mat.append(cuda.device_array((m, n), np.float32))
    nv = 1 << 27
    vec = [cuda.to_device(np.ones(nv, np.float32)) for _ in range(2)] + [cuda.device_array(nv, np.float32)]
    mm_grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    comps = {
        "matmul_tiled": (lambda s: matmul_tiled[mm_grid, (TILE, TILE), s](*mat),
                         {"m": m, "n": n, "k": k, "blocks": mm_grid[0] * mm_grid[1], "threads": TILE * TILE}),
        "vector_add": (lambda s: vector_add[(nv + BLOCK - 1) // BLOCK, BLOCK, s](*vec),
                       {"n": nv, "blocks": (nv + BLOCK - 1) // BLOCK, "threads": BLOCK}),
    }
    words = 1 << 25                                   # 256 MiB of 8-byte words, sized below
    src = cuda.to_device(np.arange(words, dtype=np.uint64))
    dst = cuda.device_array(words, np.uint64)
    lo, hi = cp.cuda.runtime.deviceGetStreamPriorityRange()
    sa, sb = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    sb_high = cp.cuda.Stream(non_blocking=True, priority=hi)
    ns = lambda s: cuda.external_stream(s.ptr)

    def comm_launch(c, nwords):
        return lambda s: channel_copy[c, THREADS, s](src[:nwords], dst[:nwords])

    def timed(first, second, stream_b=sb):
        """first on stream A (or alone), second on stream B 20 us later; ends in us from the gate."""
        e0, ea, eb = cp.cuda.Event(), cp.cuda.Event(), cp.cuda.Event()
        sleep_us[1, 1, ns(sa)](2000)
        e0.record(sa)
        stream_b.wait_event(e0)
        first[0](ns(sa if first[1] == "a" else stream_b))
        if second is not None:
            sleep_us[1, 1, ns(sa if second[1] == "a" else stream_b)](OFFSET_US)
            second[0](ns(sa if second[1] == "a" else stream_b))
        ea.record(sa)
        eb.record(stream_b)
        sa.synchronize()
        stream_b.synchronize()
        return 1e3 * cp.cuda.get_elapsed_time(e0, ea), 1e3 * cp.cuda.get_elapsed_time(e0, eb)

    for name, (launch, _) in comps.items():           # compile and warm
        timed((launch, "a"), None)
    timed((comm_launch(8, 1 << 20), "b"), None)
    # size each channel count's copy to about half the matmul's time
    t_mm = min(timed((comps["matmul_tiled"][0], "a"), None)[0] for _ in range(3))
    sizes = {}
    for c in channels:
        probe = 1 << 22
        t = min(timed((comm_launch(c, probe), "b"), None)[1] for _ in range(3))
        want = int(probe * 0.5 * t_mm / max(t, 1e-3))
        sizes[c] = max(c * 1024, min(words, want // c * c))
    records = []
    for rnd in range(a.rounds):
        for name, (launch, info) in comps.items():
            ta, _ = timed((launch, "a"), None)
            records.append({"case": "alone", "kernel": name, "round": rnd, "end_us": ta, **info})
        for c in channels:
            _, tb = timed((comm_launch(c, sizes[c]), "b"), None)
            records.append({"case": "alone", "kernel": "channel_copy", "channels": c, "bytes": 8 * sizes[c],
                            "round": rnd, "end_us": tb})
        for name, (launch, info) in comps.items():
            for c in channels:
                comm = comm_launch(c, sizes[c])
                for order in ("comm_first", "comp_first", "comp_first_high"):
                    stream_b = sb_high if order == "comp_first_high" else sb
                    if order == "comm_first":
                        tb_end = timed((comm, "b"), (launch, "a"), stream_b)
                    else:
                        tb_end = timed((launch, "a"), (comm, "b"), stream_b)
                    records.append({"case": order, "kernel": name, "channels": c, "bytes": 8 * sizes[c],
                                    "round": rnd, "comp_end_us": tb_end[0], "comm_end_us": tb_end[1],
                                    "offset_us": OFFSET_US, **info})
        print(f"round {rnd} done", flush=True)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    import numba  # GPU side: imported in the process that launches under ncu, not when the script is read
    prov = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": "python benchmarks/concurrency_probe.py " + " ".join(sys.argv[1:]),
            "nvidia_smi": smi, "numba": numba.__version__, "cupy": cp.__version__,
            "numba_cuda": __import__("importlib.metadata").metadata.version("numba-cuda"),
            "stream_priorities": [lo, hi], "threads_per_channel": THREADS, "offset_us": OFFSET_US,
            "timing": "CUDA events from a common start after a gate kernel; 'end_us' is the end of each "
                      "stream's work, the second kernel launched 20 us after the first"}
    with open(a.out, "w") as f:
        json.dump({"provenance": prov, "records": records}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
