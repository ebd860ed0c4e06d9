"""The L1 stage of H100/H200 ([MEAS-L1GATHER], validate/l1_gather_probe.py): a request holds it
for its sectors in its busiest bank group (sector index mod 4: the 4 sectors of a line cover the
32 banks) or its distinct lines over `l1.tag_lines_per_cycle`, whichever is more."""
import dataclasses

import numpy as np

from gpusim import specs
from gpusim.timing.memory.l1 import L1Cache
from gpusim.timing.memory.system import MemorySystem

H100 = specs.get("h100")
L1_DATA = 128 * 1024


def _hit_cycles(spec, words):
    """Cycles an L1-hit load of 4-B `words` holds the stage (the second of two identical loads)."""
    sectors = np.unique(np.asarray(words, np.uint64) // np.uint64(8))
    l1 = L1Cache(spec, L1_DATA, MemorySystem(spec), 0)
    l1.load(0.0, sectors)                                # fill
    return l1.load(100_000.0, sectors) - 100_000.0 - spec.l1.hit_latency_cycles + 1


def test_hopper_presets_look_up_four_lines_a_cycle():
    assert specs.get("h100").l1.tag_lines_per_cycle == 4
    assert specs.get("h200").l1.tag_lines_per_cycle == 4


def test_32_lines_in_one_bank_group_take_32_cycles():
    assert _hit_cycles(H100, [32 * lane for lane in range(32)]) == 32      # lanes 128 B apart: measured 32.0


def test_32_lines_over_every_bank_group_take_8_cycles():
    assert _hit_cycles(H100, [33 * lane for lane in range(32)]) == 8       # lanes 132 B apart: measured 8.55
    assert _hit_cycles(H100, [513 * lane for lane in range(32)]) == 8      # 2,052 B apart: measured 8.0


def test_8_lines_of_32_sectors_in_4_groups_take_8_cycles():
    assert _hit_cycles(H100, [8 * lane for lane in range(32)]) == 8        # lanes 32 B apart: measured 8.0


def test_a_coalesced_line_takes_one_cycle():
    assert _hit_cycles(H100, list(range(32))) == 1


def test_one_tag_lookup_a_cycle_binds_where_the_data_does_not():
    one = dataclasses.replace(H100, l1=dataclasses.replace(H100.l1, tag_lines_per_cycle=1))
    words = [33 * lane for lane in range(32)]
    assert _hit_cycles(one, words) == 32 > _hit_cycles(H100, words)
