"""The memory system inside the timing engine: L1 capacity from the shared-memory carve-out,
and sampled simulation's stand-ins for the unsimulated blocks' L2 lines ("phantom"
write-backs). One property per test."""
import numpy as np
import pytest
from numba import cuda

import gpusim
from _memory_spec import SPEC, replace
from gpusim.timing.engine import TimingEngine, TimingOptions
from gpusim.timing.memory import L2Cache

FULL = 0xFFFFFFFF


@cuda.jit
def tile_kernel(a, b):
    tile = cuda.shared.array(4096, np.float32)              # 16 KiB per block
    i = cuda.grid(1)
    tile[cuda.threadIdx.x] = a[i]
    cuda.syncthreads()
    b[i] = tile[255 - cuda.threadIdx.x]


@cuda.jit
def add_kernel(a, b, c):
    i = cuda.grid(1)
    c[i] = a[i] + b[i]


def test_l1_data_capacity_is_what_the_shared_memory_carveout_leaves():
    a = np.zeros(256 * 264, np.float32)
    p = gpusim.prepare(tile_kernel, 264, 256, (a, np.zeros_like(a)), "h100")
    e = TimingEngine(p, TimingOptions(mode="full"))
    sm = p.spec.sm
    shared_per_sm = e.bps * e.res.shared_bytes_per_block
    carveout = sm.carveout_bytes(shared_per_sm)
    assert shared_per_sm <= carveout < sm.l1_shared_total_bytes
    assert e.sms[0].l1.data_bytes == sm.l1_shared_total_bytes - carveout


def test_a_kernel_without_shared_memory_gets_the_whole_unified_l1():
    a = np.zeros(256 * 4, np.float32)
    p = gpusim.prepare(add_kernel, 4, 256, (a, a.copy(), a.copy()), "h100")
    e = TimingEngine(p, TimingOptions(mode="full"))
    assert e.sms[0].l1.data_bytes == p.spec.sm.l1_shared_total_bytes


def _write_stream(l2, lines):
    for i in range(lines):
        l2.write(float(i), [4 * i + k for k in range(4)], masks=[FULL] * 4)


def test_phantom_write_backs_start_once_the_whole_gpus_l2_would_be_full():
    # each simulated block stands for 4 of the share: the share's L2 is full after a quarter of its lines
    l2 = L2Cache(SPEC, sm_fraction=1 / 64, share_blocks_per_simulated=4.0)
    cap = l2.capacity_lines
    _write_stream(l2, cap // 4 - 10)
    assert l2.hbm.bursts_written == 0
    _write_stream(l2, cap // 2)
    assert l2.counters()["gpusim__l2_phantom_writeback_sectors.sum"] > 0


def test_phantom_write_backs_follow_the_dirty_sectors_per_allocated_line():
    # a pure write stream dirties all four sectors of every line: each phantom eviction writes four
    l2 = L2Cache(SPEC, sm_fraction=1 / 64, share_blocks_per_simulated=4.0)
    cap = l2.capacity_lines
    lines = cap // 2                                          # the simulated L2 itself never fills
    _write_stream(l2, lines)
    gated = lines - cap // 4
    assert l2.standins.phantom_sectors == pytest.approx(4 * gated, abs=8)


def test_phantom_write_backs_are_counted_at_the_whole_run_s_rate():
    # lines read first and written later: the running rate lags, the counters catch up
    l2 = L2Cache(SPEC, sm_fraction=1 / 64, share_blocks_per_simulated=4.0)
    cap = l2.capacity_lines
    n = cap // 2
    for i in range(n):
        l2.read(float(i), [4 * i + k for k in range(4)])
    for i in range(n):
        l2.write(float(n + i), [4 * i + k for k in range(4)], masks=[FULL] * 4)
    assert l2.standins.phantom_sectors + l2.phantom_correction_sectors() == pytest.approx(4 * (n - cap // 4), rel=0.01)


def test_no_phantoms_in_a_full_simulation():
    l2 = L2Cache(SPEC)
    _write_stream(l2, l2.capacity_lines // 2)
    assert l2.hbm.bursts_written == 0 and l2.phantom_correction_sectors() == 0


def test_sampled_vector_add_writes_back_all_but_the_dirty_share_of_the_l2():
    # 2 lines read and 1 written per element: 2/9 of the L2 stays dirty (test_memory_partitions)
    n = 1 << 24                                               # 64 MiB per array, 65536 blocks: sampled
    spec = replace(l2={"partitions": 2})                      # 50 MiB
    a = np.ones(n, np.float32)
    r = gpusim.launch(add_kernel, n // 256, 256, (a, a.copy(), np.zeros_like(a)), gpu=spec, timing=True,
                      timing_options=TimingOptions(mode="sampled", functional="sampled"))
    assert r.metrics["timing__mode"] == "sampled"
    expected = 4 * n - 2 / 9 * spec.l2.size_bytes
    assert r.metrics["dram__bytes_write.sum"] == pytest.approx(expected, rel=0.06)
    assert r.metrics["dram__bytes_read.sum"] == pytest.approx(8 * n, rel=0.01)
