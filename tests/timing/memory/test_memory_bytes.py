"""Byte-masked writes at the L2: valid and dirty bytes per sector, fills, read-modify-writes
(test spec: _memory_spec, one partition, 64-B DRAM bursts). One hardware property per test."""
import pytest

from _memory_spec import L2_HIT, L2_MISS, SPEC, replace
from gpusim.timing.memory import L2Cache, MemorySystem
from gpusim.timing.memory.hashing import unit_of

FULL = 0xFFFFFFFF
WORD = 0x0000000F                      # bytes 0..3 of a sector: one 4-byte store


def _lines_in_one_set(l2, count):
    """`count` lines homed in slice 0 that share a set."""
    out, line = [], 0
    while len(out) < count:
        if unit_of(line, l2.slice_count) == 0 and l2.set_of(line) == 0:
            out.append(line)
        line += 1
    return out


def _evict(l2, line, t=1000.0):
    """Push `line` out of its set by reading `ways` other lines of the set."""
    for i, ln in enumerate(_lines_in_one_set(l2, l2.ways + 1)[1:]):
        assert ln != line
        l2.read(t * (i + 1), [ln * 4])


def test_a_full_sector_store_causes_no_dram_read():
    ms = MemorySystem(SPEC)
    ms.write(0.0, 0, [100], [FULL])
    assert ms.read(1000.0, 0, [100]) == 1000.0 + L2_HIT
    assert ms.counters()["dram__bytes_read.sum"] == 0


def test_a_partial_store_to_an_absent_sector_allocates_without_a_fill():
    ms = MemorySystem(SPEC)
    ms.write(0.0, 0, [100], [WORD])
    c = ms.counters()
    assert (c["dram__bytes_read.sum"], c["lts__t_sectors_op_write_lookup_miss.sum"]) == (0, 1)


def test_reading_a_partially_written_sector_fetches_its_burst_and_then_hits():
    ms = MemorySystem(SPEC)
    ms.write(0.0, 0, [100], [WORD])
    assert ms.read(1000.0, 0, [100]) == 1000.0 + L2_MISS          # not wholly valid: a miss
    assert ms.read(3000.0, 0, [100]) == 3000.0 + L2_HIT           # merged: wholly valid now
    assert ms.counters()["dram__bytes_read.sum"] == 64


def test_eight_word_stores_make_a_whole_sector_without_a_fill():
    ms = MemorySystem(SPEC)
    for w in range(8):
        ms.write(10.0 * w, w, [100], [0xF << (4 * w)])
    assert ms.read(1000.0, 0, [100]) == 1000.0 + L2_HIT
    assert ms.counters()["dram__bytes_read.sum"] == 0


def test_an_evicted_half_written_sector_costs_one_sector_read_and_one_sector_write():
    # H200, random 4-byte stores (validate random_access/write): 32 B read and 32 B written per store
    l2 = L2Cache(SPEC)
    victim = _lines_in_one_set(l2, 1)[0]
    l2.write(0.0, [victim * 4], masks=[0x0000FFFF])               # 16 of the 32 bytes
    _evict(l2, victim)
    c = l2.hbm.counters()
    reads_for_the_others = l2.ways * 64                           # the evicting reads' own bursts
    assert c["dram__bytes_read.sum"] - reads_for_the_others == 32   # the read of the read-modify-write
    assert c["dram__bytes_write.sum"] == 32
    assert l2.counters()["gpusim__l2_rmw_bursts.sum"] == 1


def test_an_evicted_whole_burst_of_written_sectors_costs_no_read():
    l2 = L2Cache(SPEC)
    victim = _lines_in_one_set(l2, 1)[0]
    l2.write(0.0, [victim * 4, victim * 4 + 1], masks=[FULL, FULL])   # both sectors of a 64-B burst
    _evict(l2, victim)
    c = l2.hbm.counters()
    assert c["dram__bytes_read.sum"] == l2.ways * 64                # only the evicting reads
    assert c["dram__bytes_write.sum"] == 64


