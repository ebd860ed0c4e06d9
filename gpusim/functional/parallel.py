"""One launch on several cores: batches of blocks executed by forked worker processes.

The blocks of a launch run in batches (`PreparedLaunch.blocks_per_batch`); one core runs
them in order. With `workers` > 1 the batches are handed out one at a time to forked
processes that share the launch's global memory (an anonymous shared mapping replaces the
heap's array before the fork) and keep everything else private: registers, shared and
local memory, counters. When all batches are done the parent adds up the workers'
counters (integer sums: the same totals in any order). The result equals one core's
whenever blocks do not communicate: no block reads what another block of the launch
writes, and no two blocks write the same byte (CUDA gives such programs no defined
result without atomics or fences either). A kernel's first parallel launch in a process runs
its first batch in the parent before forking, so that what it loads (numba's CPU target and
the fast core's compiled kernels: about 4 s, which every worker paid again at every launch
before) is inherited by the workers.

Kernels whose blocks may communicate run on one core, with the reason recorded
(`plan`): global or generic atomics (their order, and every old value they return,
follow the batch order), memory fences and volatile or strong (`.relaxed`/`.acquire`/
`.release`) global accesses (flags between blocks), the grid barrier (a cooperative
launch is one batch), device `malloc` (one allocator for all blocks), a sanitizer
(racecheck and initcheck follow accesses across blocks), or fewer than two batches. A
progress callback hears of every batch as it completes (blocks done), not of steps.

An error in a batch is reported as one core reports it: workers go on past a failing
batch's neighbours, and the parent raises the error of the lowest failing batch (one
core would have stopped there; the batches before it ran exactly as on one core).

The number of workers: `launch(..., workers=N)`, else the environment variable
GPUSIM_WORKERS, else the CPUs this process may use (`os.sched_getaffinity`). The sweep's
own worker processes set it to 1.
"""
from __future__ import annotations

import mmap
import multiprocessing as mp
import multiprocessing.connection as mp_connection
import os
import pickle
import traceback

import numpy as np

from gpusim.errors import GpusimError, LaunchError
from gpusim.functional.communication import blocks_communicate

def default_workers() -> int:
    """GPUSIM_WORKERS, else the number of CPUs this process may run on."""
    env = os.environ.get("GPUSIM_WORKERS")
    if env:
        try:
            n = int(env)
        except ValueError:
            raise LaunchError(f"GPUSIM_WORKERS must be a positive integer, got {env!r}") from None
        if n < 1:
            raise LaunchError(f"GPUSIM_WORKERS must be a positive integer, got {env!r}")
        return n
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                     # not Linux
        return os.cpu_count() or 1


def plan(prepared, nbatches: int, workers: int | None) -> tuple[int, str]:
    """(workers to use, why that many) for a functional run of `nbatches` batches."""
    want = default_workers() if workers is None else workers
    if want <= 1:
        return 1, "one worker requested" if workers is not None or os.environ.get("GPUSIM_WORKERS") else \
            "one CPU available"
    if nbatches < 2:
        return 1, "the launch is one batch of blocks"
    if prepared.sanitizer is not None:
        return 1, "a sanitizer tool follows accesses across blocks"
    why = blocks_communicate(prepared)
    if why is not None:
        return 1, why
    n = min(want, nbatches)
    return n, f"{n} worker processes over {nbatches} batches"


