"""A barrier arrival behind its sub-partition's shared accesses (`sm.barrier_behind_shared`, sm.py
`_arrive`): it reaches the SM's barrier unit only once the shared accesses issued on its
sub-partition before it have had the data path, so a phase's conflicted loads add to the phase's
time even where no instruction waits for their data. Measured on an H200 by
validate/scan_phases_probe.py (data/measurements/scan_phases_h200_run9.json, run 9): one block of 16
warps, warp 0 four loads a phase, the others idle at each `__syncthreads()`: 139.5 cycles a phase with
8-way loads, 111.4 conflict-free (+28); gpusim runs the probe's own kernels."""
import numpy as np
import pytest

import gpusim
from gpusim.specs.overrides import apply
from validate import scan_phases_probe as probe

X = np.ones(4096, np.float32)


def cycles_per_phase(kernel: str, behind: bool) -> float:
    """The slope of one block's cycles over 4 more repetitions of the 21 phases, per phase."""
    spec = apply("h100", {"sm.barrier_behind_shared": behind})
    cycles = []
    for reps in (2, 6):
        out = np.zeros(512, np.float32)
        m = gpusim.launch(gpusim.CudaSource(probe.SOURCE, kernel), 1, 512, (X, out, np.int32(reps)), gpu=spec,
                          timing=True, outputs=False).metrics
        cycles.append(m["sm__cycles_elapsed.max"])
    return (cycles[1] - cycles[0]) / (4 * 21)


def test_a_phase_s_conflicted_loads_delay_its_barrier():
    added = cycles_per_phase("few_k8_w1_l4", True) - cycles_per_phase("few_k1_w1_l4", True)
    assert added == pytest.approx(28.0, abs=8.0)      # measured 139.5 - 111.4


def test_without_the_queue_the_loads_hide_under_the_barrier():
    # the model before: the loads' data is used only after the next barrier, so nothing waited for them
    added = cycles_per_phase("few_k8_w1_l4", False) - cycles_per_phase("few_k1_w1_l4", False)
    assert added < 6.0
