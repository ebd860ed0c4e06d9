"""L2Cache and HBM: one hardware property per test (test spec: H100 numbers fixed in _memory_spec)."""
import pytest

from _memory_spec import HBM_BYTES_PER_CYCLE, L2_HIT as L2HIT, L2_MISS, SPEC, replace
from _memory_spec import T_RCD_CYCLES as ROW_HIT
from gpusim.timing.memory import HBM, L2Cache, MemorySystem
from gpusim.timing.memory.hashing import unit_of

H100 = SPEC


def test_geometry_80_slices_of_320_sets_of_16_ways():
    l2 = L2Cache(H100)
    assert (l2.slice_count, set(l2.sets_in_slice), l2.ways) == (80, {320}, 16)
    assert l2.capacity_bytes == 50 * 1024 * 1024


def test_sets_that_do_not_divide_evenly_are_dealt_to_the_slices():
    l2 = L2Cache(replace(l2={"size_bytes": (25600 + 40) * 16 * 128}))
    assert l2.sets_in_slice == [321] * 40 + [320] * 40


def test_hbm_latency_is_250_ns_in_sm_cycles():
    assert HBM(H100).latency_cycles == 495.0          # 250 ns at 1980 MHz


def test_hbm_channel_bandwidth_is_the_spec_share():
    h = HBM(H100)
    assert h._chans[0].bus.bytes_per_cycle * 80 == pytest.approx(HBM_BYTES_PER_CYCLE)


@pytest.mark.parametrize("stride_log2", range(7, 27))
def test_power_of_two_strides_spread_over_all_slices(stride_log2):
    l2 = L2Cache(H100)
    stride_sectors = (1 << stride_log2) // 32
    for i in range(4096):
        l2.read(float(i), [i * stride_sectors])
    per_slice = l2.slice_bytes()
    assert min(per_slice) > 0                          # every one of the 80 slices is used
    assert max(per_slice) <= 1.6 * (sum(per_slice) / 80)


def test_contiguous_lines_spread_exactly_evenly():
    l2 = L2Cache(H100)
    for line in range(80 * 50):
        l2.read(0.0, [line * 4])
    assert set(l2.slice_bytes()) == {50 * 32.0}


def test_a_contiguous_range_of_l2_capacity_hits_on_the_second_pass():
    l2 = L2Cache(H100, sm_fraction=1 / 16)               # 20 sets per slice: 3.1 MiB
    lines = l2.capacity_bytes // 128
    for rnd in range(2):
        for line in range(lines):
            l2.read(rnd * 1e6 + line, [line * 4])
    c = l2.counters()
    assert c["lts__t_sectors_op_read_lookup_hit.sum"] == lines


def _lines_in_one_set(l2, count):
    """`count` lines homed in slice 0 that share a set."""
    out, line = [], 0
    while len(out) < count:
        if unit_of(line, l2.slice_count) == 0 and l2.set_of(line) == 0:
            out.append(line)
        line += 1
    return out


def test_lru_working_set_of_ways_plus_one_lines_in_one_set_always_misses():
    l2 = L2Cache(H100)
    lines = _lines_in_one_set(l2, l2.ways + 1)
    t = 0.0
    for _ in range(5):
        for ln in lines:
            l2.read(t, [ln * 4])
            t += 2000.0
    c = l2.counters()
    assert (c["lts__t_sectors_op_read_lookup_hit.sum"], c["lts__t_sectors_op_read_lookup_miss.sum"]) == (0, 85)


def test_widening_a_share_for_shared_lines_adds_ways_and_keeps_what_its_sets_hold():
    l2 = L2Cache(H100)
    lines = _lines_in_one_set(l2, l2.ways + 1)
    for i, ln in enumerate(lines[:-1]):
        l2.read(i * 2000.0, [ln * 4])
    sets = 2 * len(l2.slices.sets[0])                 # both partitions' sets
    assert l2.slices.widen(sets * 3 / 2 - 1) == 3     # a shared line takes a way in each partition
    t = 100_000.0
    for ln in lines:                                  # ways + 1 lines now fit: the first 16 still held
        l2.read(t, [ln * 4])
        t += 2000.0
    assert l2.counters()["lts__t_sectors_op_read_lookup_hit.sum"] == len(lines) - 1