def test_a_whole_sector_beside_an_unwritten_one_is_written_alone_without_a_read():
    l2 = L2Cache(SPEC)
    victim = _lines_in_one_set(l2, 1)[0]
    l2.write(0.0, [victim * 4], masks=[FULL])
    _evict(l2, victim)
    assert l2.counters()["gpusim__l2_rmw_bursts.sum"] == 0
    assert l2.hbm.counters()["dram__bytes_write.sum"] == 32


def test_a_partly_written_sector_of_a_read_line_is_written_back_without_a_read():
    l2 = L2Cache(SPEC)
    victim = _lines_in_one_set(l2, 1)[0]
    l2.read(0.0, [victim * 4])                                     # the whole burst is valid
    l2.write(5000.0, [victim * 4], masks=[WORD])
    _evict(l2, victim, t=10000.0)
    assert l2.counters()["gpusim__l2_rmw_bursts.sum"] == 0
    assert l2.hbm.counters()["dram__bytes_write.sum"] == 32


def test_a_partial_store_takes_two_sectors_of_slice_bandwidth():
    # the L2's ECC covers a whole sector: writing part of one reads it first
    l2 = L2Cache(SPEC)
    for i in range(1000):
        l2.write(0.0, [i * 4 * 80], masks=[WORD])                  # 1000 lines of slice... all at t=0
    partial = sum(l2.slice_bytes())
    l2b = L2Cache(SPEC)
    for i in range(1000):
        l2b.write(0.0, [i * 4 * 80], masks=[FULL])
    assert partial == 2 * sum(l2b.slice_bytes())
    assert l2.counters()["gpusim__l2_partial_write_sectors.sum"] == 1000


def test_a_4_byte_ecc_granule_makes_word_stores_cost_one_sector():
    l2 = L2Cache(replace(l2={"ecc_granule_bytes": 4}))
    l2.write(0.0, [0], masks=[WORD])
    l2.write(0.0, [4], masks=[0x00000006])                          # bytes 1..2: half a granule
    assert l2.counters()["gpusim__l2_partial_write_sectors.sum"] == 1


def test_dirty_bytes_count_only_the_bytes_written():
    l2 = L2Cache(SPEC)
    l2.write(0.0, [0, 1], masks=[WORD, FULL])
    assert l2.dirty_bytes() == 4 + 32


@pytest.mark.parametrize("granule", [3, 64])
def test_an_ecc_granule_that_is_not_a_power_of_two_up_to_a_sector_is_refused(granule):
    from gpusim.errors import ConfigError
    with pytest.raises(ConfigError, match="ecc_granule_bytes"):
        replace(l2={"ecc_granule_bytes": granule})


def _dirty_line_under_younger_reads(l2):
    """A set holding one dirty line, then ways - 1 lines read after it (the oldest clean line
    evicted): the dirty line is at depth ways - 1, and its set allocated ways - 1 lines since."""
    first, dirty, *younger = _lines_in_one_set(l2, l2.ways + 1)
    l2.read(0.0, [first * 4])
    l2.write(50.0, [dirty * 4], masks=[FULL])
    for i, ln in enumerate(younger):
        l2.read(100.0 * (i + 1), [ln * 4])
    return dirty


def test_loop_sampling_counts_the_dirty_lines_its_left_out_loads_would_evict():
    l2 = L2Cache(SPEC)
    _dirty_line_under_younger_reads(l2)
    assert l2.skipped_traffic_writebacks(1.0) == (0, 0)            # every load simulated: still held
    assert l2.skipped_traffic_writebacks(2.0) == (1, 0)            # 15 + 1 * 15 >= 16: evicted
    assert l2.skipped_traffic_writebacks(1.05) == (0, 0)           # 15 + 0.05 * 15 < 16: held


def test_loop_sampling_keeps_a_dirty_line_used_after_the_set_last_allocated():
    # a local frame or a footprint that fits: every iteration uses it again, the left-out ones hit it
    l2 = L2Cache(SPEC)
    dirty = _dirty_line_under_younger_reads(l2)
    l2.read(5000.0, [dirty * 4])                                   # used again, nothing allocated since
    assert l2.skipped_traffic_writebacks(16.0) == (0, 0)
