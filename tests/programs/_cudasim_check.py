"""Run programs under Numba's CUDA simulator and check them against their numpy
references: `python tests/programs/_cudasim_check.py [NAME | FILE.py ...]` (all
programs if none; a FILE.py is loaded with programs.load_file and run at its
'default' size).

Prints one JSON line per program: {"name", "ok", "seconds", "threads", "error"};
exit status 0 when all passed. Each program runs at the shrunk size in SMALL
(a few blocks, a partial warp or partial block where the kernel has a bounds
check): Numba's simulator runs one Python thread per CUDA thread, ~1,000 threads/s.

Numba's simulator is chosen when numba.cuda is first imported, from the
environment variable NUMBA_ENABLE_CUDASIM, so this must run in its own process
(run as a script it sets the variable itself; importing this module only reads
SMALL and sets nothing).

The simulator (numba-cuda 0.30) has no warp-level intrinsics, so this script adds
them (`install_warp_intrinsics`): shfl_sync/shfl_up_sync/shfl_down_sync/
shfl_xor_sync, ballot_sync, any_sync, all_sync, syncwarp, lanemask_lt and
activemask. The lanes named in `mask` meet at a barrier and exchange values.
Limitation: activemask() returns the warp's existing lanes, which is exact only
in converged code (the only place the programs call it).
"""
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]

# Params overriding each program's 'default' size: tiny, but >= 2 blocks, with a
# partial last block/warp wherever the kernel has a bounds check.
SMALL = {
    "bank_conflict_demo": {"blocks": 2, "stride": 32, "reps": 4},
    "const_lookup": {"n": 300, "distinct": 4},
    "divergence_demo": {"n": 300},
    "dot_product_shared": {"n": 1000, "blocks": 2},
    "dynamic_shared": {"n": 300, "block": 128},
    "float64_axpy": {"n": 300},
    "histogram_global": {"n": 300},
    "histogram_shared": {"n": 1000, "blocks": 2},
    "int64_mix": {"n": 300},
    "local_array_sort": {"n": 200},
    "matmul_naive": {"m": 20, "n": 24, "k": 20},
    "matmul_tiled": {"m": 20, "n": 24, "k": 20},
    "reduce_first_add": {"n": 700},
    "reduce_interleaved_divergent": {"n": 300},
    "reduce_interleaved_strided": {"n": 300},
    "reduce_sequential": {"n": 300},
    "reduce_warp_shuffle": {"n": 700},
    "saxpy": {"n": 300},
    "scan_block": {"n": 300},
    "softmax_rows": {"rows": 2, "cols": 300},
    "stencil_1d": {"n": 300},
    "transpose_naive": {"rows": 40, "cols": 48},
    "transpose_padded": {"rows": 40, "cols": 48},
    "transpose_shared": {"rows": 40, "cols": 48},
    "vector_add": {"n": 300},
    "warp_vote_demo": {"blocks": 3, "block": 80},
}

_BARRIER_TIMEOUT_S = 60.0
_state_lock = threading.Lock()


class _WarpGroup:
    """The lanes of one warp named by one mask: a barrier and a slot per lane."""

    def __init__(self, parties):
        self.barrier = threading.Barrier(parties, timeout=_BARRIER_TIMEOUT_S)
        self.slots = [None] * 32

    def exchange(self, lane, value):
        self.slots[lane] = value
        self.barrier.wait()                    # every participant has written
        snapshot = list(self.slots)
        self.barrier.wait()                    # every participant has read
        return snapshot


def _me():
    t = threading.current_thread()
    return t, t.thread_id // 32, t.thread_id % 32


def _existing_lanes(thread, warp):
    nthreads = int(np.prod(thread._manager._block_dim))
    return (1 << min(32, nthreads - 32 * warp)) - 1


