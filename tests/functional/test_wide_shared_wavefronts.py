"""Wide shared-memory accesses (LDS.64 / LDS.128 and their stores) take the wavefronts an H200
counts (data/measurements/wide_shared_h200.json, `python -m validate.wide_shared_probe`):
lanes served in groups that carry one wavefront's bytes (half-warps at 8 B, quarter-warps at
16 B); a store sums the groups, a load merges two neighbouring groups that together need one
wavefront (gpusim/functional/shared_banks.py `shared_wavefronts`, the compiled fast path
`fastpath/lsu_kernels.place_shared`)."""
import json
from pathlib import Path

import numpy as np
import pytest

from gpusim.functional.fastpath import lsu_kernels as K
from gpusim.functional.shared_banks import shared_wavefronts
from validate import wide_shared_probe as probe

MEASURED = Path(__file__).resolve().parents[2] / "data" / "measurements" / "wide_shared_h200.json"
U64 = np.uint64


def _measured(what: str = "wavefronts_per_inst") -> dict:
    """(op, pattern, width) -> wavefronts (or bank conflicts) a warp instruction, measured with 32 warps."""
    rows = probe.derive(json.loads(MEASURED.read_text())["kernels"])
    return {(r["op"], r["pattern"], r["width"]): r[what] for r in rows
            if r.get("warps") == 32 and r["op"] != "base"}


def _offsets(pattern: str, width: int) -> np.ndarray:
    return np.array([int(e) * width for e in probe.lane_elements(pattern)], U64)


def _reference(op: str, pattern: str, width: int, conflicts: bool = False) -> int:
    wf, free = shared_wavefronts(np.zeros(32, np.int64), _offsets(pattern, width), width, 1,
                                 lanes=np.arange(32), store=op == "st", free=True)
    return int(wf[0] - free[0]) if conflicts else int(wf[0])


def _compiled(op: str, pattern: str, width: int, conflicts: bool = False) -> int:
    offs = _offsets(pattern, width)
    res = np.zeros(3, np.int64)
    out = np.empty(32, np.int64)
    none = np.zeros(1, bool)
    group = 128 // width if width > 4 else 32
    status = K.place_shared(offs, U64(0), False, U64(0), none, False, none, False, 0, 32, width, width,
                            U64(4096), U64(4096), 32, 4096, 32, 2, out, res, np.zeros(1, np.int64), False,
                            group, op == "st")
    assert status == K.OK
    return int(res[2] - res[1]) if conflicts else int(res[2])


CASES = [(op, p, w) for op in ("ld", "st") for p in probe.PATTERNS for w in probe.WIDTHS]


@pytest.mark.parametrize("op,pattern,width", CASES)
def test_reference_unit_counts_what_the_h200_counts(op, pattern, width):
    assert _reference(op, pattern, width) == round(_measured()[(op, pattern, width)])


@pytest.mark.parametrize("op,pattern,width", CASES)
def test_compiled_fast_path_counts_what_the_reference_counts(op, pattern, width):
    assert _compiled(op, pattern, width) == _reference(op, pattern, width)


@pytest.mark.parametrize("op,pattern,width", CASES)
def test_bank_conflicts_are_the_wavefronts_beyond_one_a_lane_group_as_the_h200_counts(op, pattern, width):
    want = round(_measured("conflicts_per_inst")[(op, pattern, width)])
    assert _reference(op, pattern, width, conflicts=True) == _compiled(op, pattern, width, conflicts=True) == want


def test_a_broadcast_ldS128_is_two_wavefronts_and_its_store_four():
    assert _reference("ld", "bcast", 16) == 2 and _reference("st", "bcast", 16) == 4


def test_quarter_warps_with_four_words_a_bank_take_sixteen_not_the_warps_four():
    assert probe.bank_words("seq_interleaved", 16) == 4
    assert _reference("ld", "seq_interleaved", 16) == 16
