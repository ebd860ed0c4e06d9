"""Peer copies and kernels that read or write a peer GPU's memory, timed on this machine's
GPUs for `python -m validate measure-multi` (validate/measure_multi.py).

- Peer copies (cudaMemcpyPeerAsync on the source GPU's stream, peer access enabled): GPU0 ->
  GPU1 one way, both ways at once, and on 4 GPUs GPU0 -> each peer in turn (one stream) and
  every GPU -> the next at once; host-timed over N back-to-back iterations.
- Peer kernels: `validate.microbench`'s bandwidth kernels (bw_read, bw_write, bw_copy) run on
  GPU0 over a buffer that lives on GPU1 (and, for reference, on GPU0), 256 MiB of int32,
  1024 x 256 threads, device arrays converted once; the median over 5 intervals of the
  mean time per launch of 10 back-to-back launches between two events (no host gap).
Needs CuPy and numba-cuda; nothing of gpusim is imported.
"""
from __future__ import annotations

import time

import numpy as np

BACK_TO_BACK = 10            # peer-kernel launches per timed interval


def _enable_peer_access(cp, ngpu: int) -> None:
    for a in range(ngpu):
        with cp.cuda.Device(a):
            for b in range(ngpu):
                if a != b:
                    try:
                        cp.cuda.runtime.deviceEnablePeerAccess(b)
                    except Exception:            # noqa: BLE001 - already enabled
                        pass


def measure_copies(ngpu: int, log) -> list[dict]:
    import cupy as cp  # lazy: cupy is a heavy dependency, loaded only on the GPU machine
    rt = cp.cuda.runtime
    _enable_peer_access(cp, ngpu)
    size_max = 1 << 30
    bufs = []
    for d in range(ngpu):
        with cp.cuda.Device(d):
            bufs.append((cp.ones(size_max // 4, cp.float32), cp.zeros(size_max // 4, cp.float32),
                         cp.cuda.Stream(non_blocking=True)))
    patterns = {"one_way": [(0, 1)], "both_ways": [(0, 1), (1, 0)]}
    if ngpu >= 4:
        patterns["one_to_all"] = [(0, p) for p in range(1, ngpu)]
        patterns["ring"] = [(d, (d + 1) % ngpu) for d in range(ngpu)]
    out = []
    for name, pairs in patterns.items():
        for nbytes in [1 << k for k in range(16, 31, 2)]:
            def issue():
                for src, dst in pairs:
                    # the copy runs on the source GPU's stream
                    with cp.cuda.Device(src):
                        rt.memcpyPeerAsync(bufs[dst][1].data.ptr, dst, bufs[src][0].data.ptr, src, nbytes,
                                           bufs[src][2].ptr)

            def sync():
                for src, _ in pairs:
                    bufs[src][2].synchronize()
            for _ in range(3):
                issue()
            sync()
            t = time.perf_counter()
            issue()
            sync()
            iters = int(min(200, max(5, 0.05 / max(time.perf_counter() - t, 1e-6))))
            t = time.perf_counter()
            for _ in range(iters):
                issue()
            sync()
            dt = (time.perf_counter() - t) / iters
            rec = {"pattern": name, "pairs": pairs, "bytes": nbytes, "time_us": dt * 1e6, "iters": iters,
                   "GBps_per_copy": nbytes / dt / 1e9, "GBps_total": nbytes * len(pairs) / dt / 1e9}
            out.append(rec)
            log(f"copy {name:10s} {nbytes:>11d} B {rec['time_us']:10.1f} us {rec['GBps_per_copy']:7.1f} GB/s per copy")
    return out


def measure_peer_kernels(log) -> list[dict]:
    import cupy as cp  # lazy: cupy is a heavy dependency, loaded only on the GPU machine
    from numba import cuda  # lazy: numba.cuda is a heavy dependency, loaded only on the GPU machine

    from validate.microbench import bw_copy, bw_read, bw_write  # lazy: defines numba.cuda kernels (heavy), GPU side only
    _enable_peer_access(cp, 2)
    n = (256 << 20) // 4
    grid, block = 1024, 256
    T = grid * block
    out = []
    for where in (1, 0):
        with cp.cuda.Device(where):
            x = cp.arange(n, dtype=cp.int32)
            y = cp.full(n, -1, cp.int32)
        with cp.cuda.Device(0):
            acc = cp.zeros(T, cp.int64)
            local = cp.arange(n, dtype=cp.int32)
        cuda.select_device(0)
        x, y, acc, local = (cuda.as_cuda_array(v) for v in (x, y, acc, local))   # convert once, not per launch
        cases = {
            "read": (bw_read, (x, acc, 1)),
            "write": (bw_write, (y, 1)),
            "copy_from_peer": (bw_copy, (x, local, 1)),
            "copy_to_peer": (bw_copy, (local, y, 1)),
        }
        for name, (kern, args) in cases.items():
            with cp.cuda.Device(0):
                kern[grid, block](*args)
                cuda.synchronize()
                reps = []
                for _ in range(5):               # back-to-back launches: the GPU never waits for the host
                    e0, e1 = cuda.event(), cuda.event()
                    e0.record()
                    for _ in range(BACK_TO_BACK):
                        kern[grid, block](*args)
                    e1.record()
                    e1.synchronize()
                    reps.append(cuda.event_elapsed_time(e0, e1) * 1e3 / BACK_TO_BACK)
                t_us = float(np.median(reps))
            rec = {"kernel": kern.__name__ if hasattr(kern, "__name__") else str(kern), "case": name,
                   "buffer_gpu": where, "launch_gpu": 0, "bytes": 4 * n, "grid": [grid], "block": [block],
                   "time_us": t_us, "GBps": 4 * n / (t_us * 1e-6) / 1e9, "times_us": reps}
            out.append(rec)
            log(f"kernel {name:15s} buffer on GPU{where}: {t_us:9.1f} us {rec['GBps']:7.1f} GB/s")
        del x, y, acc, local
    return out
