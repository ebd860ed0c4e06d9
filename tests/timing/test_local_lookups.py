"""The L1's lookups of local memory count under Nsight's local names, not the global ones."""
import numpy as np
from numba import cuda, int32

import gpusim
from gpusim.timing import TimingOptions


def local_sum(out, step):
    a = cuda.local.array(32, int32)                 # indexed by a run-time value: local memory
    t = cuda.threadIdx.x
    for k in range(32):
        a[(k * step) % 32] = t + k
    s = 0
    for k in range(32):
        s += a[(k * step + t) % 32]
    out[cuda.grid(1)] = s


def test_local_loads_and_stores_are_looked_up_as_local():
    out = np.zeros(4 * 128, np.int32)
    m = gpusim.launch(local_sum, 4, 128, (out, 5), gpu="h100", timing=True,
                      timing_options=TimingOptions(mode="full")).metrics
    local = sum(m[f"l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_{x}.sum"] for x in ("hit", "miss"))
    glob = sum(m[f"l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_{x}.sum"] for x in ("hit", "miss"))
    assert local == m["l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"] > 0
    assert glob == 0                                # the kernel loads no global memory
