"""gpusim.System: placement, peer copies and collectives on a timeline that overlaps."""
import numpy as np
import pytest

import gpusim
from gpusim.errors import ConfigError
from programs.multi_gpu.matmul import run as split_matmul


def test_copy_moves_the_data_and_takes_the_links_time():
    s = gpusim.System("h200", gpus=2)
    a = s.to_device(np.arange(1 << 20, dtype=np.float32), gpu=0)
    b = s.device_array(1 << 20, np.float32, gpu=1)
    op = s.copy(b, a)
    assert np.array_equal(b.data, a.data)
    assert (4 << 20) / (op.time_us * 1e3) < s.spec.nvlink.bandwidth_GBps


def test_collectives_on_different_streams_overlap_copies():
    s = gpusim.System("h200", gpus=4)
    xs = [s.to_device(np.full(1 << 20, g, np.float32), gpu=g) for g in range(4)]
    ar = s.all_reduce(xs)
    ys = [s.device_array(1 << 20, np.float32, gpu=g) for g in range(4)]
    cp = s.copy(ys[1], xs[0])
    assert cp.start_us == 0.0 and ar.start_us == 0.0          # comm and copy streams run together
    assert all(np.all(x.data == 6) for x in xs)


def test_after_orders_dependent_work():
    s = gpusim.System("h200", gpus=2)
    xs = [s.to_device(np.ones(1024, np.float32), gpu=g) for g in range(2)]
    first = s.all_reduce(xs)
    ys = [s.device_array(1024, np.float32, gpu=g) for g in range(2)]
    second = s.copy(ys[1], xs[0], after=[first])
    assert second.start_us == pytest.approx(first.end_us)


def test_arrays_must_be_on_distinct_gpus_of_the_system():
    s = gpusim.System("h200", gpus=2)
    xs = [s.to_device(np.ones(8, np.float32), gpu=0) for _ in range(2)]
    with pytest.raises(ConfigError, match="distinct GPUs"):
        s.all_reduce(xs)
    with pytest.raises(ConfigError, match="not in this system"):
        s.to_device(np.ones(8), gpu=2)


def test_split_matmul_is_correct_and_overlaps_communication():
    r = split_matmul(2, 128, 128, 128, "all_gather", "h200", chunks=2)
    assert r["check"] == "passed"
    kernels = [t for t in r["timeline"] if t[1] == "kernel" and t[2] == [0]]
    colls = [t for t in r["timeline"] if t[1] == "collective"]
    assert colls[0][4] < kernels[1][5]                         # chunk 0's all_gather runs during chunk 1's kernel


def test_split_matmul_pays_for_its_overlap_in_compute():
    r = split_matmul(2, 256, 1024, 64, "all_gather", "h200", chunks=2)   # 128 blocks a chunk: more than the
    assert r["compute_slowdown_us"] > 0.0                      # SMs the all_gather's channels leave
    assert r["exposed_communication_us"] == pytest.approx(r["elapsed_us"] - r["compute_us_per_gpu"])


def test_reduce_scatter_matmul_is_correct():
    assert split_matmul(2, 64, 64, 128, "reduce_scatter", "h200", chunks=2)["check"] == "passed"


