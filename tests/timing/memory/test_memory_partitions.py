"""The L2's two partitions: near copies, the fabric hop, Nsight's lts sector counts
(test spec: _memory_spec with `partitions=2`). One hardware property per test."""
import pytest

from _memory_spec import L2_HIT, L2_MISS, replace
from gpusim.timing.memory import MemorySystem

SPEC = replace(l2={"partitions": 2})
FABRIC = SPEC.l2.fabric_latency_cycles
FULL = 0xFFFFFFFF


def _line_homed_in(ms, part, start=0):
    line = start
    while ms.l2.home_of(line) != part:
        line += 1
    return line


def _lts(ms, op="read"):
    return ms.counters()[f"lts__t_sectors_op_{op}.sum"]


def test_sms_alternate_between_the_two_partitions():
    ms = MemorySystem(SPEC)
    near = _line_homed_in(ms, 0)
    ms.read(0.0, 0, [near * 4])
    assert ms.read(5000.0, 2, [near * 4]) == 5000.0 + L2_HIT          # SM 2 is on partition 0 as well
    assert ms.read(9000.0, 1, [near * 4]) == 9000.0 + L2_HIT + 2 * FABRIC   # SM 1 is not


def test_a_near_partition_access_counts_one_lts_sector():
    ms = MemorySystem(SPEC)
    ms.read(0.0, 0, [_line_homed_in(ms, 0) * 4])
    assert _lts(ms) == 1


def test_a_far_partition_access_counts_two_lts_sectors():
    ms = MemorySystem(SPEC)
    ms.read(0.0, 0, [_line_homed_in(ms, 1) * 4])
    c = ms.counters()
    assert (c["lts__t_sectors_op_read.sum"], c["lts__t_sectors_srcunit_ltcfabric.sum"]) == (2, 1)


def test_a_far_miss_takes_two_fabric_crossings_more_than_a_near_one_and_they_average_the_spec_latency():
    ms = MemorySystem(SPEC)
    near = ms.read(0.0, 0, [_line_homed_in(ms, 0) * 4])
    far = ms.read(1000.0, 0, [_line_homed_in(ms, 1, start=1000) * 4]) - 1000.0
    assert far - near == 2 * FABRIC
    assert (far + near) / 2 == L2_MISS                            # what a chase over both halves measures


def test_a_second_read_of_a_far_line_hits_the_near_copy():
    ms = MemorySystem(SPEC)
    far = _line_homed_in(ms, 1)
    ms.read(0.0, 0, [far * 4])
    assert ms.read(5000.0, 0, [far * 4]) == 5000.0 + L2_HIT
    assert _lts(ms) == 3                                           # 2 for the first read, 1 for the copy hit


def test_writes_to_a_far_line_count_twice_every_time():
    ms = MemorySystem(SPEC)
    far = _line_homed_in(ms, 1)
    for k in range(5):
        ms.write(1000.0 * k, 0, [far * 4], [FULL])
    assert _lts(ms, "write") == 10


def test_streaming_reads_from_both_partitions_count_one_and_a_half_lts_sectors_per_sector():
    ms = MemorySystem(SPEC)
    n = 8000
    for i in range(n):
        ms.read(float(i), i % 132, [4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3])
    assert _lts(ms) / (4 * n) == pytest.approx(1.5, abs=0.01)


def test_only_the_home_holds_dirty_data():
    ms = MemorySystem(SPEC)
    far = _line_homed_in(ms, 1)
    ms.write(0.0, 0, [far * 4, far * 4 + 1], [FULL, FULL])
    assert ms.l2.dirty_bytes() == 64                                # the home's two sectors, not the copy's


def test_a_write_from_the_home_side_drops_the_far_partitions_copy():
    ms = MemorySystem(SPEC)
    line = _line_homed_in(ms, 1)
    ms.read(0.0, 0, [line * 4])                                    # partition 0 holds a copy
    ms.write(5000.0, 1, [line * 4], [FULL])                        # SM 1 writes at the home
    assert ms.read(9000.0, 0, [line * 4]) == 9000.0 + L2_HIT + 2 * FABRIC   # the copy went stale


def test_a_write_through_the_copy_keeps_it_valid():
    ms = MemorySystem(SPEC)
    line = _line_homed_in(ms, 1)
    ms.write(0.0, 0, [line * 4], [FULL])                           # the near copy takes the bytes
    assert ms.read(5000.0, 0, [line * 4]) == 5000.0 + L2_HIT


