"""One hardware property per test: the timing model's predictions follow its spec."""
import dataclasses

import numpy as np
import pytest
from numba import cuda, float32, int32, uint32

import gpusim
import programs
from gpusim import specs
from gpusim.timing.engine import TimingOptions

FULL = TimingOptions(mode="full")


def chase(nxt, out, n):
    j = 0
    for _ in range(n):
        j = nxt[j]
    out[0] = j


def _cycles(kernel, grid, block, args, gpu, options=FULL):
    r = gpusim.launch(kernel, grid, block, args, gpu=gpu, timing=True, timing_options=options)
    return r.metrics["sm__cycles_elapsed.max"]


def _per_iteration(nxt, gpu, n1=200, n2=400):
    out = np.zeros(1, np.int64)
    c1 = _cycles(chase, 1, 1, (nxt, out, n1), gpu)
    c2 = _cycles(chase, 1, 1, (nxt, out, n2), gpu)
    return (c2 - c1) / (n2 - n1)


def _l1_resident_ring():
    return ((np.arange(64) + 1) % 64).astype(np.int64)          # 64 x 8 B: 4 lines, stays in L1


def _cold_chain(n=1024):
    # every hop to a new 128-byte line, each line visited once: every load misses L1 and L2
    stride = 16                                                  # int64 elements per 128-byte line
    nxt = np.zeros(n * stride + 1, np.int64)
    perm = np.random.default_rng(0).permutation(np.arange(1, n + 1))
    order = np.r_[0, perm]
    nxt[order[:-1] * stride] = order[1:] * stride
    return nxt


def test_dependent_l1_hit_chain_moves_one_for_one_with_the_l1_hit_latency():
    h100 = specs.get("h100")
    slow = dataclasses.replace(h100, name="h100-slow-l1",
                               l1=dataclasses.replace(h100.l1, hit_latency_cycles=h100.l1.hit_latency_cycles + 100))
    base = _per_iteration(_l1_resident_ring(), h100)
    assert _per_iteration(_l1_resident_ring(), slow) - base == pytest.approx(100.0)


def test_dependent_l1_hit_chain_costs_the_l1_hit_latency_plus_the_index_arithmetic():
    h100 = specs.get("h100")
    per = _per_iteration(_l1_resident_ring(), h100)
    # the loop's index -> address arithmetic adds a few fixed-latency instructions on the chain
    assert h100.l1.hit_latency_cycles <= per <= h100.l1.hit_latency_cycles + 6 * h100.sm.pipes.alu.latency_cycles


def test_dependent_hbm_chain_costs_the_l2_miss_latency():
    h100 = specs.get("h100")
    per = _per_iteration(_cold_chain(), h100, 200, 600)
    hbm = h100.l2.hit_latency_cycles + h100.hbm.latency_ns / h100.cycle_ns
    assert hbm <= per <= hbm + 6 * h100.sm.pipes.alu.latency_cycles


def stream_read(a, out):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    acc = float32(0)
    while i < a.size:
        acc += a[i]
        i += stride
    out[cuda.grid(1)] = acc


def test_stream_read_reaches_the_dram_models_sustained_read_bandwidth():
    # 4 SMs at full occupancy keep far more loads in flight than Little's law needs at
    # 50 GB/s, so the read is DRAM-bound; row misses, refresh and the occasional write-back
    # leave about 88% of the peak (gpusim/timing/memory/hbm.py)
    small = specs.get("h100-datasheet")
    small = dataclasses.replace(small, name="h100-4sm", sm_count=4,
                                hbm=dataclasses.replace(small.hbm, bandwidth_GBps=50.0))
    a = np.random.rand(1 << 19).astype(np.float32)
    r = gpusim.launch(stream_read, 32, 256, (a, np.zeros(32 * 256, np.float32)), gpu=small, timing=True,
                      timing_options=FULL)
    seconds = r.metrics["sm__cycles_elapsed.max"] / (small.clocks.sm_clock_mhz * 1e6)
    assert r.metrics["dram__bytes_read.sum"] / seconds / 1e9 == pytest.approx(0.88 * 50.0, rel=0.05)
    assert r.metrics["timing__bound"] == "hbm_bandwidth"


def shared_stream(out, stride, n):
    s = cuda.shared.array(1024, int32)
    t = cuda.threadIdx.x
    for k in range(32):
        s[k * 32 + t % 32] = 1
    cuda.syncthreads()
    acc = uint32(0)
    for r in range(n):               # independent loads: the shared data path is the bottleneck
        acc += uint32(s[(t % 32 * stride + r * 32) & 1023])
    out[t] = acc


@pytest.mark.parametrize("stride,ways", [(8, 8), (16, 16), (32, 32)])
def test_n_way_conflicted_shared_loads_take_n_wavefront_cycles_each(stride, ways):
    # (below about 4 ways the loop's own instructions, not the shared data path, set the pace)
    h100 = specs.get("h100")
    out = np.zeros(1024, np.uint32)

    def per_load(s):                 # SM cycles per warp-level load, 32 warps
        c1 = _cycles(shared_stream, 1, 1024, (out, s, 64), h100)
        c2 = _cycles(shared_stream, 1, 1024, (out, s, 128), h100)
        return (c2 - c1) / (64 * 32)
    assert per_load(stride) == pytest.approx(ways * h100.sm.shared_wavefront_cycles, rel=0.05)


def test_occupancy_reported_equals_the_calculator():
    from gpusim.timing.occupancy import occupancy
    c = programs.get("reduce_sequential").case()
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, timing=True, timing_options=FULL)
    occ = occupancy(specs.get("h100"), 256, r.metrics["launch__registers_per_thread"], 256 * 4)
    assert r.metrics["launch__occupancy_limit_blocks"] == occ.blocks_per_sm


def test_more_sms_never_make_an_embarrassingly_parallel_kernel_slower():
    base = specs.get("h100")
    times = []
    for n in (4, 8, 16, 32, 64, 132):
        c = programs.get("vector_add").case({"n": 1 << 16})
        gpu = dataclasses.replace(base, name=f"h100-{n}sm", sm_count=n)
        times.append(_cycles(c.kernel, c.grid, c.block, c.args, gpu))
    assert all(b <= a for a, b in zip(times, times[1:])), times


def test_timing_is_deterministic():
    c1, c2 = programs.get("transpose_shared").case(), programs.get("transpose_shared").case()
    r1 = gpusim.launch(c1.kernel, c1.grid, c1.block, c1.args, timing=True)
    r2 = gpusim.launch(c2.kernel, c2.grid, c2.block, c2.args, timing=True)
    assert r1.metrics == r2.metrics


def local_frames(out, step):
    a = cuda.local.array(64, int32)                   # indexed by a run-time value: lives in local memory
    t = cuda.threadIdx.x
    for k in range(64):
        a[(k * step) % 64] = t + k
    out[cuda.grid(1)] = a[t % 64]


def test_later_blocks_reuse_the_local_frames_of_the_resident_slots_they_take():
    # local memory is per resident warp slot: 32 blocks on one SM that holds 8 at a time (4 waves)
    # store into 8 blocks' frames, so 3 of 4 local store sectors find their line in the L2
    one = dataclasses.replace(specs.get("h100"), name="h100-1sm", sm_count=1)
    out = np.zeros(32 * 256, np.int32)
    r = gpusim.launch(local_frames, 32, 256, (out, 5), gpu=one, timing=True, timing_options=FULL)
    miss = r.metrics["lts__t_sectors_op_write_lookup_miss.sum"] / r.metrics["lts__t_sectors_op_write.sum"]
    assert miss == pytest.approx(0.25, abs=0.05)
