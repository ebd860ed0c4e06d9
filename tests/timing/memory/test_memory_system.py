"""MemorySystem: latency composition and bandwidth saturation (test spec: H100 numbers fixed in _memory_spec)."""
import numpy as np
import pytest

from _memory_spec import HBM_BYTES_PER_CYCLE, L2_HIT, L2_MISS, SPEC, replace
from gpusim.errors import ConfigError
from gpusim.specs.presets import H100 as H100_PRESET
from gpusim.timing.memory import L1Cache, MemorySystem

H100 = SPEC


def test_l2_hit_load_to_use_is_exactly_the_spec_l2_hit_latency():
    ms = MemorySystem(H100)
    ms.read(0.0, 0, [3])
    assert ms.read(5000.0, 1, [3]) - 5000.0 == L2_HIT


def test_l2_miss_load_to_use_is_l2_hit_plus_hbm_latency():
    ms = MemorySystem(H100)
    assert ms.read(0.0, 0, [3]) == L2_MISS == 755.0


@pytest.mark.parametrize("at", [0.0, 1234.5])
def test_the_presets_latencies_compose_the_same_way(at):
    # the preset's numbers, whatever they are now; line 0 is homed in partition 0, SM 0's near one, and
    # its bank is closed and its channel not refreshing: the chase-measured latency less the far
    # half's two fabric crossings and the mean wait for a refresh in progress
    ms = MemorySystem(H100_PRESET)
    assert ms.l2.home_of(0) == 0
    ghz = H100_PRESET.clocks.sm_clock_mhz / 1000
    h = H100_PRESET.hbm
    refresh_wait = h.t_rfc_ns / h.t_refi_ns * h.t_rfc_ns / 2 * ghz
    closed = h.latency_ns * ghz - H100_PRESET.l2.fabric_latency_cycles - refresh_wait
    assert ms.read(at, 0, [3]) - at == pytest.approx(H100_PRESET.l2.hit_latency_cycles + closed, abs=1e-9)
    assert ms.read(at + 500.0, 0, [3]) - (at + 500.0) == pytest.approx(H100_PRESET.l2.hit_latency_cycles, abs=1e-9)


def test_write_is_acknowledged_after_the_l2_hit_latency():
    assert MemorySystem(H100).write(100.0, 0, [3]) == 100.0 + L2_HIT


def test_noc_latency_larger_than_half_the_l2_hit_latency_is_refused():
    spec = replace(noc={"latency_cycles": 200})
    with pytest.raises(ConfigError, match="twice"):
        MemorySystem(spec)