def _share(heap) -> mmap.mmap:
    """Move `heap.data` into an anonymous shared mapping (inherited by forked children)."""
    size = max(heap.data.size, 1)
    mm = mmap.mmap(-1, size, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
    shared = np.frombuffer(mm, np.uint8, count=heap.data.size)
    shared[:] = heap.data
    heap.data = shared
    return mm


def _pack_error(e: BaseException) -> bytes:
    """An exception for the parent: its class, message and attributes (gpusim's errors take
    keyword arguments, which plain pickling of the exception does not replay)."""
    try:
        return pickle.dumps((type(e), e.args, dict(getattr(e, "__dict__", {}))))
    except Exception:
        return pickle.dumps((GpusimError, (f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}",), {}))


def _unpack_error(blob: bytes) -> BaseException:
    cls, args, attrs = pickle.loads(blob)
    e = cls.__new__(cls)
    Exception.__init__(e, *args)
    e.__dict__.update(attrs)
    return e


def _worker(prepared, firsts, per_batch, nblocks, next_batch, conn, max_steps) -> None:
    counters = prepared.counters                   # the parent's, copied by fork: count from zero here
    for arr in (counters.block_warps, counters.block_threads, counters.loop_back, counters.taken_threads,
                *counters.per_instr.values()):
        arr[:] = 0
    failures = []
    try:
        with np.errstate(all="ignore"):
            while True:
                with next_batch.get_lock():
                    k = next_batch.value
                    next_batch.value += 1
                if k >= len(firsts):
                    break
                if failures and k > failures[0][0]:
                    continue                       # one core would have stopped before this batch
                first = firsts[k]
                try:
                    prepared.run_batch(first, min(per_batch, nblocks - first), max_steps=max_steps)
                except BaseException as e:         # noqa: BLE001  (reported to the parent, re-raised there)
                    failures.append((k, _pack_error(e)))
                    continue
                conn.send(("batch", min(per_batch, nblocks - first), None))
        conn.send(("ok", {"block_warps": counters.block_warps, "block_threads": counters.block_threads,
                          "loop_back": counters.loop_back, "taken_threads": counters.taken_threads,
                          **counters.per_instr}, failures))
    except BaseException as e:                     # noqa: BLE001
        conn.send(("crash", None, [(-1, _pack_error(e))]))
    finally:
        conn.close()


def run(prepared, per_batch: int, workers: int, max_steps: int | None = None, on_blocks=None) -> None:
    """Execute every block of `prepared` in batches of `per_batch` blocks on `workers`
    forked processes (see module docstring); counters are added into `prepared.counters`.
    `on_blocks(done)` is called with the number of blocks done whenever a batch completes."""
    geo = prepared.geometry
    firsts = list(range(0, geo.nblocks, per_batch))
    start = 0
    dk = prepared.decoded
    if getattr(dk, "warm_pid", None) != os.getpid():
        # The kernel's first parallel launch in this process runs its first batch here: what that
        # loads or compiles (numba's CPU target and the fast load/store unit's kernels from numba's
        # cache, ~4 s on the 2-core machine; ALU segment variants) is then inherited by the forked
        # workers, instead of being loaded again in each worker at every launch.
        with np.errstate(all="ignore"):
            prepared.run_batch(0, min(per_batch, geo.nblocks), max_steps=max_steps)
        dk.warm_pid = os.getpid()
        start = 1
        if on_blocks is not None:
            on_blocks(min(per_batch, geo.nblocks))
        if len(firsts) - start < 2:             # one batch left: no worker to fork for it
            with np.errstate(all="ignore"):
                for first in firsts[start:]:
                    prepared.run_batch(first, min(per_batch, geo.nblocks - first), max_steps=max_steps)
            if on_blocks is not None:
                on_blocks(geo.nblocks)
            return
        workers = min(workers, len(firsts) - start)
    heap = prepared.memory.global_heap
    mm = _share(heap)
    ctx = mp.get_context("fork")
    next_batch = ctx.Value("q", start)
    procs, conns = [], []
    for _ in range(workers):
        recv, send = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_worker, args=(prepared, firsts, per_batch, geo.nblocks, next_batch, send, max_steps),
                        daemon=True)
        p.start()
        send.close()
        procs.append(p)
        conns.append(recv)
    results, failures = [], []
    done = min(per_batch, geo.nblocks) if start else 0
    try:
        waiting = list(conns)
        while waiting:
            for conn in mp_connection.wait(waiting):
                try:
                    kind, counters, fails = conn.recv()
                except EOFError:
                    kind, counters, fails = "crash", None, [(-1, _pack_error(GpusimError(
                        f"kernel {prepared.name}: a worker process of the parallel functional run died")))]
                if kind == "batch":
                    done += counters
                    if on_blocks is not None:
                        on_blocks(done)
                    continue
                waiting.remove(conn)
                failures.extend(fails)
                if counters is not None:
                    results.append(counters)
    finally:
        for p in procs:
            p.join()
    heap.data = np.array(heap.data)                 # back to private memory
    try:
        mm.close()
    except BufferError:                            # a view of the mapping is still alive: it closes with it
        pass
    if failures:
        raise _unpack_error(min(failures, key=lambda f: f[0])[1])
    c = prepared.counters
    for r in results:
        c.block_warps += r.pop("block_warps")
        c.block_threads += r.pop("block_threads")
        c.loop_back += r.pop("loop_back")
        c.taken_threads += r.pop("taken_threads")
        for k, v in r.items():
            if k in c.per_instr:
                c.per_instr[k] += v
            else:                                   # a counter only kernels with tensor/async ops have
                c.per_instr[k] = v.copy()