def _exchange(mask, value):
    t, warp, lane = _me()
    mask = int(mask) & _existing_lanes(t, warp)
    if not (mask >> lane) & 1:
        raise RuntimeError(f"warp intrinsic called by lane {lane}, which is not in mask {mask:#x}")
    with _state_lock:
        groups = t._manager.__dict__.setdefault("_warp_groups", {})
        group = groups.get((warp, mask))
        if group is None:
            group = groups[(warp, mask)] = _WarpGroup(bin(mask).count("1"))
    return lane, mask, group.exchange(lane, value)


def _shfl(mask, value, src_of):
    lane, mask, vals = _exchange(mask, value)
    src = src_of(lane)
    if 0 <= src < 32 and (mask >> src) & 1:
        return vals[src]
    return value                               # out of range / not participating: own value


def install_warp_intrinsics():
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    def ballot_sync(self, mask, pred):
        _, mask, vals = _exchange(mask, bool(pred))
        return sum(1 << l for l in range(32) if (mask >> l) & 1 and vals[l])

    def any_sync(self, mask, pred):
        _, mask, vals = _exchange(mask, bool(pred))
        return int(any(vals[l] for l in range(32) if (mask >> l) & 1))

    def all_sync(self, mask, pred):
        _, mask, vals = _exchange(mask, bool(pred))
        return int(all(vals[l] for l in range(32) if (mask >> l) & 1))

    def activemask(self):
        t, warp, _ = _me()
        return _existing_lanes(t, warp)

    def syncwarp(self, mask=0xFFFFFFFF):
        _exchange(mask, None)

    def lanemask_lt(self):
        return (1 << _me()[2]) - 1

    FakeCUDAModule.shfl_sync = lambda self, mask, v, src: _shfl(mask, v, lambda l: int(src) % 32)
    FakeCUDAModule.shfl_up_sync = lambda self, mask, v, d: _shfl(mask, v, lambda l: l - int(d))
    FakeCUDAModule.shfl_down_sync = lambda self, mask, v, d: _shfl(mask, v, lambda l: l + int(d))
    FakeCUDAModule.shfl_xor_sync = lambda self, mask, v, m: _shfl(mask, v, lambda l: l ^ int(m))
    FakeCUDAModule.ballot_sync = ballot_sync
    FakeCUDAModule.any_sync = any_sync
    FakeCUDAModule.all_sync = all_sync
    FakeCUDAModule.activemask = activemask
    FakeCUDAModule.syncwarp = syncwarp
    FakeCUDAModule.lanemask_lt = lanemask_lt


def run_one(spec, params):
    case = spec.case(params)
    case.kernel[case.grid, case.block, 0, case.shared_bytes](*case.args)
    case.check()
    return int(np.prod(case.grid) * np.prod(case.block))


def main(targets):
    """Run each target -- a program name, or the path of a user's file defining
    PROGRAM (run at its 'default' size) -- and print one JSON line for each."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" or "numba" in sys.modules:
        raise RuntimeError("set NUMBA_ENABLE_CUDASIM=1 before numba is imported")
    install_warp_intrinsics()
    import programs

    all_ok = True
    for target in targets or list(programs.PROGRAMS):
        start = time.perf_counter()
        result = {"name": target, "ok": False, "threads": 0, "error": None}
        try:
            if target.endswith(".py"):
                spec, params = programs.load_file(target), {}
            elif target in SMALL:
                spec, params = programs.get(target), SMALL[target]
            else:
                raise KeyError(f"{target}: no shrunk size in SMALL of {__file__}")
            result["threads"] = run_one(spec, params)
            result["ok"] = True
        except Exception as e:                 # report, keep going with the next program
            result["error"] = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}"
            all_ok = False
        result["seconds"] = round(time.perf_counter() - start, 3)
        print(json.dumps(result), flush=True)
    return 0 if all_ok else 1


if __name__ == "__main__":
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    sys.path.insert(0, str(REPO_ROOT))
    sys.exit(main(sys.argv[1:]))
