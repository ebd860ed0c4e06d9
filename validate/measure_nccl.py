"""NCCL collectives timed on this machine's GPUs, nccl-tests' way, for `python -m validate
measure-multi` (validate/measure_multi.py) and the NCCL probes under benchmarks/.

All of a call's ranks are driven by one process (`NcclCommunicator.initAll`), one stream per
GPU. Conventions (nccl-tests'): all_reduce, all_gather, reduce_scatter, broadcast, reduce,
all_to_all (a group of send/recv pairs) and send_recv (each rank sends to the next and receives
from the previous), float32, sum, root 0. Size is nccl-tests' `size`: the per-rank buffer for
all_reduce/broadcast/reduce/send_recv, the gathered output for all_gather, the input for
reduce_scatter, the whole send buffer for all_to_all. `Ranks.timed`: 5 warm-up calls, then N
calls (N so that about 50 ms is spent, 5..200) captured into one CUDA graph per GPU where
capture works (so Python's submission cost is not timed; `method` says "graph" or "eager");
time = the mean per call of the slowest GPU's event-to-event interval; algbw = size / time,
busbw = algbw x nccl-tests' factor. `Ranks.check` compares a call's result with numpy.
Needs CuPy with NCCL; nothing of gpusim is imported.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

# The ops and nccl-tests' busbw factors (doc/PERFORMANCE.md): busbw = algbw * factor(n). The same as
# gpusim.collectives.conventions, repeated because this module runs on the GPU machine without gpusim's
# dependencies (tests/validate/test_multi_vs_measured.py checks the two agree).
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
BUSBW_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
MIN_BYTES, MAX_BYTES = 64 << 10, 1 << 30


def sizes(max_bytes: int = MAX_BYTES) -> list[int]:
    out, s = [], MIN_BYTES
    while s <= max_bytes:
        out.append(s)
        s *= 2
    return out



class Ranks:
    """n GPUs in one process: a communicator, a stream and buffers per GPU."""

    def __init__(self, n: int):
        import cupy as cp  # lazy: cupy is a heavy dependency, loaded only on the GPU machine
        from cupy.cuda import nccl  # lazy: cupy is a heavy dependency, loaded only on the GPU machine
        self.cp, self.nccl, self.n = cp, nccl, n
        self.comms = nccl.NcclCommunicator.initAll(list(range(n)))
        self.streams = []
        for d in range(n):
            with cp.cuda.Device(d):
                self.streams.append(cp.cuda.Stream(non_blocking=True))
        self.buffers: dict[int, tuple] = {}

    def bufs(self, nbytes: int):
        """(send, recv) float32 buffers of nbytes on every GPU, reused across sizes."""
        cp = self.cp
        cap = max(self.buffers) if self.buffers else 0
        if cap < nbytes:
            self.buffers.clear()
            out = []
            for d in range(self.n):
                with cp.cuda.Device(d):
                    out.append((cp.ones(nbytes // 4, cp.float32) * (d + 1), cp.zeros(nbytes // 4, cp.float32)))
            self.buffers[nbytes] = tuple(out)
            cap = nbytes
        return self.buffers[cap]

    def call(self, op: str, nbytes: int) -> None:
        """One collective of nccl-tests size `nbytes` on every rank (one NCCL group)."""
        nccl, n = self.nccl, self.n
        f32, add = nccl.NCCL_FLOAT32, nccl.NCCL_SUM
        count = nbytes // 4
        bufs = self.bufs(nbytes)
        nccl.groupStart()
        for r in range(n):
            c, s = self.comms[r], self.streams[r].ptr
            send, recv = bufs[r][0].data.ptr, bufs[r][1].data.ptr
            if op == "all_reduce":
                c.allReduce(send, recv, count, f32, add, s)
            elif op == "all_gather":
                c.allGather(send, recv, count // n, f32, s)
            elif op == "reduce_scatter":
                c.reduceScatter(send, recv, count // n, f32, add, s)
            elif op == "broadcast":
                c.broadcast(send, recv, count, f32, 0, s)
            elif op == "reduce":
                c.reduce(send, recv, count, f32, add, 0, s)
            elif op == "all_to_all":
                chunk = count // n
                for p in range(n):
                    c.send(send + 4 * chunk * p, chunk, f32, p, s)
                    c.recv(recv + 4 * chunk * p, chunk, f32, p, s)
            elif op == "send_recv":
                c.send(send, count, f32, (r + 1) % n, s)
                c.recv(recv, count, f32, (r - 1) % n, s)
            else:
                raise ValueError(op)
        nccl.groupEnd()

    def sync(self):
        for s in self.streams:
            s.synchronize()

    def check(self, op: str, nbytes: int = 1 << 20) -> str:
        """Run once on known inputs (rank r holds r+1 everywhere) and compare with numpy."""
        cp, n = self.cp, self.n
        count = nbytes // 4
        bufs = self.bufs(nbytes)
        for r in range(n):
            with cp.cuda.Device(r):
                bufs[r][0][:count] = cp.arange(count, dtype=cp.float32) % 97 + (r + 1)
                bufs[r][1][:count] = -1
        self.sync()
        for d in range(n):
            with cp.cuda.Device(d):
                cp.cuda.Device(d).synchronize()
        self.call(op, nbytes)
        self.sync()
        base = (np.arange(count, dtype=np.float32) % 97)
        send = [base + (r + 1) for r in range(n)]
        got = [cp.asnumpy(bufs[r][1][:count]) for r in range(n)]
        chunk = count // n
        if op == "all_reduce":
            want = [sum(send)] * n
        elif op == "all_gather":
            want = [np.concatenate([send[r][:chunk] for r in range(n)])] * n
        elif op == "reduce_scatter":
            total = sum(send)
            want = [np.concatenate([total[r * chunk:(r + 1) * chunk], got[r][chunk:]]) for r in range(n)]
        elif op == "broadcast":
            want = [send[0]] * n
        elif op == "reduce":
            want = [sum(send)] + got[1:]
        elif op == "all_to_all":
            want = [np.concatenate([send[p][chunk * r:chunk * (r + 1)] for p in range(n)]) for r in range(n)]
        elif op == "send_recv":
            want = [send[(r - 1) % n] for r in range(n)]
        else:
            raise ValueError(op)
        for r in range(n):
            if len(want[r]) < count:
                want[r] = np.concatenate([want[r], got[r][len(want[r]):]])
        ok = all(np.array_equal(got[r][:count], want[r][:count]) for r in range(n))
        for r in range(n):                       # restore the plain inputs for timing
            with cp.cuda.Device(r):
                bufs[r][0].fill(r + 1)
        self.sync()
        return "passed" if ok else "FAILED"

    def timed(self, op: str, nbytes: int, budget_s: float = 0.05) -> dict:
        cp, n = self.cp, self.n
        for _ in range(5):
            self.call(op, nbytes)
        self.sync()
        t = time.perf_counter()
        self.call(op, nbytes)
        self.sync()
        one = time.perf_counter() - t
        iters = int(min(200, max(5, budget_s / max(one, 1e-6))))
        method = "graph"
        try:
            graphs = self._capture(op, nbytes, iters)
        except Exception as e:                   # noqa: BLE001 - eager timing instead
            method, graphs = f"eager ({type(e).__name__}: {e})"[:200], None
            self.sync()
        starts, ends = [], []
        for d in range(n):
            with cp.cuda.Device(d):
                starts.append(cp.cuda.Event())
                ends.append(cp.cuda.Event())
        for d in range(n):
            with cp.cuda.Device(d):
                starts[d].record(self.streams[d])
        if graphs:
            for d in range(n):
                with cp.cuda.Device(d):
                    graphs[d].launch(self.streams[d])
        else:
            for _ in range(iters):
                self.call(op, nbytes)
        for d in range(n):
            with cp.cuda.Device(d):
                ends[d].record(self.streams[d])
        self.sync()
        per_gpu = []
        for d in range(n):
            with cp.cuda.Device(d):
                per_gpu.append(cp.cuda.get_elapsed_time(starts[d], ends[d]) * 1e3 / iters)
        t_us = max(per_gpu)
        algbw = nbytes / (t_us * 1e-6) / 1e9
        return {"op": op, "gpus": n, "bytes": nbytes, "dtype": "float32", "time_us": t_us,
                "algbw_GBps": algbw, "busbw_GBps": algbw * BUSBW_FACTOR[op](n), "iters": iters, "method": method,
                "time_us_per_gpu": per_gpu}

    def _capture(self, op: str, nbytes: int, iters: int):
        cp, n = self.cp, self.n
        for d in range(n):
            with cp.cuda.Device(d):
                self.streams[d].begin_capture()
        try:
            for _ in range(iters):
                self.call(op, nbytes)
        finally:
            graphs, failed = [], None
            for d in range(n):
                with cp.cuda.Device(d):
                    try:
                        graphs.append(self.streams[d].end_capture())
                    except Exception as e:       # noqa: BLE001 - end every capture, then report
                        failed = failed or e
            if failed:
                raise failed
        for d in range(n):                       # a warm launch (the first one uploads the graph)
            with cp.cuda.Device(d):
                graphs[d].launch(self.streams[d])
        self.sync()
        return graphs


def measure_collectives(n: int, max_bytes: int, log) -> list[dict]:
    ranks = Ranks(n)
    out = []
    for op in OPS:
        check = "error"
        try:
            check = ranks.check(op)
        except Exception as e:                   # noqa: BLE001
            log(f"check {op} x{n}: {type(e).__name__}: {e}")
        for nbytes in sizes(max_bytes):
            try:
                rec = ranks.timed(op, nbytes)
                rec["check"] = check
                out.append(rec)
                log(f"{op:15s} x{n} {nbytes:>11d} B {rec['time_us']:10.2f} us busbw {rec['busbw_GBps']:7.1f} GB/s "
                    f"{rec['method'][:5]}")
            except Exception as e:               # noqa: BLE001
                log(f"{op} x{n} {nbytes}: {type(e).__name__}: {e}")
                out.append({"op": op, "gpus": n, "bytes": nbytes, "error": f"{type(e).__name__}: {e}"})
    return out


def worker_forced(n: int, max_bytes: int) -> list[dict]:
    """all_reduce timings under this process's NCCL_ALGO / NCCL_PROTO."""
    ranks = Ranks(n)
    out = []
    for nbytes in sizes(max_bytes):
        try:
            rec = ranks.timed("all_reduce", nbytes, budget_s=0.02)
        except Exception as e:                   # noqa: BLE001
            rec = {"op": "all_reduce", "gpus": n, "bytes": nbytes, "error": f"{type(e).__name__}: {e}"}
        rec["algorithm_forced"] = os.environ.get("NCCL_ALGO")
        rec["protocol_forced"] = os.environ.get("NCCL_PROTO")
        out.append(rec)
    return out


def worker_choices(n: int, max_bytes: int) -> list[dict]:
    ranks = Ranks(n)
    done = []
    for op in OPS:
        for nbytes in sizes(max_bytes):
            sys.stderr.write(f"GPUSIM-CALL {op} {n} {nbytes}\n")
            sys.stderr.flush()
            ranks.call(op, nbytes)
            ranks.sync()
            done.append({"op": op, "gpus": n, "bytes": nbytes})
    return done
