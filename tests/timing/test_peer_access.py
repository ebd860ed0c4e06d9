"""One hardware property per test: SM loads and stores to a peer GPU's memory (NVLink peer
access, `gpusim.launch(peer_args=...)`, `gpusim/timing/memory/peer.py`)."""
import dataclasses

import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim.errors import ConfigError, LaunchError
from gpusim.specs import overrides
from gpusim.timing.memory import MemorySystem
from gpusim.timing.memory.peer import PeerPort, one_way_latency_ns, port_bandwidth_GBps

BLOCKS, THREADS, ITERS = 64, 256, 16
N = BLOCKS * THREADS * 4 * ITERS                 # int32 elements: 4 MiB
NBYTES = N * 4


@cuda.jit
def stream_read(x, out):
    t = cuda.grid(1)
    T = cuda.gridsize(1)
    acc = 0
    i = t
    while i < x.size:                            # 4 independent loads in flight per thread
        acc += x[i] + x[i + T] + x[i + 2 * T] + x[i + 3 * T]
        i += 4 * T
    out[t] = acc


@cuda.jit
def stream_write(y, unused):
    t = cuda.grid(1)
    T = cuda.gridsize(1)
    i = t
    while i < y.size:
        y[i] = i
        y[i + T] = i + T
        y[i + 2 * T] = i + 2 * T
        y[i + 3 * T] = i + 3 * T
        i += 4 * T


def _system(**sets):
    """H200 in a 4-GPU system; 4 NVLinks (88 GB/s of payload per direction) unless overridden,
    so that 64 blocks keep the port saturated (Little's law over the ~2.7 us round trip)."""
    return overrides.apply("h200", {"system.gpu_count": 4, "nvlink.links": 4, **sets})


def _run(kernel, args, gpu, peer_args=None):
    return gpusim.launch(kernel, BLOCKS, THREADS, args, gpu=gpu, timing=True, peer_args=peer_args).metrics


def _kernel_ns(m, gpu):
    return m["gpu__time_duration.sum"] - gpu.launch.kernel_fixed_ns


def _read_args():
    return np.arange(N, dtype=np.int32), np.zeros(BLOCKS * THREADS, np.int64)


@pytest.fixture(scope="module")
def spec():
    return _system()


@pytest.fixture(scope="module")
def peer_read(spec):
    return _run(stream_read, _read_args(), spec, {0: 1})


def test_peer_stream_read_runs_at_the_nvlink_bandwidth(spec, peer_read):
    # 4 MiB over 88.2 GB/s = 47.6 us; the model adds the first round trip (~2.7 us) and the tail
    ideal_ns = NBYTES / spec.nvlink.bandwidth_GBps
    assert spec.nvlink.bandwidth_GBps == pytest.approx(4 * 26.5625 * 0.83)
    assert 1.0 <= _kernel_ns(peer_read, spec) / ideal_ns <= 1.15
    assert peer_read["timing__bound"] == "nvlink_bandwidth"


def test_peer_stream_read_is_much_slower_than_local(spec, peer_read):
    local = _run(stream_read, _read_args(), spec)
    assert _kernel_ns(peer_read, spec) > 4 * _kernel_ns(local, spec)


def test_halving_the_link_bandwidth_halves_the_peer_read_rate(spec, peer_read):
    half = dataclasses.replace(spec, nvlink=dataclasses.replace(spec.nvlink, link_bandwidth_GBps=26.5625 / 2))
    slow = _run(stream_read, _read_args(), half, {0: 1})
    assert 1.85 <= _kernel_ns(slow, half) / _kernel_ns(peer_read, spec) <= 2.05


def test_peer_read_bytes_are_nvlink_received_bytes(peer_read):
    assert peer_read["nvlrx__bytes.sum"] == NBYTES
    assert peer_read["nvltx__bytes.sum"] == 0


def test_peer_reads_bypass_the_local_l2_and_dram(peer_read):
    # the only L2 traffic left is the 128 KiB of `out` the kernel stores locally
    assert peer_read["lts__t_sectors_op_read.sum"] == 0
    assert peer_read["dram__bytes_read.sum"] == 0
    assert peer_read["lts__t_sectors_op_write.sum"] < 2 * BLOCKS * THREADS * 8 / 32


def test_peer_stores_are_nvlink_sent_bytes_and_not_l2_writes(spec):
    y = np.zeros(N, np.int32)
    m = _run(stream_write, (y, np.zeros(1, np.int32)), spec, {0: 2})
    assert (y == np.arange(N)).all()                       # the functional result is unchanged
    assert m["nvltx__bytes.sum"] == NBYTES
    assert m["nvlrx__bytes.sum"] == 0
    assert m["lts__t_sectors_op_write.sum"] == 0
    assert 1.0 <= _kernel_ns(m, spec) / (NBYTES / spec.nvlink.bandwidth_GBps) <= 1.15


def test_peer_args_none_changes_nothing(spec):
    base = gpusim.launch(stream_read, BLOCKS, THREADS, _read_args(), gpu=spec, timing=True).metrics
    none = _run(stream_read, _read_args(), spec, None)
    assert none == base
    assert "nvlrx__bytes.sum" not in none