def test_copies_take_capacity_so_two_ninths_of_the_l2_stay_dirty_after_vector_add():
    # per element 2 lines read, 1 written; a partition takes its homes (half of all lines, a third of
    # them written: W/2) and copies of the far half of its own SMs' lines ((R + W)/4): W/2 / (3/4 (R + W))
    # = 2/9 dirty with R = 2W (H200 measures 12.5 of 60 MB, 0.21)
    spec = replace(l2={"partitions": 2, "size_bytes": 2 * 1024 * 1024})
    ms = MemorySystem(spec)
    lines = spec.l2.size_bytes // 128 * 4                          # four capacities
    base = 1 << 22
    for i in range(lines):
        blk, k = divmod(i, 8)
        sm = blk % 132
        ms.read(float(i), sm, [4 * i + s for s in range(4)])
        ms.read(float(i), sm, [4 * (i + base) + s for s in range(4)])
        ms.write(float(i), sm, [4 * (i + 2 * base) + s for s in range(4)], [FULL] * 4)
    assert ms.l2.dirty_bytes() / ms.l2.capacity_bytes == pytest.approx(2 / 9, abs=0.03)


def test_the_fabric_books_the_far_bytes():
    ms = MemorySystem(SPEC)
    ms.read(0.0, 0, [_line_homed_in(ms, 1) * 4 + k for k in range(4)])
    ms.read(0.0, 0, [_line_homed_in(ms, 0) * 4])
    assert ms.counters()["gpusim__l2_fabric_bytes.sum"] == 128


def test_slices_must_divide_into_the_partitions():
    from gpusim.errors import ConfigError
    with pytest.raises(ConfigError, match="partitions"):
        replace(l2={"partitions": 3})


def test_a_far_reads_lookup_at_its_home_takes_the_fabrics_bandwidth_not_the_home_slices():
    ms = MemorySystem(SPEC)
    far = _line_homed_in(ms, 1)
    ms.read(0.0, 0, [far * 4, far * 4 + 1])
    sl = ms.l2.slices
    booked = [s.bytes_served for s in sl.servers]
    near = [i for i, b in enumerate(booked) if b]
    assert (sum(booked), len(near), near[0] // sl.slices_per_partition) == (64.0, 1, 0)   # only the near slice
    assert ms.l2.fabric.server.bytes_served == 64.0


# -- l2.far_writes_dirty_at_writer: a far line's stores stay dirty in the writer's near copy ---------------

WRITER = replace(l2={"partitions": 2, "size_bytes": 2 * 1024 * 1024, "far_writes_dirty_at_writer": True})


def _evict_partition(ms, part, t0):
    """Read twice a partition's capacity of other lines homed there, from an SM attached to it."""
    line, t = 1 << 20, t0
    for _ in range(2 * ms.l2.capacity_bytes // 128 // 2):
        line = _line_homed_in(ms, part, start=line + 1)
        ms.read(t, part, [line * 4])
        t += 10.0
    return t


def _dram_written(ms):
    return ms.counters()["dram__bytes_write.sum"]


@pytest.mark.parametrize("writer_dirty, home_evicted, copy_evicted", [(False, 32, 32), (True, 0, 32)])
def test_a_far_writes_bytes_go_to_dram_from_where_they_are_held_dirty(writer_dirty, home_evicted, copy_evicted):
    # write-through (only homes dirty): evicting the home writes the sector back; held at the writer:
    # evicting the home writes nothing, evicting the writer's copy writes the sector
    spec = WRITER if writer_dirty else replace(l2={"partitions": 2, "size_bytes": 2 * 1024 * 1024})
    ms = MemorySystem(spec)
    far = _line_homed_in(ms, 1)
    ms.write(0.0, 0, [far * 4], [FULL])                            # SM 0 (partition 0) writes a line homed in 1
    t = _evict_partition(ms, 1, 1000.0)
    assert _dram_written(ms) == home_evicted
    _evict_partition(ms, 0, t)
    assert _dram_written(ms) == copy_evicted


def test_a_home_side_write_takes_over_the_bytes_the_far_copy_held_dirty():
    ms = MemorySystem(WRITER)
    line = _line_homed_in(ms, 1)
    ms.write(0.0, 0, [line * 4], [0x0000FFFF])                     # the copy holds bytes 0-15 dirty
    ms.write(5000.0, 1, [line * 4], [0xFFFF0000])                  # SM 1 writes bytes 16-31 at the home
    assert ms.l2.dirty_bytes() == 32                               # the home holds the whole sector dirty
    t = _evict_partition(ms, 0, 9000.0)                            # the copy's eviction writes nothing
    assert _dram_written(ms) == 0
    _evict_partition(ms, 1, t)
    assert _dram_written(ms) == 32
