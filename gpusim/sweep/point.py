"""One point of a sweep: a launch on one spec, timed, as one row of the result table.

A `Task` is what a worker receives (picklable: the program by name or a `Launch`, the size,
the spec itself); `run_task` builds fresh inputs, runs `replay.timed_launch` (recording or
replaying the functional run), checks the outputs against the program's reference where it
has one, and returns the row: every scalar metric of the Result, the utilisation shares the
bound was chosen from (`timing__utilization.<unit>`), each stall reason's share of all stall
samples (`stall_share.<reason>`), and how the functional run was obtained.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from gpusim.errors import ConfigError, GpusimError
from gpusim.sweep.replay import timed_launch
from gpusim.sweep.space import size_label
from gpusim.sweep.streams import StreamCache

STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"


@dataclass
class Launch:
    """A user's kernel launch to sweep: `args` are copied for every point (the kernel may
    update them in place), or `make_args()` builds them afresh. `check(args)` (optional)
    raises AssertionError when the outputs are wrong. `peer_args` ({argument index: peer GPU})
    places arrays in a peer GPU's memory (needs system.gpu_count >= 2; gpusim.launch's)."""
    name: str
    kernel: object
    grid: object
    block: object
    args: tuple = ()
    shared_bytes: int = 0
    make_args: object = None
    check: object = None
    peer_args: dict | None = None

    def fresh_args(self) -> tuple:
        if self.make_args is not None:
            return tuple(self.make_args())
        return tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in self.args)


@dataclass
class Task:
    index: int                        # row number
    program: object                   # a program name (programs/) or a Launch
    size: object                      # a size name or {param: value} (programs); None for a Launch
    config_index: int
    values: tuple                     # the varied fields ((key, value), ...)
    spec: object                      # GPUSpec
    seed: int = 0
    options: object = None            # TimingOptions
    replay: bool = True
    check: bool = True
    cache_dir: str | None = None
    group: tuple = field(default=())  # points sharing one recording (same program, size, functional fields)


_CACHES: dict = {}
_ONE_AT_A_TIME = threading.Lock()     # a Dask worker with several threads: points of one process in turn
                                      # (the GIL allows no more, and recordings are shared per process)


def _cache(directory):
    c = _CACHES.get(directory)
    if c is None:
        c = _CACHES[directory] = StreamCache(directory)
    return c


def _case(task: Task):
    """(name, size label, params, kernel, grid, block, args, shared_bytes, checker, peer_args)."""
    if isinstance(task.program, Launch):
        ln = task.program
        args = ln.fresh_args()
        chk = (lambda: ln.check(args)) if ln.check is not None else None
        return ln.name, "", {}, ln.kernel, ln.grid, ln.block, args, ln.shared_bytes, chk, ln.peer_args
    import programs  # programs/ sits above gpusim: loaded only when a program is named
    spec = programs.get(task.program) if isinstance(task.program, str) else task.program
    c = spec.case(task.size, seed=task.seed)
    return (spec.name, size_label(task.size), c.params, c.kernel, c.grid, c.block, c.args, c.shared_bytes, c.check,
            None)


def run_task(task: Task) -> dict:
    with _ONE_AT_A_TIME:
        return _run_task(task)


def _run_task(task: Task) -> dict:
    t0 = time.perf_counter()
    try:
        name, size, params, kernel, grid, block, args, shared, check, peer = _case(task)
    except GpusimError:
        raise
    except Exception as e:                    # the program's own code refused the size (n=-5, ...)
        label = getattr(task.program, "name", task.program)
        raise ConfigError(f"{label}: cannot build inputs for size {task.size!r}: {type(e).__name__}: {e}") from None
    result, how = timed_launch(kernel, grid, block, args, task.spec, shared, task.options,
                               cache=_cache(task.cache_dir), replay=task.replay, peer_args=peer)
    ok = None
    if task.check and check is not None and result.extra.get("outputs_restored", True):
        try:
            check()
            ok = True
        except AssertionError:
            ok = False
    row = {"program": name, "size": size, "config": task.config_index, "gpu": task.spec.name}
    row.update({f"param.{k}": v for k, v in params.items()})
    row.update(dict(task.values))
    row.update(metrics_row(result.metrics))
    row["functional_run"] = how
    row["outputs_match_reference"] = ok
    row["wall_s"] = time.perf_counter() - t0
    row["_index"] = task.index
    return row


def metrics_row(metrics: dict) -> dict:
    """Scalar metrics as they are; the bound's utilisations flattened; stall shares added."""
    out = {}
    for k, v in metrics.items():
        if isinstance(v, dict):
            out.update({f"{k}.{kk}": vv for kk, vv in v.items()})
        elif isinstance(v, (int, float, str, bool, np.integer, np.floating)) or v is None:
            out[k] = v.item() if isinstance(v, np.generic) else v
    stalls = {k[len(STALL_PREFIX):]: v for k, v in out.items() if k.startswith(STALL_PREFIX)}
    total = sum(stalls.values())
    for r, v in stalls.items():
        out[f"stall_share.{r}"] = v / total if total else 0.0
    return out
