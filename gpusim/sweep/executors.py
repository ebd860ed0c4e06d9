"""Where a sweep's points run: this process, local worker processes, or a Dask cluster.

Every point is independent and deterministic, so where and in which order it runs changes
no number. The order does change the cost: the points that share one recording (same
program, size and functional fields: `Task.group`) wait until one of them, the group's
leader (its point with the fewest SMs: `order`), has recorded the functional run, then
replay it from the disk cache. So leaders go first (all groups' leaders in parallel) and
each group's other points are handed out as soon as its leader is done; a worker that would
otherwise wait (fewer groups than workers) takes a group's next point at once and records
the run again itself (the later of the two recordings stays on disk: either serves every
point, a smaller one with more blocks to execute).

- `workers=1`: in this process, in that order.
- `workers=N`: a `ProcessPoolExecutor` of N forked processes.
- `dask="local"`: a `distributed.LocalCluster` of `workers` single-threaded processes (2 if
  not given, `local_cluster`); `dask="tcp://host:8786"`: the scheduler at that address. Its
  workers need gpusim (and the programs) installed; on other machines they record once per
  machine where they do not share the cache directory.

Dask's nanny starts its workers with `MALLOC_TRIM_THRESHOLD_=65536` in their environment
(`distributed.nanny.pre-spawn-environ`), which also fixes glibc's mmap threshold at 128 KiB:
every array of that size or more is then a fresh mapping whose pages fault in anew, and a
point runs ~15% slower (vector_add 262144: 74 against 63 ms a point, in a process started
with it and without). `local_cluster` leaves that variable out; workers of a cluster of your
own run at full speed when started with it left out too (the same dask config key).
"""
from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import pickle
import signal
import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from gpusim.errors import ConfigError, WorkerLost
from gpusim.sweep.point import run_task


def order(tasks: list) -> tuple[list, dict]:
    """(leaders, {group: [followers]}): a group's leader is its point with the fewest SMs (the
    first such in task order), the others follow in task order. Sampled timing simulates a
    fixed number of SMs for as many waves as the grid takes on the whole GPU, so fewer SMs time
    more of the grid's blocks (transpose_shared 1024^2: 125 at 66 SMs, 63 at 132, which are
    among those 125): recording there, the other points find the blocks they time recorded
    instead of executing them (`streams.ReplaySource`)."""
    groups: dict = {}
    for t in tasks:
        groups.setdefault(t.group, []).append(t)
    leaders, follow = [], {}
    for g, ts in groups.items():
        lead = min(ts, key=lambda t: t.spec.sm_count)
        leaders.append(lead)
        rest = [t for t in ts if t is not lead]
        if rest:
            follow[g] = rest
    return leaders, follow


def run_serial(tasks: list, sink=None) -> list[dict]:
    """`sink(row)` (optional) gets every row as soon as it is finished (sweep: stores it, moves
    the progress bar)."""
    leaders, follow = order(tasks)
    rows = []
    for t in leaders + [f for fs in follow.values() for f in fs]:
        rows.append(run_task(t))
        if sink:
            sink(rows[-1])
    return rows


def _scheduled(submit, wait_first, tasks: list, sink=None, slots: int = 1) -> list[dict]:
    """Leaders first; a group's other points once its leader is done. Where fewer leaders
    than `slots` (the workers) would leave workers idle, those take further points of the
    groups at once, round-robin, and record their own copy of the functional run instead of
    waiting (same results; a worker never idles behind a recording)."""
    leaders, follow = order(tasks)
    pending = {submit(t): t for t in leaders}
    groups = [g for g in follow if follow[g]]
    while len(pending) < slots and groups:
        for g in list(groups):
            if len(pending) >= slots:
                break
            t = follow[g].pop(0)
            pending[submit(t)] = t
            if not follow[g]:
                groups.remove(g)
    rows = []
    try:
        while pending:
            done = wait_first(list(pending))
            for f in done:
                t = pending.pop(f)
                rows.append(f.result())
                if sink:
                    sink(rows[-1])
                for g in follow.pop(t.group, ()):
                    pending[submit(g)] = g
    except BrokenProcessPool:
        raise WorkerLost("a sweep worker process died (killed, or out of memory) while running a point") from None
    return rows