def test_a_timed_launch_computes_every_element_of_a_large_grid():
    from numba import cuda

    @cuda.jit
    def scale(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = 2.0 * x[i]

    s = gpusim.System("h200", gpus=2)
    x = s.to_device(np.arange(1 << 20, dtype=np.float32), gpu=0)
    out = s.device_array(1 << 20, np.float32, gpu=0)
    s.launch(scale, 4096, 256, (x, out), gpu=0)           # timing samples blocks; the outputs stay exact
    assert np.array_equal(out.data, 2.0 * x.data)


# ---- the timeline shares the fabric: overlapping transfers split the ports they cross ----------

def _copies(s, pairs, nbytes):
    ops = []
    for src, dst in pairs:
        a = s.to_device(np.ones(nbytes // 4, np.float32), gpu=src)
        ops.append(s.copy(s.device_array(nbytes // 4, np.float32, gpu=dst), a))
    return ops


def test_two_copies_into_one_gpu_share_its_ingress_port():
    s = gpusim.System("h200", gpus=3)
    a, b = _copies(s, [(1, 0), (2, 0)], 64 << 20)
    assert a.start_us == b.start_us == 0.0                  # two source GPUs' copy engines at once
    assert a.time_us == pytest.approx(2 * a.standalone_us, rel=0.02)
    assert b.time_us == pytest.approx(2 * b.standalone_us, rel=0.02)


def test_copies_in_opposite_directions_do_not_slow_each_other():
    s = gpusim.System("h200", gpus=2)
    a, b = _copies(s, [(0, 1), (1, 0)], 64 << 20)
    assert (a.time_us, b.time_us) == pytest.approx((a.standalone_us, b.standalone_us), rel=1e-9)


def test_a_copy_during_an_all_reduce_slows_both():
    s = gpusim.System("h200", gpus=4)
    xs = [s.to_device(np.ones(4 << 20, np.float32), gpu=g) for g in range(4)]
    ar = s.all_reduce(xs)
    cp, = _copies(s, [(0, 1)], 64 << 20)
    assert ar.time_us > 1.05 * ar.standalone_us and cp.time_us > 1.2 * cp.standalone_us
    sent = s.counters()["nvltx__bytes.sum"][0]                       # GPU 0's egress carried both
    assert sent / (s.elapsed_us * 1e3) <= s.spec.nvlink.bandwidth_GBps   # and never beyond its rate


def test_a_collective_alone_on_the_timeline_takes_its_simulated_time():
    s = gpusim.System("h200", gpus=4)
    xs = [s.to_device(np.ones(1 << 18, np.float32), gpu=g) for g in (1, 3)]
    op = s.all_gather(xs, [s.device_array(1 << 19, np.float32, gpu=g) for g in (1, 3)])
    alone = gpusim.collectives.simulate("all_gather", 2 << 20, s.spec, 2)
    assert op.time_us == pytest.approx(alone.time_us, rel=1e-9)
    assert s.counters()["nvltx__bytes.sum"] == pytest.approx([0.0, 1 << 20, 0.0, 1 << 20])


def test_broadcast_sends_from_its_root_gpu():
    s = gpusim.System("h200", gpus=3)
    xs = [s.to_device(np.full(1 << 16, g, np.float32), gpu=g) for g in range(3)]
    s.broadcast(xs, root=2)
    sent = s.counters()["nvltx__bytes.sum"]
    assert sent[2] == pytest.approx(1 << 18) and sent[1] == 0.0          # the chain runs 2 -> 0 -> 1
    assert all(np.all(x.data == 2) for x in xs)


def _peer_read_kernel(s, n):
    """A kernel on GPU 0 reading n floats that live on GPU 1."""
    from numba import cuda

    @cuda.jit
    def scale(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = 2.0 * x[i]

    x = s.to_device(np.ones(n, np.float32), gpu=1)
    return s.launch(scale, n // 256, 256, (x, s.device_array(n, np.float32, gpu=0)), gpu=0)


def test_a_peer_kernel_alone_keeps_its_time_and_puts_its_reads_on_the_links():
    s = gpusim.System("h200", gpus=2)
    k = _peer_read_kernel(s, 1 << 20)
    assert k.time_us == k.standalone_us
    assert s.counters()["nvltx__bytes.sum"][1] == pytest.approx(4 << 20)     # GPU 1 sent the data


def test_a_peer_kernel_and_a_copy_the_same_way_slow_each_other():
    s = gpusim.System("h200", gpus=2)
    k = _peer_read_kernel(s, 1 << 22)
    cp, = _copies(s, [(1, 0)], 16 << 20)                 # GPU 1 -> GPU 0, as the kernel's reads
    assert k.time_us > 1.1 * k.standalone_us and cp.time_us > 1.3 * cp.standalone_us


def test_a_peer_kernel_and_a_copy_the_other_way_do_not():
    s = gpusim.System("h200", gpus=2)
    k = _peer_read_kernel(s, 1 << 22)
    cp, = _copies(s, [(0, 1)], 16 << 20)
    assert (k.time_us, cp.time_us) == pytest.approx((k.standalone_us, cp.standalone_us), rel=1e-9)


def test_a_broadcast_over_its_own_arrays_is_timed_in_place():
    s = gpusim.System("h200", gpus=2)
    op = s.broadcast([s.to_device(np.ones(1 << 22, np.float32), gpu=g) for g in range(2)])
    inplace = gpusim.collectives.simulate("broadcast", 16 << 20, s.spec, 2, in_place=True)
    assert op.standalone_us == pytest.approx(inplace.time_us, rel=1e-12)
    assert op.standalone_us < gpusim.collectives.simulate("broadcast", 16 << 20, s.spec, 2).time_us


# ---- a collective's channels hold SMs and DRAM bandwidth that a kernel beside it loses -----------

def _fma_kernel():
    from numba import cuda

    @cuda.jit
    def fma_heavy(x):
        i = cuda.grid(1)
        if i < x.size:
            v = x[i]
            for _ in range(64):
                v = v * 1.0001 + 0.5
            x[i] = v
    return fma_heavy


def _beside_a_long_all_reduce(blocks):
    s = gpusim.System("h200", gpus=2)
    ar = s.all_reduce([s.to_device(np.ones(1 << 26, np.float32), gpu=g) for g in range(2)])   # ~900 us
    k = s.launch(_fma_kernel(), blocks, 256, (s.to_device(np.ones(blocks * 256, np.float32), gpu=0),), gpu=0)
    return s, ar, k


def test_a_kernel_beside_a_collective_runs_on_the_sms_its_channels_leave():
    s, ar, k = _beside_a_long_all_reduce(10 * 132)
    channels = ar.detail["sms"]
    assert channels == 24
    assert k.time_us == pytest.approx(k.standalone_us * 132 / (132 - channels), rel=1e-9)


def test_a_kernel_with_fewer_blocks_than_the_free_sms_keeps_its_time():
    s, ar, k = _beside_a_long_all_reduce(100)
    assert k.time_us == pytest.approx(k.standalone_us, rel=1e-12)


def test_the_collective_keeps_its_time_beside_a_kernel():
    s, ar, k = _beside_a_long_all_reduce(10 * 132)
    assert ar.time_us == pytest.approx(ar.standalone_us, rel=1e-12)


def test_a_dram_bound_kernel_gets_the_dram_bandwidth_a_collective_leaves():
    from gpusim.gpu_share import GPUShare
    import simpy
    share = GPUShare(simpy.Environment(), 132, 4800.0)
    share.enter("all_reduce", 24, 1200.0)
    assert share.kernel_rate(sms_used=10, dram_GBps=4000.0) == pytest.approx(3600.0 / 4000.0)
    assert share.kernel_rate(sms_used=132, dram_GBps=1000.0) == pytest.approx(108 / 132)


def test_the_collectives_dram_traffic_per_link_byte_is_honoured():
    from gpusim.specs.overrides import apply, resolve
    from programs.vector_add import vector_add
    times = []
    for factor in (0.0, 16.0):
        s = gpusim.System(apply(resolve("h200"), {"nccl.dram_bytes_per_link_byte": factor}), gpus=2)
        s.all_reduce([s.to_device(np.ones(1 << 24, np.float32), gpu=g) for g in range(2)])
        xs = [s.to_device(np.ones(1 << 20, np.float32), gpu=0) for _ in range(3)]
        times.append(s.launch(vector_add, 4096, 256, xs, gpu=0).time_us)
    assert times[1] > 1.2 * times[0]
