"""The L1's tag and data stages on their own (l1_stage.py; test spec: 4 tag banks, 128 B a cycle)."""
from _memory_spec import SPEC
from gpusim.timing.memory.l1_stage import L1Stage


def test_eight_lines_in_one_tag_bank_hold_the_stage_eight_cycles():
    stage = L1Stage(SPEC)
    sectors = [line * 4 * 4 for line in range(8)]                # lines 0, 4, ..., 28: all bank 0
    assert stage.book(0.0, len(sectors), sectors) == (0.0, 8)


def test_requests_take_the_stage_in_order():
    stage = L1Stage(SPEC)
    stage.book(10.0, 8)                                          # 8 sectors: 2 wavefronts
    assert stage.book(10.0, 4) == (12.0, 1)
