"""The L2's limit on lines with partly written sectors (`l2.partial_lines_per_slice`,
l2_partial_lines.py; [MEAS-PARTIAL], docs/mechanisms_24.md section 49): one property each (test spec:
_memory_spec, one partition, 64-B DRAM bursts)."""
from _memory_spec import replace
from gpusim.timing.memory.l2 import L2Cache

LIMITED = replace(l2={"partial_lines_per_slice": 2})
UNLIMITED = replace(l2={"partial_lines_per_slice": 0})
WORD = 0xF                                                        # one 4-byte store's bytes of a sector


def _lines_of_one_slice(l2, count):
    out, line, want = [], 0, None
    while len(out) < count:
        x, home, s = l2.slices.locate(line)
        if want is None:
            want = (home, s)
        if (home, s) == want:
            out.append(line)
        line += 1
    return out


def _store_words(l2, lines, t=0.0):
    for i, line in enumerate(lines):
        l2.write(t + 10.0 * i, [line * 4], masks=[WORD])          # sector 0 of each line, 4 bytes


def test_beyond_the_limit_the_least_recently_written_partial_line_is_completed_from_dram():
    l2 = L2Cache(LIMITED)
    _store_words(l2, _lines_of_one_slice(l2, 5))
    assert l2.slices.partial.completed_bursts == 3                # five partial lines, two kept
    assert l2.hbm.bytes_read == 3 * 32                            # each completion reads its partial sector


def test_without_a_limit_partial_lines_wait_for_their_eviction():
    l2 = L2Cache(UNLIMITED)
    _store_words(l2, _lines_of_one_slice(l2, 5))
    assert l2.slices.partial is None
    assert l2.hbm.bytes_read == 0


def test_a_completed_sector_stays_whole_and_clean():
    l2 = L2Cache(LIMITED)
    lines = _lines_of_one_slice(l2, 3)
    _store_words(l2, lines)                                       # the first line is completed
    ent = l2.slices.sets[0][l2.slices.set_of(lines[0])][lines[0]]
    spl = l2.sectors_per_line
    assert ent[0] is not None and not ent[spl + 1] and not ent[spl] & 1
    l2.read(1e6, [lines[0] * 4])
    assert l2.hbm.bytes_read == 32                                # the read hits: no second fetch


def test_a_sector_completed_by_its_own_stores_leaves_the_partial_lines():
    l2 = L2Cache(LIMITED)
    lines = _lines_of_one_slice(l2, 5)
    for i, line in enumerate(lines):                              # two 16-B halves of one sector, one after the other
        l2.write(20.0 * i, [line * 4], masks=[0x0000FFFF])
        l2.write(20.0 * i + 5.0, [line * 4], masks=[0xFFFF0000])
    assert l2.slices.partial.completed_bursts == 0
    assert l2.hbm.bytes_read == 0