@pytest.mark.parametrize("sectors", [1, 2, 4])
def test_a_read_lookup_takes_at_least_one_requests_share_of_its_slice(sectors):
    # 64 B a cycle, half a request a cycle: a request's share is 128 B, what 4 sectors take anyway
    l2 = L2Cache(replace(l2={"bandwidth_bytes_per_cycle_per_slice": 64.0, "requests_per_cycle_per_slice": 0.5}),
                 pipeline_latency_cycles=0)
    l2.read(0.0, list(range(sectors)))
    assert sum(s.bytes_served for s in l2.slices.servers) == 128.0


def test_without_a_request_rate_a_read_lookup_takes_its_sectors_bytes():
    l2 = L2Cache(replace(l2={"requests_per_cycle_per_slice": 0.0}))
    l2.read(0.0, [0])
    assert sum(s.bytes_served for s in l2.slices.servers) == 32.0


def test_write_allocates_without_a_dram_read():
    ms = MemorySystem(H100)
    ms.write(0.0, 0, [100])
    assert ms.read(1000.0, 0, [100]) == 1000.0 + L2HIT
    assert ms.counters()["dram__bytes_read.sum"] == 0


def test_dirty_lines_are_not_written_back_at_kernel_end():
    ms = MemorySystem(H100)
    ms.write(0.0, 0, list(range(1000)))
    ms.flush()
    assert ms.counters()["dram__bytes_write.sum"] == 0


def test_evicting_a_dirty_line_writes_its_dirty_sector_to_dram():
    l2 = L2Cache(H100)
    lines = _lines_in_one_set(l2, l2.ways + 1)
    l2.write(0.0, [lines[0] * 4])                         # one dirty sector
    for i, ln in enumerate(lines[1:]):
        l2.read(1000.0 * (i + 1), [ln * 4])               # the 17th line evicts it
    assert l2.hbm.counters()["dram__bytes_write.sum"] == 32  # one 32-B sector


SMALL_L2 = {"size_bytes": 80 * 4 * 16 * 128}                               # 4 sets of 16 ways per slice: 640 KiB


def test_dirty_lines_at_launch_are_written_back_by_a_stream_larger_than_the_l2():
    l2 = L2Cache(replace(l2=SMALL_L2))
    assert l2.preload_dirty(64 * 1024) == 64 * 1024 // 128                # 64 KiB of dirty lines
    for i in range(0, 2 * l2.capacity_lines * 4, 4):                      # read twice the L2's lines
        l2.read(0.0, [i])
    assert l2.residue_written_bytes() == 64 * 1024


