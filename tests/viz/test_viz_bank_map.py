"""Bank maps: the wavefronts drawn are the ones the load/store unit counts."""
import numpy as np
import pytest

import gpusim
import programs
from gpusim.viz import bank_map, capture

WF_LD = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
CONF_LD = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"


def demo_case(stride):
    return programs.get("bank_conflict_demo").case({"blocks": 1, "stride": stride, "reps": 4})


def read_line(case):
    return next(n for n, text in enumerate(open(case.kernel.py_func.__code__.co_filename), 1)
                if "acc += sh[" in text)


def test_column_read_of_a_32x32_tile_takes_32_wavefronts_all_in_one_bank():
    m = bank_map.bank_map("transpose_shared")
    assert m.wavefronts == 32
    assert len(np.unique(m.bank)) == 1 and sorted(m.wavefront.tolist()) == list(range(32))


def test_column_read_of_a_padded_32x33_tile_takes_1_wavefront_over_32_banks():
    m = bank_map.bank_map("transpose_padded")
    assert m.wavefronts == 1 and m.bank_conflicts == 0
    assert sorted(m.bank.tolist()) == list(range(32))


def test_stride_32_bank_maps_add_up_to_the_lines_wavefront_and_conflict_counters():
    case = demo_case(32)
    line = read_line(case)
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args)
    maps = bank_map.bank_maps(capture(demo_case(32)), line)
    assert len(maps) == 8 * 4 and {m.wavefronts for m in maps} == {32}           # 8 warps x 4 reads
    assert sum(m.wavefronts for m in maps) == r.lines[line].metrics[WF_LD]
    assert sum(m.bank_conflicts for m in maps) == r.lines[line].metrics[CONF_LD]


@pytest.mark.parametrize("stride,want", [(2, 2), (3, 1), (8, 8)])
def test_stride_s_read_takes_gcd_s_32_wavefronts(stride, want):
    case = demo_case(stride)
    assert bank_map.bank_map(case, read_line(case)).wavefronts == want


def test_padding_comparison_writes_a_png(tmp_path):
    out = tmp_path / "banks.png"
    bank_map.padding_comparison(path=out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


@pytest.mark.parametrize("stride", [1, 2, 32, 33])
def test_wavefronts_without_the_map_equal_the_maps_count(stride):
    cap = capture(demo_case(stride))
    shared = [a for a in cap.accesses if a.space == "shared"]
    assert shared and [bank_map.wavefronts(a) for a in shared] == [bank_map.from_access(a).wavefronts for a in shared]
