"""The L1 tag stage of H100/H200 looks up one line a cycle (`l1.tag_banks` 1, [MEAS-L1TAG]: a
warp whose lanes hit 32 L1-resident lines holds the stage 32 cycles whether the lines are
consecutive or 4 apart); with 4 banks (line mod 4) 32 consecutive lines take 8."""
import dataclasses

import numpy as np

from gpusim import specs
from gpusim.timing.memory.l1 import L1Cache
from gpusim.timing.memory.system import MemorySystem

H100 = specs.get("h100")
L1_DATA = 128 * 1024


def _hit_time(spec, sectors):
    l1 = L1Cache(spec, L1_DATA, MemorySystem(spec), 0)
    l1.load(0.0, sectors)                                # fill
    return l1.load(100_000.0, sectors) - 100_000.0 - spec.l1.hit_latency_cycles


def _banks(n):
    return dataclasses.replace(H100, l1=dataclasses.replace(H100.l1, tag_banks=n))


def test_hopper_presets_look_up_one_l1_line_a_cycle():
    assert specs.get("h100").l1.tag_banks == 1
    assert specs.get("h200").l1.tag_banks == 1


def test_32_consecutive_lines_hold_the_stage_a_cycle_each_with_one_bank_and_a_quarter_with_four():
    lines = np.arange(0, 32 * 4, 4, dtype=np.uint64)     # one sector in each of 32 consecutive lines
    assert _hit_time(_banks(1), lines) == 31
    assert _hit_time(_banks(4), lines) == 7              # 8 data wavefronts: the 4 banks keep up


def test_one_line_of_four_sectors_takes_one_cycle_either_way():
    line = np.arange(8, 12, dtype=np.uint64)
    assert _hit_time(_banks(1), line) == 0
    assert _hit_time(_banks(4), line) == 0
