"""One hardware property per test: the timing model's predictions follow its spec."""
import dataclasses

import numpy as np
import pytest
from numba import cuda, float32

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
    assert h100.l1.hit_latency_cycles <= per <= h100.l1.hit_latency_cycles + 6 * h100.sm.pipelines.int.latency_cycles


def test_dependent_hbm_chain_costs_the_l2_miss_latency():
    h100 = specs.get("h100")
    per = _per_iteration(_cold_chain(), h100, 200, 600)
    hbm = h100.l2.hit_latency_cycles + h100.hbm.latency_ns / h100.cycle_ns
    assert hbm <= per <= hbm + 6 * h100.sm.pipelines.int.latency_cycles


def stream_copy(a, b):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < a.size:
        b[i] = a[i]
        i += stride


def test_stream_copy_saturates_at_the_spec_hbm_bandwidth():
    # 4 SMs at full occupancy keep ~32 KB of loads in flight: Little's law needs ~19 KB at
    # 50 GB/s and ~750 cycles of load latency, so the copy is bandwidth-bound
    small = specs.get("h100")
    small = dataclasses.replace(small, name="h100-4sm", sm_count=4,
                                hbm=dataclasses.replace(small.hbm, bandwidth_GBps=50.0))
    a = np.random.rand(1 << 18).astype(np.float32)
    b = np.zeros_like(a)
    r = gpusim.launch(stream_copy, 32, 256, (a, b), gpu=small, timing=True, timing_options=FULL)
    assert (b == a).all()
    seconds = r.metrics["sm__cycles_elapsed.max"] / (small.clocks.sm_clock_mhz * 1e6)
    # the copy's output (1 MiB) stays dirty in the write-back L2, as on hardware: DRAM sees the reads
    dram = r.metrics["dram__bytes_read.sum"] + r.metrics["dram__bytes_write.sum"]
    assert dram / seconds / 1e9 == pytest.approx(50.0, rel=0.05)
    assert r.metrics["timing__bound"] == "hbm_bandwidth"


def shared_chain(out, stride, n):
    s = cuda.shared.array(1024, float32)
    t = cuda.threadIdx.x
    for k in range(32):
        s[k * 32 + t] = 0
    cuda.syncthreads()
    j = t * stride
    acc = 0.0
    for _ in range(n):
        v = s[j % 1024]
        acc += v
        j += int(v)                  # makes the next load depend on this one
    out[t] = acc


@pytest.mark.parametrize("stride,ways", [(2, 2), (8, 8), (32, 32)])
def test_n_way_conflicted_shared_load_takes_n_wavefronts(stride, ways):
    h100 = specs.get("h100")
    out = np.zeros(32, np.float32)

    def per(s):
        c1 = _cycles(shared_chain, 1, 32, (out, s, 100), h100)
        c2 = _cycles(shared_chain, 1, 32, (out, s, 200), h100)
        return (c2 - c1) / 100
    assert per(stride) - per(1) == pytest.approx((ways - 1) * h100.sm.shared_wavefront_cycles)


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


def test_reduction_ladder_is_predicted_in_its_known_speed_order():
    ladder = ["reduce_interleaved_divergent", "reduce_interleaved_strided", "reduce_sequential",
              "reduce_first_add", "reduce_warp_shuffle"]
    t = []
    for name in ladder:
        c = programs.get(name).case("medium")
        t.append(_cycles(c.kernel, c.grid, c.block, c.args, "h100"))
    assert t == sorted(t, reverse=True), dict(zip(ladder, t))


def test_timing_is_deterministic():
    c1, c2 = programs.get("transpose_shared").case(), programs.get("transpose_shared").case()
    r1 = gpusim.launch(c1.kernel, c1.grid, c1.block, c1.args, timing=True)
    r2 = gpusim.launch(c2.kernel, c2.grid, c2.block, c2.args, timing=True)
    assert r1.metrics == r2.metrics
