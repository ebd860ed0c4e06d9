"""The L2's units on their own (l2_slices, l2_partitions, l2_writeback, sampling/standins): one
property each (test spec: _memory_spec; 64-B DRAM bursts, 32-B ECC granules unless replaced)."""
from _memory_spec import SPEC, replace
from gpusim.timing.memory.hbm import HBM
from gpusim.timing.memory.l2_atomics import AtomicUnits
from gpusim.timing.memory.l2_partitions import PartitionFabric
from gpusim.timing.memory.l2_slices import FULL, READ, TEX, WRITE, L2Slices
from gpusim.timing.sampling.standins import StandIns
from gpusim.timing.memory.l2_writeback import WriteBack

TWO = replace(l2={"partitions": 2})
SMALL = replace(l2={"size_bytes": 80 * 4 * 16 * 128})          # 4 sets a slice: 640 KiB


def _slices(spec=SPEC, share=1.0):
    hbm = HBM(spec)
    sl = L2Slices(spec, 1.0, hbm, AtomicUnits(spec), WriteBack(spec, hbm))
    sl.standins = StandIns(sl, hbm, share, sl.capacity_lines)
    return sl


def _lines_in_set(sl, count, part=0, x=0):
    out, line = [], 0
    while len(out) < count:
        if sl.home_of(line) == part and sl.set_of(line) == x:
            out.append(line)
        line += 1
    return out


def test_locate_is_set_of_and_home_of():
    sl = _slices(TWO)
    for line in range(0, 200_000, 7):
        for _ in range(2):                                       # computed, then memoised
            x, home, s = sl.locate(line)
            assert (x, home, s < sl.slices_per_partition) == (sl.set_of(line), sl.home_of(line), True)


def test_a_full_set_evicts_its_least_recently_used_way():
    sl = _slices(SMALL)
    lines = _lines_in_set(sl, sl.ways + 1)
    for line in lines[:-1]:
        sl.entry(0, line, 0, 0.0)
    sl.entry(0, lines[0], 0, 1.0)                 # the oldest line is used again
    sl.entry(0, lines[-1], 0, 2.0)                # so the second oldest goes
    assert lines[1] not in sl.sets[0][0] and lines[0] in sl.sets[0][0]


def test_a_read_miss_fills_the_whole_dram_burst():
    sl = _slices()
    line = 5
    ent = sl.entry(0, line, sl.set_of(line), 0.0)
    sl.lookup(ent, 0.0, [line * 4], 0, 1, READ, None, None, TEX)
    sl.lookup(ent, 1e6, [line * 4 + 1], 0, 1, READ, None, None, TEX)   # the 64-B burst's other sector
    assert (sl.misses[TEX][READ], sl.hits[TEX][READ]) == (1, 1)


def test_a_write_dirties_its_sectors_and_counts_them_once():
    sl = _slices()
    line = 9
    ent = sl.entry(0, line, sl.set_of(line), 0.0)
    for _ in range(2):
        sl.lookup(ent, 0.0, [line * 4, line * 4 + 1, line * 4 + 2], 0, 3, WRITE, None, None, TEX)
    assert (sl.dirtied_sectors, sl.dirtied_bursts, sl.dirty_bytes()) == (3, 2, 96)


def test_evicting_a_dirty_line_writes_back_one_burst_per_dirty_burst():
    wb = WriteBack(SPEC, HBM(SPEC))
    ent = [0.0, 0.0, 0.0, 0.0, 0b1001, None, False, 0]          # sectors 0 and 3: bursts 0 and 1
    wb.write_back(0.0, 7, ent)
    assert (wb.dirty_evictions, wb.rmw_bursts) == (2, 0)


def test_a_dirty_sector_with_bytes_never_fetched_is_read_first():
    wb = WriteBack(SPEC, HBM(SPEC))
    ent = [0.0, None, None, None, 0b0001, {0: [0xFF, 0xFF]}, False, 0]   # 8 bytes written, never fetched
    wb.write_back(0.0, 7, ent)
    assert wb.rmw_bursts == 1


def test_a_write_covering_part_of_an_ecc_granule_costs_a_second_sector():
    wb = WriteBack(replace(l2={"ecc_granule_bytes": 4}), HBM(SPEC))
    assert wb.partial_cost([0xF, 0x3, FULL], 0, 3, [0, 1, 2], None) == 32   # only the 2-byte write splits a granule
    assert wb.partial_write_sectors == 1


def test_a_partial_write_into_a_sector_held_whole_costs_one_slot():
    wb = WriteBack(replace(l2={"ecc_granule_bytes": 32}), HBM(SPEC))
    ent = [0.0, None, None, None, 0, None, False, 0]              # sector 0 valid, the rest absent
    assert wb.partial_cost([0xF, 0xF], 0, 2, [0, 1], ent) == 32   # sector 1's write needs a merge slot, sector 0's not


def test_a_far_read_crosses_the_fabric_once_then_hits_the_near_copy():
    sl = _slices(TWO)
    fabric = PartitionFabric(TWO, 1.0, sl)
    line = next(n for n in range(1000) if sl.home_of(n) == 1)
    x, home, s = sl.locate(line)
    for t in (0.0, 1e6):
        fabric.far(line, s, x, home, 0, t, [line * 4, line * 4 + 1], 0, 2, READ, None, None, 64.0)
    assert fabric.server.bytes_served == 64.0
    assert sl.hits[TEX][READ] == 2                               # the second read, at the near copy


def test_a_write_at_the_home_drops_other_partitions_copies():
    sl = _slices(TWO)
    fabric = PartitionFabric(TWO, 1.0, sl)
    line = next(n for n in range(1000) if sl.home_of(n) == 0)
    x, home, s = sl.locate(line)
    fabric.far(line, s, x, home, 1, 0.0, [line * 4], 0, 1, READ, None, None, 32.0)   # partition 1 holds a copy
    fabric.drop_copies(line, x, home, 0, [line * 4], 0, 1)
    assert sl.sets[1][x][line][0] is None


def test_dirty_lines_at_launch_are_written_back_as_they_are_evicted():
    sl = _slices(SMALL)
    st = sl.standins
    nbytes = sl.capacity_lines * 128
    placed = st.preload_dirty(nbytes)                            # fills nearly every set
    x = next(x for x, od in enumerate(sl.sets[0]) if len(od) == sl.ways)
    for line in _lines_in_set(sl, sl.ways, x=x):                 # a kernel's lines evict one full set's
        sl.entry(0, line, x, 0.0)
    assert st.residue_written_bytes() == nbytes * sl.ways / placed


def test_no_phantoms_in_full_simulation():
    sl = _slices(share=1.0)
    assert not sl.standins.full(10 ** 9)