def test_dirty_lines_at_launch_stay_while_the_kernel_fits_beside_them():
    l2 = L2Cache(replace(l2=SMALL_L2))
    l2.preload_dirty(64 * 1024)
    for i in range(0, (l2.capacity_lines // 2) * 4, 4):                   # half the L2
        l2.read(0.0, [i])
    assert l2.residue_written_bytes() == 0


def test_sampled_dirty_lines_at_launch_are_written_back_once_the_whole_l2_is_full():
    # half the SMs simulated, each simulated block standing for 4: the share holds half the 64 KiB
    # (256 lines); allocations of a quarter of its capacity fill the whole L2, the next evict them
    l2 = L2Cache(replace(l2=SMALL_L2), sm_fraction=0.5, share_blocks_per_simulated=4.0)
    assert l2.preload_dirty(64 * 1024) == 256
    for i in range(0, (l2.capacity_lines // 4) * 4, 4):
        l2.read(0.0, [i])
    assert l2.residue_written_bytes() == 0
    for i in range(l2.capacity_lines * 4, (l2.capacity_lines + 64) * 4, 4):   # 64 more: 4 x 64 evicted
        l2.read(0.0, [i])
    assert l2.residue_written_bytes() == 64 * 1024


def test_64_byte_bursts_fill_the_sibling_sector():
    ms = MemorySystem(H100)
    ms.read(0.0, 0, [10])                                 # sectors 10 and 11 share a burst
    assert ms.read(2000.0, 0, [11]) == 2000.0 + L2HIT
    assert ms.counters()["dram__bytes_read.sum"] == 64


def test_32_byte_bursts_fetch_only_the_sector():
    ms = MemorySystem(replace(hbm={"access_granularity_bytes": 32}))
    ms.read(0.0, 0, [10])
    assert ms.read(2000.0, 0, [11]) == pytest.approx(2000.0 + ms.l2_miss_latency_cycles - ROW_HIT)   # its row is open
    assert ms.counters()["dram__bytes_read.sum"] == 64


def test_atomic_on_an_l2_resident_sector_adds_the_atomic_latency():
    ms = MemorySystem(H100)
    ms.read(0.0, 0, [7])
    assert ms.atomic(2000.0, 0, [7]) == 2000.0 + L2HIT + 40
    c = ms.counters()
    assert (c["lts__t_sectors_op_atom.sum"], c["lts__t_sectors_op_red.sum"]) == (1, 0)


def test_atomics_to_one_sector_are_serialised():
    ms = MemorySystem(H100)
    ms.read(0.0, 0, [7])
    done = [ms.atomic(2000.0, sm, [7], reduction=True) for sm in range(10)]
    gap = H100.l2.atomic_int_sector_interval_cycles
    assert done[-1] == 2000.0 + L2HIT + 40 + 9 * gap
    assert ms.counters()["lts__t_sectors_op_red.sum"] == 10


def test_the_passes_of_one_request_on_one_sector_are_serialised_like_separate_requests():
    ms = MemorySystem(H100)
    ms.read(0.0, 0, [7])
    done = ms.atomic(2000.0, 0, [7], reduction=True, passes=[10])
    assert done == 2000.0 + L2HIT + 40 + 9 * H100.l2.atomic_int_sector_interval_cycles


def test_atomics_to_different_sectors_overlap():
    ms = MemorySystem(H100)
    ms.read(0.0, 0, list(range(0, 40, 4)))
    done = [ms.atomic(2000.0, sm, [sm * 4]) for sm in range(10)]
    assert max(done) < 2000.0 + L2HIT + 2 * 40


def test_writes_saturate_a_slice_at_its_write_bandwidth():
    # a written sector holds the slice longer than a read one (H100: 35 against 53 B/cycle)
    spec = replace(l2={"write_bandwidth_bytes_per_cycle_per_slice": 32.0})      # reads: 64
    n = 4000
    writes, reads = L2Cache(spec), L2Cache(spec)
    for i in range(n):                                            # sector 0 over and over: one slice
        last_w = writes.write(0.0, [0], masks=[0xFFFFFFFF])
        last_r = reads.read(0.0, [0])
    assert (last_w - L2HIT) == pytest.approx((n - 1) * 32 / 32.0)   # one sector per cycle
    assert (last_r - L2HIT) == pytest.approx((n - 1) * 32 / 64.0)   # two per cycle


@pytest.mark.slow
def test_many_recent_atomic_granules_are_pruned_a_few_times_not_at_every_atomic(monkeypatch):
    """140,000 distinct 512-B granules (and as many sectors) within one pruning horizon: the
    maps of their next pass starts (280,000 entries) are pruned each time they have doubled,
    at 65,536, 131,072 and 262,144 entries: 3 times, not once per atomic beyond the first
    (quadratic)."""
    l2 = L2Cache(H100)
    calls = []
    prune = l2.atomics._prune
    monkeypatch.setattr(l2.atomics, "_prune", lambda t: (calls.append(t), prune(t)))
    for i in range(140_000):
        l2.atomic(float(i // 64), [16 * i], reduction=True)
    assert len(calls) == 3


# -- a DRAM fill writes its home slice's data array (l2.fill_cost_bytes_per_byte, validate/l2_fill_probe.py) --

def test_a_dram_fill_books_its_cost_at_its_home_slice():
    free = L2Cache(H100)
    free.read(0.0, [0, 1, 2, 3])                       # one line missed: 128 B looked up, two 64-B bursts filled
    costly = L2Cache(replace(l2={"fill_cost_bytes_per_byte": 0.5}))
    costly.read(0.0, [0, 1, 2, 3])
    assert sum(free.slice_bytes()) == 128.0
    assert sum(costly.slice_bytes()) == 128.0 + 0.5 * 128


def test_hits_after_many_fills_wait_for_the_slice_the_fills_took():
    def hit_after_fills(cost):
        l2 = L2Cache(replace(l2={"fill_cost_bytes_per_byte": cost}))
        sl = l2.slices
        same = [line for line in range(80 * 2000) if sl.locate(line)[2] == sl.locate(0)[2]]
        l2.read(0.0, [same[0] * 4])                    # a line to hit later
        for line in same[1:201]:                       # 200 misses of one slice at once
            l2.read(1000.0, [line * 4 + k for k in range(4)])
        return l2.read(1000.0 + L2_MISS, [same[0] * 4])   # a hit when their fills land
    assert hit_after_fills(1.0) > hit_after_fills(0.0) + 25     # 2073 against 2015 cycles


# -- written data on a port of its own (l2.write_port, validate/l2_fill_probe.py's stores) --

def _after_writes(port: bool):
    """An L2 that holds line 0, then takes 64 written lines of line 0's slice; and when a read of
    line 0 (a hit) is ready."""
    l2 = L2Cache(replace(l2={"write_port": port}))
    l2.read(0.0, [0, 1, 2, 3])
    l2.flush()                                          # line 0 resident, the slices idle
    home = l2.slices.locate(0)[2]
    same = [ln for ln in range(1, 20_000) if l2.slices.locate(ln)[2] == home][:64]
    for ln in same:
        l2.write(0.0, [4 * ln + k for k in range(4)])
    return l2.read(0.0, [0, 1, 2, 3]), l2


def test_a_write_port_of_its_own_keeps_written_data_off_the_reads_bandwidth():
    _, own = _after_writes(True)
    _, shared = _after_writes(False)
    assert sum(s.bytes_served for s in own.slices.write_servers) == 64 * 128.0
    assert sum(s.bytes_served for s in own.slices.servers) == 2 * 128.0          # line 0's two reads
    assert sum(s.bytes_served for s in shared.slices.servers) == 64 * 128.0 + 2 * 128.0


def test_a_read_behind_writes_at_its_slice_waits_for_them_only_without_a_write_port():
    own, _ = _after_writes(True)
    shared, _ = _after_writes(False)
    assert own == L2HIT
    assert shared == pytest.approx(L2HIT + 64 * 128 / 64.0, abs=2.0)    # 64 lines at 64 B a cycle first


# -- read misses wait for the lines writes allocate (l2.write_miss_read_wait_ns_per_gline_per_s, section 45) --

WAIT = 12.7                                             # ns per G lines a second: the H200's [MEAS-WMISS]


def _slice_lines(l2, n, skip=0):
    """n line indices of line 0's slice (after the first `skip`), in order."""
    sl = l2.slices
    home = sl.locate(0)[2]
    return [ln for ln in range(1, 400_000) if sl.locate(ln)[2] == home][skip:skip + n]


def _miss_after_writes(wait, writes, sectors_per_write=4, rewrite=False):
    """When a read miss of line 0's slice at cycle 2000 is back, after `writes` write requests
    to that slice spread over cycles 0-2000 (each `sectors_per_write` sectors of a new line;
    `rewrite`: into lines already allocated by a write of their first sector)."""
    l2 = L2Cache(replace(l2={"write_miss_read_wait_ns_per_gline_per_s": wait}))
    lines = _slice_lines(l2, writes + 1)
    if rewrite:
        for ln in lines[:writes]:
            l2.write(0.0, [ln * 4])
        l2.slices.write_wait.flush()                    # only the second writes below count
    for i, ln in enumerate(lines[:writes]):
        first = 1 if rewrite else 0
        l2.write(2000.0 * i / max(writes, 1), [ln * 4 + k for k in range(first, first + sectors_per_write)])
    return l2.read(2000.0, [lines[writes] * 4])


def test_a_read_miss_waits_in_proportion_to_the_lines_writes_allocated_at_its_slice():
    base = _miss_after_writes(0.0, 40)
    w20, w40 = _miss_after_writes(WAIT, 20) - base, _miss_after_writes(WAIT, 40) - base
    assert w20 > 20 and w40 == pytest.approx(2 * w20, rel=0.05)


def test_the_wait_is_the_spec_per_g_lines_a_second_at_a_steady_rate():
    # a slice allocating one line every 100 cycles: 80 slices x 1.98 G cycles / 100 = 1.584 G lines a second GPU-wide
    l2 = L2Cache(replace(l2={"write_miss_read_wait_ns_per_gline_per_s": WAIT}))
    lines = _slice_lines(l2, 201)
    for i, ln in enumerate(lines[:200]):
        l2.write(100.0 * i, [ln * 4 + k for k in range(4)])
    t = 19_950.0                                        # half-way between two writes: the rate's mean
    waited = l2.read(t, [lines[200] * 4]) - t
    plain = L2Cache(H100).read(t, [lines[200] * 4]) - t
    assert waited - plain == pytest.approx(WAIT * 1.584 * 1.98, rel=0.03)   # 39.8 cycles


def test_a_line_of_one_written_sector_costs_as_much_as_a_whole_line():
    base = _miss_after_writes(0.0, 40)
    assert _miss_after_writes(WAIT, 40, sectors_per_write=1) - base == \
        pytest.approx(_miss_after_writes(WAIT, 40) - base)


def test_writes_into_lines_already_allocated_make_no_read_wait():
    base = _miss_after_writes(0.0, 40, sectors_per_write=1, rewrite=True)
    assert _miss_after_writes(WAIT, 40, sectors_per_write=1, rewrite=True) == base


def test_read_hits_do_not_wait_for_write_misses():
    def hit(wait):
        l2 = L2Cache(replace(l2={"write_miss_read_wait_ns_per_gline_per_s": wait}))
        lines = _slice_lines(l2, 41)
        l2.read(0.0, [lines[40] * 4])                   # resident by cycle 2000
        for i, ln in enumerate(lines[:40]):
            l2.write(50.0 * i, [ln * 4 + k for k in range(4)])
        return l2.read(2000.0, [lines[40] * 4])
    assert hit(WAIT) == hit(0.0)


def test_the_wait_fades_once_the_writes_stop():
    l2 = L2Cache(replace(l2={"write_miss_read_wait_ns_per_gline_per_s": WAIT}))
    lines = _slice_lines(l2, 42)
    for i, ln in enumerate(lines[:40]):
        l2.write(50.0 * i, [ln * 4 + k for k in range(4)])
    soon = l2.read(2000.0, [lines[40] * 4]) - 2000.0
    later = l2.read(30_000.0, [lines[41] * 4]) - 30_000.0
    assert later < soon - 20 and later == pytest.approx(L2Cache(H100).read(30_000.0, [lines[41] * 4]) - 30_000.0,
                                                        abs=0.5)
