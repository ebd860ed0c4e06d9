"""A bypassing cp.async's L2 requests (gpusim/timing/memory/copy_requests.py): its second reads of
sectors whose halves fill two shared sectors come in requests of their own, as many as its fill
wavefronts exceed its lines; each request takes at least a request's share of its slice."""
from _memory_spec import replace
from gpusim.timing.memory import L2Cache
from gpusim.timing.memory.copy_requests import repeat_runs
from gpusim.timing.memory.l2_slices import READ

LINE_SHIFT = 2                                       # 4 sectors a 128-B line


def _rows(lines: int, sectors: int) -> list:
    return [line * 4 + s for line in range(lines) for s in range(sectors)]


def test_mma_gemms_a_tile_reads_its_repeated_half_rows_in_seven_more_requests():
    # 8 rows of 64 B, every other one 16 B off a 32-B boundary: 8 repeated sectors of 4 lines, 15 wavefronts
    a = _rows(8, 2)
    assert repeat_runs(a, a[:8], 15, LINE_SHIFT) == [2] * 8 + [1, 1, 1, 1, 1, 1, 2]


def test_mma_gemms_b_tile_reads_its_repeated_rows_in_six_more_requests():
    # 4 rows of 128 B at a 144-B pitch: 8 repeated sectors of 2 lines, 10 wavefronts
    b = _rows(4, 4)
    assert repeat_runs(b, b[:8], 10, LINE_SHIFT) == [4] * 4 + [2, 1, 1, 2, 1, 1]


def test_without_wavefronts_beyond_its_lines_each_repeated_line_is_one_request():
    b = _rows(4, 4)
    assert repeat_runs(b, b[:8], 0, LINE_SHIFT) == [4] * 6


def test_never_more_requests_than_repeated_sectors():
    a = _rows(8, 2)
    assert repeat_runs(a, a[:2], 100, LINE_SHIFT) == [2] * 8 + [1, 1]


def test_a_line_read_in_two_requests_takes_two_request_shares_of_its_slice():
    # 64 B a cycle, half a request a cycle: a request's share is 128 B
    spec = replace(l2={"bandwidth_bytes_per_cycle_per_slice": 64.0, "requests_per_cycle_per_slice": 0.5})
    one, two = L2Cache(spec, pipeline_latency_cycles=0), L2Cache(spec, pipeline_latency_cycles=0)
    one.read(0.0, [0, 1])
    two._access(0.0, [0, 1], READ, runs=[1, 1])
    assert [sum(s.bytes_served for s in c.slices.servers) for c in (one, two)] == [128.0, 256.0]
