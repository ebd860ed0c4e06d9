"""The spec the memory-unit tests use: an H100 with every memory number written here,
so that calibrating the preset does not change what these tests state. One L2 partition
and no DRAM refresh, so that latencies compose exactly; the tests of partitions and
refresh turn them on with `replace`."""
import dataclasses

from gpusim.specs.presets import H100
from gpusim.specs.parts import ClockSpec, HBMSpec, L1Spec, L2Spec, NoCSpec

SPEC = dataclasses.replace(
    H100,
    clocks=ClockSpec(sm_clock_mhz=1980.0),
    l1=L1Spec(line_bytes=128, sector_bytes=32, associativity=4, hit_latency_cycles=33, mshr_entries=256,
              bandwidth_bytes_per_cycle=128, tag_lines_per_cycle=4, write_allocate=False),
    l2=L2Spec(size_bytes=50 * 1024 * 1024, slices=80, associativity=16, line_bytes=128, sector_bytes=32,
              hit_latency_cycles=260, bandwidth_bytes_per_cycle_per_slice=64.0,
              write_bandwidth_bytes_per_cycle_per_slice=64.0, atomic_latency_cycles=40,
              atomic_unit_cycles_per_pass=1.5, atomic_unit_granule_bytes=512, atomic_near_slice_cycles_per_pass=2.5,
              atomic_int_sector_interval_cycles=2.0,
              atomic_float_sector_interval_cycles=3.5,
              partitions=1, fabric_latency_cycles=100, fabric_bandwidth_bytes_per_cycle=2048.0, ecc_granule_bytes=32),
    hbm=dataclasses.replace(HBMSpec(), channels=80, bandwidth_GBps=3352.0, latency_ns=250.0,
                            access_granularity_bytes=64, banks_per_channel=16, row_bytes=1024,
                            channel_interleave_bytes=256, t_rcd_ns=14.0,
                            t_rp_ns=14.0, t_ras_ns=34.0, t_wr_ns=16.0, t_ccd_l_ns=2.0, t_wtr_ns=8.0, t_rtw_ns=4.0,
                            t_refi_ns=3900.0, t_rfc_ns=0.0, write_queue_bursts=32),
    noc=NoCSpec(bandwidth_bytes_per_cycle=5120.0, latency_cycles=20),
)

L1_HIT = 33
L2_HIT = 260
HBM_CYCLES = 495.0          # 250 ns at 1980 MHz
L2_MISS = L2_HIT + HBM_CYCLES
HBM_BYTES_PER_CYCLE = 3352e9 / 1980e6   # 1692.93
T_RCD_CYCLES = 14 * 1.98   # tRCD: what a DRAM row hit saves over a closed bank
T_RP_CYCLES = 14 * 1.98    # tRP: what a row conflict costs over a closed bank


def replace(**units):
    """SPEC with some sub-specs' fields replaced: replace(noc={'latency_cycles': 200})."""
    return dataclasses.replace(SPEC, **{u: dataclasses.replace(getattr(SPEC, u), **kw) for u, kw in units.items()})
