"""L1Cache on top of the MemorySystem (test spec: _memory_spec): one hardware property per test."""
import dataclasses

import numpy as np
import pytest

from _memory_spec import L1_HIT as HIT, L2_HIT as L2HIT, HBM_CYCLES as HBM, SPEC, replace
from gpusim.timing.memory import L1Cache, MemorySystem
from gpusim.timing.memory.hashing import unit_of

L1_DATA = 28 * 1024                     # 256 KiB unified minus a 228 KiB shared carve-out: 56 sets of 4 ways


def fresh(spec=SPEC, data=L1_DATA):
    ms = MemorySystem(spec)
    return ms, L1Cache(spec, data, ms, 0)


def sec(*s):
    return np.array(s, dtype=np.uint64)


def lines_in_set(l1, count, which=0):
    """`count` line indices that share set `which` of `l1` (the set index is hashed)."""
    return [ln for ln in range(1 << 20) if unit_of(ln, l1.n_sets) == which][:count]


def test_geometry_56_sets_of_4_ways():
    _, l1 = fresh()
    assert (l1.n_sets, l1.ways) == (56, 4)


def test_hit_is_ready_exactly_hit_latency_after_the_load():
    _, l1 = fresh()
    l1.load(0.0, sec(0, 1, 2, 3))
    assert l1.load(5000.0, sec(0, 1, 2, 3)) == 5000.0 + HIT


def test_cold_miss_that_misses_l2_takes_l2_hit_plus_hbm_latency():
    _, l1 = fresh()
    assert l1.load(100.0, sec(8)) == 100.0 + L2HIT + HBM


def test_cold_miss_that_hits_l2_takes_exactly_the_l2_hit_latency():
    ms, l1 = fresh()
    other = L1Cache(SPEC, L1_DATA, ms, 1)
    other.load(0.0, sec(8))                       # brings the sector into L2
    assert l1.load(5000.0, sec(8)) == 5000.0 + L2HIT


def test_32_sector_hit_over_the_4_bank_groups_takes_eight_wavefronts():
    _, l1 = fresh()
    lines = np.arange(32, dtype=np.uint64)
    s = lines * np.uint64(4) + lines % np.uint64(4)  # 32 lines, one sector each, 8 in each bank group
    l1.load(0.0, s)
    assert l1.load(5000.0, s) == 5000.0 + 7 + HIT


def test_32_lines_in_one_bank_group_take_32_cycles():
    _, l1 = fresh()
    s = np.arange(0, 32 * 16, 16, dtype=np.uint64)  # one sector in each of 32 lines, every one bank group 0
    l1.load(0.0, s)
    assert l1.load(5000.0, s) == 5000.0 + 31 + HIT


def test_one_tag_lookup_a_cycle_takes_a_cycle_a_line():
    spec = dataclasses.replace(SPEC, l1=dataclasses.replace(SPEC.l1, tag_lines_per_cycle=1))
    ms = MemorySystem(spec)
    l1 = L1Cache(spec, L1_DATA, ms, 0)
    s = np.arange(0, 16 * 5, 5, dtype=np.uint64)    # 16 lines, one sector each, spread over the 4 bank groups
    l1.load(0.0, s)
    assert l1.load(5000.0, s) == 5000.0 + 15 + HIT


def test_second_load_of_an_in_flight_sector_merges():
    ms, l1 = fresh()
    first = l1.load(0.0, sec(40))
    second = l1.load(10.0, sec(40))
    assert second == first
    assert ms.counters()["lts__t_sectors_op_read.sum"] == 1
    c = l1.counters()
    assert c["gpusim__l1_mshr_merged_sectors.sum"] == 1
    assert c["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum"] == 2


def test_store_does_not_allocate():
    _, l1 = fresh()
    l1.store(0.0, sec(12))
    assert l1.load(5000.0, sec(12)) == 5000.0 + L2HIT   # misses L1, hits the L2 (write-allocate there)
    assert l1.counters()["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"] == 0


def test_store_to_a_present_sector_keeps_it_valid():
    _, l1 = fresh()
    l1.load(0.0, sec(12))
    l1.store(2000.0, sec(12))
    assert l1.load(5000.0, sec(12)) == 5000.0 + HIT
    assert l1.counters()["l1tex__t_sectors_pipe_lsu_mem_global_op_st_lookup_hit.sum"] == 1


def test_write_allocate_spec_makes_a_store_allocate():
    _, l1 = fresh(replace(l1={"write_allocate": True}))
    l1.store(0.0, sec(12))
    assert l1.load(5000.0, sec(12)) == 5000.0 + HIT