def _dumps(task) -> bytes:
    """A task as bytes: cloudpickle (shipped with dask) where installed, so a Launch of a kernel
    or check function defined in __main__ or a notebook reaches the workers; else pickle."""
    try:
        import cloudpickle  # optional: cloudpickle ships with dask (the sweep extra)
    except ImportError:                           # pragma: no cover - installed with the sweep extra
        return pickle.dumps(task)
    return cloudpickle.dumps(task)


def _run_pickled(blob: bytes) -> dict:
    return run_task(pickle.loads(blob))


def _worker_init(parent: int) -> None:
    """A forked worker: its launches run on one core (GPUSIM_WORKERS=1); Ctrl-C is the parent's to handle (it stops the workers); SIGTERM ends
    the worker (the parent sees a dead worker); the worker ends with its parent, even one
    killed by SIGKILL (Linux: PR_SET_PDEATHSIG), instead of waiting for work forever."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.environ["GPUSIM_WORKERS"] = "1"        # points already use every worker: each point's functional run keeps to one core
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)     # PR_SET_PDEATHSIG
        except (OSError, AttributeError):                                   # pragma: no cover - no prctl
            pass
    if os.getppid() != parent:                                              # the parent died before prctl
        os._exit(1)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Stop `pool` now: pending points cancelled, running ones' workers terminated."""
    procs = list((getattr(pool, "_processes", None) or {}).values())   # where ProcessPoolExecutor keeps them
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(5)
        if p.is_alive():                                          # pragma: no cover - ignored SIGTERM
            p.kill()
            p.join()


def run_processes(tasks: list, workers: int, sink=None) -> list[dict]:
    """The forked workers start from this process's objects frozen (`gc.freeze()`, as Python's
    gc documentation advises before a fork): otherwise each worker's first full collection
    writes to every inherited object's header and so copies the parent's pages one by one
    (64-point vector_add sweep on 2 workers: 2.48 s against 2.82, medians of 4). The parent
    unfreezes afterwards unless it was frozen before (`replay.timed_launch` freezes once).
    Stopped by an exception (Ctrl-C, SIGTERM, a full disk in `sink`), the workers are
    terminated at once; a worker that dies is a WorkerLost naming the points it may have run."""
    ctx = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    was_frozen = gc.get_freeze_count() > 0
    gc.freeze()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init,
                               initargs=(os.getpid(),))
    try:
        rows = _scheduled(lambda t: pool.submit(_run_pickled, _dumps(t)),
                          lambda fs: wait(fs, return_when=FIRST_COMPLETED).done, tasks, sink, workers)
        pool.shutdown(wait=True)
        return rows
    finally:
        _stop(pool)
        if not was_frozen:
            gc.unfreeze()


def run_dask(tasks: list, address: str, workers: int | None, sink=None) -> list[dict]:
    try:
        from distributed import Client  # optional: dask.distributed (the sweep extra), for --dask
    except ImportError as e:                      # pragma: no cover - a dependency of the sweep extra
        raise ConfigError("--dask needs dask.distributed: pip install 'dask[distributed]' "
                          "(or pip install -e '.[sweep]')") from e
    cluster = None
    if address == "local":
        cluster = local_cluster(workers or 2)
        client = Client(cluster)
    else:
        client = Client(address)
    try:
        return run_on_client(client, tasks, sink)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def local_cluster(workers: int = 2):
    """A `distributed.LocalCluster` of `workers` single-threaded worker processes, started
    without dask's `MALLOC_TRIM_THRESHOLD_` (module docstring)."""
    import dask  # optional: dask (the sweep extra), for --dask
    from distributed import LocalCluster  # optional: dask.distributed, for --dask local
    environ = {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ", {}).items()
               if k != "MALLOC_TRIM_THRESHOLD_"}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)


def run_on_client(client, tasks: list, sink=None) -> list[dict]:
    """Run `tasks` on an existing dask.distributed Client."""
    from distributed import wait as dwait  # optional: dask.distributed, for --dask
    slots = sum(client.nthreads().values()) or 1
    return _scheduled(lambda t: client.submit(run_task, t, pure=False),
                      lambda fs: dwait(fs, return_when="FIRST_COMPLETED").done, tasks, sink, slots)
