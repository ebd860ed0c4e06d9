"""The per-warp step interface: a driver (the timing model) steps single warps and
reads back what each executed instruction was, who ran it and where it accessed."""
import numpy as np
from numba import cuda, float32

import gpusim
from gpusim.functional.prepared import expand


def mirror(a, out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    out[t] = s[63 - t]


def _step_warps_one_at_a_time(prep, order):
    ex = prep.batch(0, 1)
    events = []
    while True:
        run = np.flatnonzero(ex.runnable())
        if not len(run):
            if ex.scheduler.next_group() is None:          # releases a barrier if every warp waits at one
                break
            continue
        w = run[order(len(run))]
        events.extend(expand(prep.decoded, ex.step([w])))
    return events


def test_stepping_warps_singly_in_reverse_order_gives_the_same_output():
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    prep = gpusim.prepare(mirror, 1, 64, (a, out))
    _step_warps_one_at_a_time(prep, lambda n: n - 1)
    prep.finish()
    assert (out == a[::-1]).all()


def test_stepping_warps_singly_gives_the_same_counters_as_grouped_execution():
    a = np.arange(64, dtype=np.float32)
    prep = gpusim.prepare(mirror, 1, 64, (a, np.zeros(64, np.float32)))
    _step_warps_one_at_a_time(prep, lambda n: 0)
    stepped = prep.finish().metrics
    grouped = gpusim.launch(mirror, 1, 64, (a, np.zeros(64, np.float32))).metrics
    assert stepped == grouped


def test_each_event_reports_unit_mask_line_and_lane_addresses():
    a = np.arange(64, dtype=np.float32)
    prep = gpusim.prepare(mirror, 1, 64, (a, np.zeros(64, np.float32)))
    events = _step_warps_one_at_a_time(prep, lambda n: 0)
    stores = [e for e in events if e.info.mnemonic.startswith("st.shared")]
    assert len(stores) == 2                                      # one per warp
    e = stores[1]
    assert e.info.unit == "ldst" and e.info.space == "shared"
    assert e.info.line and "s[t] = a[t]" in open(e.info.file).read().splitlines()[e.info.line - 1]
    assert list(e.warps) == [1] and int(e.masks[0]) == 0xFFFFFFFF
    (acc,) = e.accesses
    assert list(acc.lanes) == list(range(32, 64))
    assert list(acc.offsets) == [4 * t for t in range(32, 64)]  # byte offsets of s[32..63]