def _hbm_stream(spec, frac=1.0, total_bytes=16 << 20, sms=132):
    """Distinct 128-B lines offered at twice the HBM bandwidth, round-robin over SMs;
    achieved bytes per cycle between the first and the last completion."""
    ms = MemorySystem(spec, frac)
    bw = spec.hbm_bytes_per_cycle * frac
    dt = 128 / (2 * bw)
    done = [ms.read(i * dt, i % sms, [4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3]) for i in range(total_bytes // 128)]
    return ms.counters()["dram__bytes_read.sum"] / (max(done) - min(done)), bw


def test_streaming_distinct_sectors_saturates_at_spec_hbm_bandwidth():
    got, peak = _hbm_stream(H100)
    assert peak == pytest.approx(HBM_BYTES_PER_CYCLE)   # 1692.9: 3352 GB/s at 1980 MHz
    assert abs(got - peak) / peak < 0.02


def test_sm_fraction_half_halves_hbm_bandwidth():
    full, _ = _hbm_stream(H100, total_bytes=8 << 20)
    half, _ = _hbm_stream(H100, 0.5, total_bytes=4 << 20)
    assert half / full == pytest.approx(0.5, rel=0.02)


def test_sm_fraction_half_halves_l2_capacity():
    assert MemorySystem(H100, 0.5).l2.capacity_bytes == 25 * 1024 * 1024


def _l2_hit_stream(spec, total_bytes=8 << 20, footprint_lines=8192):
    """Lines already in L2, requested at 2x the slice bandwidth; achieved bytes per cycle."""
    ms = MemorySystem(spec)
    for ln in range(footprint_lines):
        ms.read(0.0, 0, [4 * ln, 4 * ln + 1, 4 * ln + 2, 4 * ln + 3])
    t0 = 1e6
    peak = spec.l2.slices * spec.l2.bandwidth_bytes_per_cycle_per_slice
    dt = 128 / (2 * peak)
    done = []
    for i in range(total_bytes // 128):
        ln = i % footprint_lines
        done.append(ms.read(t0 + i * dt, i % 132, [4 * ln, 4 * ln + 1, 4 * ln + 2, 4 * ln + 3]))
    assert ms.counters()["lts__t_sectors_op_read_lookup_miss.sum"] == 4 * footprint_lines
    return total_bytes / (max(done) - min(done))


def test_l2_hit_bandwidth_saturates_at_slices_times_bytes_per_cycle_per_slice():
    got = _l2_hit_stream(H100)
    assert abs(got - 80 * 64) / (80 * 64) < 0.02       # 5120 B/cycle (the crossbar has the same)


def test_l2_hit_bandwidth_is_capped_by_a_narrower_crossbar():
    spec = replace(noc={"bandwidth_bytes_per_cycle": 2560.0})
    got = _l2_hit_stream(spec)
    assert abs(got - 2560) / 2560 < 0.02


def test_streaming_through_l1s_is_bounded_by_mshrs_littles_law():
    # 132 SMs x 256 sectors x 32 B in flight over a 755-cycle miss: at most 1432 B/cycle (85 % of HBM peak)
    ms = MemorySystem(H100)
    l1s = [L1Cache(H100, 28 * 1024, ms, i) for i in range(132)]
    per_sm = 1024                                       # 128-B loads per SM, all issued at cycle 0
    done = []
    for k in range(per_sm):
        for sm, l1 in enumerate(l1s):
            line = k * 132 + sm
            done.append(l1.load(0.0, np.arange(4 * line, 4 * line + 4, dtype=np.uint64)))
    got = 132 * per_sm * 128 / max(done)
    bound = 132 * H100.l1.mshr_entries * 32 / ms.l2_miss_latency_cycles
    assert got <= bound * 1.001
    assert got > 0.85 * bound                          # bank and bus queueing take the rest


def test_same_requests_give_the_same_times_and_counters():
    def run():
        ms = MemorySystem(H100, 0.25)
        rng = np.random.default_rng(1)
        out = []
        for i in range(5000):
            s = np.unique(rng.integers(0, 1 << 22, size=6)).astype(np.uint64)
            op = i % 7
            f = ms.write if op == 0 else ms.atomic if op == 1 else ms.read
            out.append(f(i * 0.7, i % 33, s))
        return out, ms.counters(elapsed_cycles=5000 * 0.7)
    assert run() == run()


def test_counters_have_nsight_names():
    ms = MemorySystem(H100)
    ms.read(0.0, 0, [2, 3])                             # one 64-B burst
    c = ms.counters(elapsed_cycles=1000.0)
    for name in ("lts__t_sectors_op_read.sum", "lts__t_sector_hit_rate.pct", "dram__bytes_read.sum",
                 "dram__bytes_write.sum", "lts__t_sectors.sum",
                 "dram__throughput.avg.pct_of_peak_sustained_elapsed"):
        assert name in c
    assert c["dram__bytes_read.sum"] == 64 and c["lts__t_sectors_op_read.sum"] == 2


def test_flush_keeps_l2_contents_and_lets_time_restart():
    ms = MemorySystem(H100)
    for i in range(2000):
        ms.read(1e6 + i, 0, [4 * i])                    # a kernel late in time
    ms.flush()
    assert ms.read(0.0, 0, [0]) == L2_HIT               # next kernel at cycle 0: an idle L2 hit


def test_crossbar_bytes_are_every_request_s_sectors():
    ms = MemorySystem(H100)
    ms.read(0.0, 0, [0, 1, 2])
    ms.write(0.0, 0, [8])
    ms.atomic(0.0, 0, [16, 20])
    assert ms.counters()["gpusim__noc_bytes.sum"] == 6 * 32
