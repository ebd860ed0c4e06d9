"""`python -m validate measure-multi`: NCCL collectives, peer copies and kernels that read or
write a peer GPU's memory, on this machine's GPUs; writes `validate/data/<gpu>x<n>_multi.json`.

Reproduce, on a machine with 2 or more NVIDIA GPUs joined by NVLink, from the repository root
(CuPy with NCCL, numba-cuda with numpy < 2.5; nothing of gpusim is imported):

    NCCL_NVLS_ENABLE=0 python -m validate measure-multi [--gpus 2,4] [--out FILE]

Method
- Collectives (nccl-tests' conventions): all_reduce, all_gather, reduce_scatter, broadcast,
  reduce, all_to_all (a group of send/recv pairs) and send_recv (each rank sends to the next
  and receives from the previous), float32, sum, root 0, sizes 64 KiB .. 1 GiB by powers of 2.
  Size is nccl-tests' `size`: the per-rank buffer for all_reduce/broadcast/reduce/send_recv,
  the gathered output for all_gather, the input for reduce_scatter, the whole send buffer for
  all_to_all. One process drives every GPU (`NcclCommunicator.initAll`), one stream per GPU.
  Each size: 5 warm-up calls, then N calls (N so that about 50 ms is spent, 5..200) captured
  into one CUDA graph per GPU where capture works (so Python's submission cost is not timed;
  `method` says "graph" or "eager"); time = the mean per call of the slowest GPU's
  event-to-event interval. algbw = size / time, busbw = algbw x nccl-tests' factor.
  Every collective's result is checked once against numpy at 1 MiB ("check").
- NCCL's own choices: a separate pass with `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING`
  runs each op and size once; its log (algorithm, protocol, channels per call) is kept whole.
- Forced algorithm/protocol: all_reduce with NCCL_ALGO in {Ring, Tree} x NCCL_PROTO in
  {LL, LL128, Simple}, each in its own process (NCCL reads them at initialisation).
- Peer copies (cudaMemcpyPeerAsync on the source GPU's stream, peer access enabled): GPU0 ->
  GPU1 one way, both ways at once, and on 4 GPUs GPU0 -> each peer in turn (one stream) and
  every GPU -> the next at once; host-timed over N back-to-back iterations.
- Peer kernels: `validate.microbench`'s bandwidth kernels (bw_read, bw_write, bw_copy) run on
  GPU0 over a buffer that lives on GPU1 (and, for reference, on GPU0), 256 MiB of int32,
  1024 x 256 threads, device arrays converted once; the median over 5 intervals of the
  mean time per launch of 10 back-to-back launches between two events (no host gap).
Provenance: `nvidia-smi` (names, driver, clocks), `nvidia-smi topo -m`, `nvidia-smi nvlink -s`,
NCCL, CuPy, numba versions, date, command.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
# nccl-tests' busbw factors (doc/PERFORMANCE.md): busbw = algbw * factor(n)
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
BACK_TO_BACK = 10            # peer-kernel launches per timed interval


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpus", default=None, help="comma list of GPU counts to measure (default: 2 and all GPUs)")
    p.add_argument("--out", type=Path, help="output JSON (default validate/data/<gpu>x<n>_multi.json)")
    p.add_argument("--max-bytes", type=int, default=MAX_BYTES, help="largest collective size (default 1 GiB)")
    p.add_argument("--skip", default="", help="comma list of parts to leave out: collectives, choices, forced, "
                   "copies, kernels")
    p.add_argument("--worker", choices=("forced", "choices"), help=argparse.SUPPRESS)
    p.add_argument("--worker-gpus", type=int, help=argparse.SUPPRESS)
    p.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)


def sizes(max_bytes: int = MAX_BYTES) -> list[int]:
    out, s = [], MIN_BYTES
    while s <= max_bytes:
        out.append(s)
        s *= 2
    return out


# ---- collectives --------------------------------------------------------------------------

class Ranks:
    """n GPUs in one process: a communicator, a stream and buffers per GPU."""

    def __init__(self, n: int):
        import cupy as cp
        from cupy.cuda import nccl
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


def _subprocess(kind: str, n: int, max_bytes: int, env_extra: dict, workdir: Path, timeout: float = 240):
    out = workdir / f"{kind}_{n}_{'_'.join(f'{k}={v}' for k, v in env_extra.items())}.json".replace("NCCL_", "")
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", **env_extra)
    cmd = [sys.executable, "-m", "validate", "measure-multi", "--worker", kind, "--worker-gpus", str(n),
           "--max-bytes", str(max_bytes), "--worker-out", str(out)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    recs = json.loads(out.read_text()) if out.exists() else []
    return recs, r.returncode, r.stdout + r.stderr


# ---- peer copies and peer kernels -------------------------------------------------------

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
    import cupy as cp
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
    import cupy as cp
    from numba import cuda

    from validate.microbench import bw_copy, bw_read, bw_write
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


# ---- provenance ----------------------------------------------------------------------------

def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    except Exception as e:                       # noqa: BLE001
        return f"{type(e).__name__}: {e}"


def provenance(argv: list[str]) -> dict:
    from importlib.metadata import version

    import cupy as cp
    from cupy.cuda import nccl
    q = "name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,memory.total,pci.bus_id"
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "NCCL_NVLS_ENABLE=0 python -m validate measure-multi " + " ".join(argv),
        "nvidia_smi_gpus": _run(["nvidia-smi", f"--query-gpu={q}", "--format=csv"]),
        "topology": _run(["nvidia-smi", "topo", "-m"]),
        "nvlink_status": _run(["nvidia-smi", "nvlink", "-s"]),
        "nccl_version": nccl.get_version(),
        "cupy": cp.__version__, "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
        "cuda_driver": cp.cuda.runtime.driverGetVersion(),
        "numba_cuda": version("numba-cuda"), "numpy": np.__version__, "python": platform.python_version(),
        "env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")},
        "gpu_count": cp.cuda.runtime.getDeviceCount(),
    }


def run(args) -> int:
    if args.worker:
        f = worker_forced if args.worker == "forced" else worker_choices
        recs = f(args.worker_gpus, args.max_bytes)
        args.worker_out.write_text(json.dumps(recs))
        return 0
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    import cupy as cp
    ngpu = cp.cuda.runtime.getDeviceCount()
    if ngpu < 2:
        print(f"measure-multi needs at least 2 GPUs; this machine has {ngpu}", file=sys.stderr)
        return 2
    counts = [int(c) for c in args.gpus.split(",")] if args.gpus else sorted({2, ngpu})
    skip = set(filter(None, args.skip.split(",")))
    argv = sys.argv[2:] if len(sys.argv) > 2 else []
    prov = provenance(argv)
    name = re.sub(r"[^a-z0-9]+", "", prov["nvidia_smi_gpus"].splitlines()[1].split(",")[0].lower()
                  .replace("nvidia", "")) if prov["nvidia_smi_gpus"].count("\n") > 1 else "gpu"
    out_path = args.out or ROOT / "validate" / "data" / f"{name}x{ngpu}_multi.json"
    data = {"provenance": prov, "collectives": [], "forced": [], "choices": {}, "copies": [], "kernels": [],
            "errors": []}
    t0 = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", flush=True)

    def save():
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(data, indent=1))

    def part(label, f):
        if label in skip:
            return
        try:
            f()
        except Exception as e:                   # noqa: BLE001 - keep what the other parts measured
            data["errors"].append(f"{label}: {type(e).__name__}: {e}\n{traceback.format_exc()}")
            log(f"{label} failed: {type(e).__name__}: {e}")
        save()

    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / "gpusim_measure_multi"
    workdir.mkdir(parents=True, exist_ok=True)

    def choices():
        for n in counts:
            recs, rc, text = _subprocess("choices", n, args.max_bytes,
                                         {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,TUNING,GRAPH"}, workdir)
            data["choices"][str(n)] = {"returncode": rc, "log": text[-400_000:]}
            log(f"choices x{n}: rc {rc}, {len(text)} chars of log")

    def forced():
        for n in counts:
            for algo in ("Ring", "Tree"):
                for proto in ("LL", "LL128", "Simple"):
                    recs, rc, text = _subprocess("forced", n, args.max_bytes,
                                                 {"NCCL_ALGO": algo, "NCCL_PROTO": proto}, workdir)
                    data["forced"] += recs
                    if rc:
                        data["errors"].append(f"forced {algo}/{proto} x{n}: rc {rc}: {text[-2000:]}")
                    ok = [r for r in recs if "busbw_GBps" in r]
                    log(f"forced {algo}/{proto} x{n}: rc {rc}, {len(ok)} sizes, "
                        f"busbw at max {ok[-1]['busbw_GBps'] if ok else float('nan'):.1f}")

    def collectives():
        for n in counts:
            data["collectives"] += measure_collectives(n, args.max_bytes, log)

    part("collectives", collectives)
    part("copies", lambda: data.__setitem__("copies", measure_copies(ngpu, log)))
    part("kernels", lambda: data.__setitem__("kernels", measure_peer_kernels(log)))
    part("choices", choices)
    part("forced", forced)
    log(f"wrote {out_path}")
    return 0