def test_an_untouched_peer_array_changes_nothing(spec):
    y = np.zeros(N, np.int32)
    local = _run(stream_write, (y, np.zeros(64, np.int32)), spec)
    untouched = _run(stream_write, (y, np.zeros(64, np.int32)), spec, {1: 1})
    assert untouched["gpu__time_duration.sum"] == local["gpu__time_duration.sum"]
    assert untouched["lts__t_sectors_op_write.sum"] == local["lts__t_sectors_op_write.sum"]
    assert untouched["nvltx__bytes.sum"] == untouched["nvlrx__bytes.sum"] == 0


# -- the port: latency, bandwidth per topology, sampled simulation --------------------------

def test_unloaded_peer_read_latency_is_two_link_crossings_plus_the_peers_l2_miss(spec):
    mem = MemorySystem(spec, peer_ranges=[(1000, 2000, 1)])
    ghz = spec.clocks.sm_clock_mhz / 1000
    one_way = (spec.nvlink.latency_ns + spec.system.switch_latency_ns) * ghz
    peer_mem = spec.l2.hit_latency_cycles + spec.hbm.latency_ns * ghz
    assert mem.read(0.0, 0, [1500]) == pytest.approx(2 * spec.noc.latency_cycles + 2 * one_way + peer_mem)


def test_mixed_request_splits_between_l2_and_peer(spec):
    mem = MemorySystem(spec, peer_ranges=[(1000, 2000, 1)])
    mem.read(0.0, 0, [10, 11, 1500, 1501])
    c = mem.counters()
    assert c["nvlrx__bytes.sum"] == 64
    assert c["lts__t_sectors_op_read.sum"] >= 2


def test_peer_atomics_send_operands_and_return_results_reductions_only_send(spec):
    mem = MemorySystem(spec, peer_ranges=[(1000, 2000, 1)])
    mem.atomic(0.0, 0, [1500, 1501])
    mem.atomic(0.0, 0, [1600], reduction=True)
    c = mem.counters()
    assert (c["nvltx__bytes.sum"], c["nvlrx__bytes.sum"]) == (96, 64)
    assert c["lts__t_sectors.sum"] == 0


def test_direct_topology_gives_each_peer_its_share_of_the_links():
    s = overrides.apply("h200", {"system.gpu_count": 4, "system.topology": "direct"})
    assert port_bandwidth_GBps(s) == pytest.approx(6 * 26.5625 * 0.83)          # 18 links / 3 peers
    assert one_way_latency_ns(s) == s.nvlink.latency_ns                           # no switch


def test_pcie_topology_uses_the_host_link():
    s = overrides.apply("h200", {"system.gpu_count": 2, "system.topology": "pcie"})
    assert port_bandwidth_GBps(s) == s.pcie.bandwidth_GBps
    assert one_way_latency_ns(s) == s.pcie.latency_ns


def test_sampled_simulation_scales_the_port_like_the_other_shared_units(spec):
    full, eighth = PeerPort(spec), PeerPort(spec, sm_fraction=0.125)
    assert eighth.bytes_per_cycle == pytest.approx(full.bytes_per_cycle / 8)
    assert full.bytes_per_cycle == pytest.approx(spec.nvlink.bandwidth_GBps * spec.cycle_ns)


# -- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("peer_args, error, words", [
    ({5: 1}, LaunchError, ("stream_read", "argument 5", "2 arguments")),
    ({1: 0}, LaunchError, ("stream_read", "argument 1 (out)", "GPU 0", "runs on")),
    ({0: 4}, LaunchError, ("stream_read", "argument 0 (x)", "GPU 4", "4 GPUs")),
    ({0: -1}, LaunchError, ("stream_read", "argument 0 (x)", "GPU -1")),
    ([0], LaunchError, ("stream_read", "dict")),
])
def test_bad_peer_args_are_refused(spec, peer_args, error, words):
    with pytest.raises(error) as e:
        gpusim.launch(stream_read, 1, 32, (np.zeros(128, np.int32), np.zeros(32, np.int64)), gpu=spec,
                      peer_args=peer_args)
    for w in words:
        assert w in str(e.value)


def test_peer_args_on_a_scalar_is_refused(spec):
    @cuda.jit
    def scale(x, a):
        x[cuda.grid(1)] *= a
    with pytest.raises(LaunchError, match=r"scale.*argument 1 \(a\).*not an array"):
        gpusim.launch(scale, 1, 32, (np.zeros(32, np.float32), 2.0), gpu=spec, peer_args={1: 1})


def test_peer_args_on_a_one_gpu_system_is_refused():
    with pytest.raises(ConfigError, match=r"stream_read.*argument 0 \(x\).*GPU 1.*gpu_count"):
        gpusim.launch(stream_read, 1, 32, (np.zeros(128, np.int32), np.zeros(32, np.int64)), gpu="h200",
                      peer_args={0: 1})
