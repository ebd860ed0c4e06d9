"""sm.shared_banks and sm.shared_bank_width_bytes change the model as bank theory says
(word w = offset // width in bank w % banks; wavefronts = most distinct words in one bank)."""
import numpy as np
import pytest

import gpusim
import programs
from gpusim.functional.shared_banks import shared_wavefronts
from gpusim.specs import resolve
from gpusim.specs.overrides import load_toml

LD_CONF = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
LD_WF = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
TIME = "gpu__time_duration.sum"


def _wavefronts(word_stride: int, nbytes: int = 4, banks: int = 32, width: int = 4) -> int:
    offsets = (np.arange(32, dtype=np.uint64) * np.uint64(word_stride * 4))
    return int(shared_wavefronts(np.zeros(32, np.int64), offsets, nbytes, 1, banks, width)[0])


@pytest.mark.parametrize("banks,stride,want", [(32, 32, 32), (64, 32, 16), (16, 32, 32), (16, 1, 2),
                                               (64, 1, 1), (64, 2, 1), (32, 2, 2), (128, 32, 8)])
def test_stride_wavefronts_follow_bank_count(banks, stride, want):
    assert _wavefronts(stride, banks=banks) == want


@pytest.mark.parametrize("stride,want", [(1, 1), (2, 1), (32, 16), (64, 32), (3, 2)])
def test_eight_byte_banks_pair_the_halves_of_a_word(stride, want):
    # 8-byte banks: lanes 2k and 2k+1 of a stride-1 read share one 8-byte word; a stride of
    # 32 words (128 B) lands on banks 0 and 16 only: 16 words each
    assert _wavefronts(stride, width=8) == want


def test_sixteen_byte_access_needs_four_wavefronts_of_4_byte_banks_and_two_of_8_byte():
    assert _wavefronts(4, nbytes=16) == 4
    assert _wavefronts(4, nbytes=16, width=8) == 2


def _conflicts(sets, stride=32):
    c = programs.get("bank_conflict_demo").case({"stride": stride})
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu=resolve("h100", sets))
    c.check()
    return r.metrics


def test_bank_conflict_demo_stride_32_halves_its_conflicts_with_64_banks():
    base, wide = _conflicts([]), _conflicts(["sm.shared_banks=64"])
    # 2048 warp reads (64 blocks x 8 warps x 4 reps): 32 wavefronts each with 32 banks, 16 with 64
    assert base[LD_WF] == 2048 * 32 and base[LD_CONF] == 63488
    assert wide[LD_WF] == 2048 * 16 and wide[LD_CONF] == 2048 * 15


def test_bank_conflict_demo_8_byte_banks_halve_stride_32_conflicts():
    assert _conflicts(["sm.shared_bank_width_bytes=8"])[LD_WF] == 2048 * 16


def test_sixteen_banks_make_a_conflict_free_stride_two_way():
    assert _conflicts([], stride=1)[LD_CONF] == 0
    assert _conflicts(["sm.shared_banks=16"], stride=1)[LD_CONF] == 2048


def test_toml_bank_fields_are_honoured_like_set(tmp_path):
    f = tmp_path / "wide.toml"
    f.write_text('base = "h100"\n[sm]\nshared_banks = 64\nshared_bank_width_bytes = 8\n')
    spec = load_toml(f)
    c = programs.get("bank_conflict_demo").case()
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu=spec)
    # 64 banks of 8 bytes: a 128-B stride maps 32 lanes onto banks 0, 16, 32, 48: 8 words each
    assert r.metrics[LD_WF] == 2048 * 8


def test_fewer_wavefronts_predict_less_time():
    df = gpusim.sweep("bank_conflict_demo", vary={"sm.shared_banks": [32, 64]}, progress=False)
    t32, t64 = df[TIME].tolist()
    assert t64 < t32 * 0.97
