"""An SM's pools of warp visits (visit_pool.py `VisitPool.load` / `_compact`): a block loaded into warp
rows that earlier warps used is laid out from its own streams alone."""
import numpy as np
from numba import cuda

import gpusim
from gpusim.timing import issue_loop as L
from gpusim.timing.engine import TimingEngine, TimingOptions


def long_loop(n, x, out):
    s = 0.0
    k = 0
    while k < n[0]:
        s += x[k & 7]
        k += 1
    out[cuda.grid(1)] = s


def test_a_row_freed_by_a_finished_warp_does_not_enter_the_compaction_of_the_next_warp_loaded_into_it():
    # the H100 failure "could not broadcast input array from shape (0,2) into shape (15,2)" (a 1024^2
    # Mandelbrot, sampled): a row's last warp left its visit range in the row, beyond the pool's end
    # after a later compaction shrank it; the next warp given that row made the pool compact again
    # while loading, and the compaction copied the stale range as if the row were live
    p = gpusim.prepare(cuda.jit(long_loop), 1, 32, (np.array([20000], np.int32), np.ones(8, np.float32),
                                                   np.zeros(32, np.float32)), gpu="h100")
    eng = TimingEngine(p, TimingOptions(mode="full", instruction_budget=None))
    sm = eng.sms[0]
    streams = eng.trace.block(0)
    assert len(streams[0].visits) > len(sm.visits.VP)          # loading it compacts the pool
    row = sm._free_rows[-1]                              # the row the block's warp gets
    sm.WI[row, L.W_V0], sm.WI[row, L.W_VN] = 10_000, 10_015   # what a finished warp left there
    sm.add_cta(0, streams, 0.0)
    w = sm._warps[row]
    assert (sm.WI[row, L.W_V0], sm.WI[row, L.W_VN]) == (0, len(streams[0].visits))
    assert w is not None and sm.visits.vtop == len(streams[0].visits)