def test_store_returns_when_the_l1_accepted_it():
    _, l1 = fresh()
    assert l1.store(100.0, sec(0, 1, 2, 3, 4)) == 102.0   # 5 sectors = 160 B = 2 wavefronts


def test_atomic_invalidates_the_l1_copy():
    _, l1 = fresh()
    l1.load(0.0, sec(20))
    assert l1.atomic(2000.0, sec(20)) == 2000.0 + L2HIT + 40
    assert l1.load(5000.0, sec(20)) == 5000.0 + L2HIT


def test_lru_working_set_of_ways_plus_one_lines_in_one_set_always_misses():
    _, l1 = fresh()
    lines = lines_in_set(l1, l1.ways + 1)
    t = 0.0
    for _ in range(10):
        for ln in lines:
            l1.load(t, sec(ln * 4))
            t += 1000.0
    c = l1.counters()
    assert c["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum"] == 50
    assert c["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"] == 0


def test_lru_working_set_of_ways_lines_in_one_set_hits_after_the_first_round():
    _, l1 = fresh()
    lines = lines_in_set(l1, l1.ways)
    t = 0.0
    for _ in range(10):
        for ln in lines:
            l1.load(t, sec(ln * 4))
            t += 1000.0
    assert l1.counters()["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"] == 36


def test_mshr_limit_holds_the_ninth_32_sector_miss_until_the_first_returns():
    _, l1 = fresh()                                   # 256 MSHR entries = 8 requests of 32 sectors
    ready = [l1.load(0.0, np.arange(32 * i, 32 * i + 32, dtype=np.uint64)) for i in range(9)]
    assert max(ready[:8]) < 2 * (L2HIT + HBM)
    assert ready[8] >= ready[0] + L2HIT + HBM
    # its lookup was at cycle 64 (8 requests x 8 wavefronts ahead of it); it waited until the first returned
    assert l1.counters()["gpusim__l1_mshr_wait_cycles.sum"] == ready[0] - 64


def test_store_limit_holds_the_ninth_32_sector_store_until_the_first_is_acknowledged():
    _, l1 = fresh()                                  # 256 store sectors in flight = 8 stores of 32 sectors
    accepted = [l1.store(0.0, np.arange(32 * i, 32 * i + 32, dtype=np.uint64)) for i in range(9)]
    assert accepted[:8] == [8.0 * (i + 1) for i in range(8)]          # one after another, 8 wavefronts each
    first_ack = 0.0 + L2HIT                                           # an idle L2 acknowledges a write at its hit latency
    assert accepted[8] == pytest.approx(first_ack + 8.0)
    assert l1.counters()["gpusim__l1_store_wait_cycles.sum"] == pytest.approx(first_ack - 64.0)


def test_no_data_cache_when_shared_takes_all_of_l1():
    _, l1 = fresh(data=0)
    l1.load(0.0, sec(0))
    assert l1.load(5000.0, sec(0)) == 5000.0 + L2HIT


def test_counters_sum_over_sms_and_rates_recomputed():
    ms, a = fresh()
    b = L1Cache(SPEC, L1_DATA, ms, 1)
    a.load(0.0, sec(0))
    a.load(2000.0, sec(0))               # hit
    b.load(0.0, sec(100))
    tot = L1Cache.sum_counters([a.counters(), b.counters()])
    assert tot["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 3
    assert tot["l1tex__t_sector_hit_rate.pct"] == pytest.approx(100 / 3)
    assert tot["l1tex__m_xbar2l1tex_read_bytes.sum"] == 64


def test_same_requests_give_the_same_times():
    def run():
        ms, l1 = fresh()
        rng = np.random.default_rng(7)
        out = []
        for i in range(3000):
            s = np.unique(rng.integers(0, 20000, size=8)).astype(np.uint64)
            out.append(l1.store(i * 3.0, s) if i % 5 == 0 else l1.load(i * 3.0, s))
        return out, ms.counters(), l1.counters()
    assert run() == run()


def test_a_power_of_two_stride_of_lines_spreads_over_the_sets():
    # bandwidth kernels read 1 MiB apart per thread: 8192 lines, a multiple of any power-of-two set count
    _, l1 = fresh(data=256 * 1024)                  # 512 sets of 4 ways
    used = {unit_of(k * 8192, l1.n_sets) for k in range(64)}
    assert len(used) >= 48


def test_a_stores_byte_masks_reach_the_l2():
    ms, l1 = fresh()
    l1.store(0.0, sec(64), byte_masks=np.array([0x0000000F], dtype=np.uint32))   # one 4-byte word
    assert ms.counters()["gpusim__l2_partial_write_sectors.sum"] == 1
