"""An SM's warps take its sub-partitions in turn across blocks (gpusim/timing/residency.py): four
one-warp blocks on an SM use its four schedulers as one four-warp block does, as an H100 ran them
(validate/smsp_placement_probe.py, data/measurements/smsp_placement_h100.json: 128-, 64- and
32-thread blocks with four warps an SM took 38.2, 37.3 and 36.0 us, each warp 53,6xx cycles, every
SM's warps one on each sub-partition by `%warpid`)."""
import json

import numpy as np
import pytest

import gpusim
from gpusim.timing import TimingOptions
from gpusim.timing.record import TraceWindow
from validate import smsp_placement_probe as probe
from validate.datadir import DATA_DIR



def duration_us(threads: int) -> float:
    """The probe's FMA-bound kernel with four warps on every SM, in blocks of `threads`."""
    blocks = probe.SMS * 128 // threads
    r = gpusim.launch(gpusim.CudaSource(probe.SOURCE, "fma_chains"), blocks, threads,
                      (np.zeros(blocks * threads, np.float32), np.zeros(blocks * threads // 32, np.uint32),
                       np.int32(256), np.zeros(2 * blocks * threads // 32, np.uint64)),
                      gpu="h100", timing=TimingOptions(mode="full"), outputs=False)
    return r.metrics["gpu__time_duration.sum"] / 1e3


@pytest.mark.parametrize("threads", [32, 64])
def test_small_blocks_use_every_scheduler(threads):
    assert duration_us(threads) == pytest.approx(duration_us(128), rel=0.02)


def test_the_h100_measured_the_shapes_alike():
    rows = json.loads((DATA_DIR / "smsp_placement_h100.json").read_text())["rows"]
    times = [r["us"] for r in rows]
    assert max(times) < 1.1 * min(times)
    assert all(r["warps_per_sm_sp_max"] == 1 for r in rows)
    cycles = [r["warp_cycles_median"] for r in rows]
    assert max(cycles) < 1.01 * min(cycles)


def test_the_trace_shows_each_warp_on_the_sub_partition_it_runs_on():
    blocks = probe.SMS * 4
    r = gpusim.launch(gpusim.CudaSource(probe.SOURCE, "fma_chains"), blocks, 32,
                      (np.zeros(blocks * 32, np.float32), np.zeros(blocks, np.uint32), np.int32(16),
                       np.zeros(2 * blocks, np.uint64)),
                      gpu="h100", timing=TimingOptions(mode="full", record=TraceWindow(sms=(0,), end_cycle=5000)),
                      outputs=False)
    issues = r.extra["recording"].issues                  # (sm, sp, slot, cycle, sass index, block, warp in block)
    assert {(e[5], e[1]) for e in issues} == {(b, k) for k, b in enumerate(range(0, blocks, probe.SMS))}
