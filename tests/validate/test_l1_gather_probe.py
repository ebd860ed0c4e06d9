"""validate/l1_gather_probe.py without a GPU: each pattern's lines and words a bank, and the
committed H200 run (data/measurements/l1_gather_h200.json) read as `measure` wrote it."""
import json
from pathlib import Path

from validate import l1_gather_probe as probe

MEASURED = Path(__file__).resolve().parents[2] / "data" / "measurements" / "l1_gather_h200.json"


def _rows():
    return {r["case"]: r for r in probe.derive(json.loads(MEASURED.read_text())["kernels"])}


def test_lanes_132_bytes_apart_are_32_lines_in_32_banks():
    assert probe.shape(probe.PATTERNS["s33"]) == {"lines": 32, "sectors": 32, "words": 32, "bank_max": 1}


def test_lanes_128_bytes_apart_are_32_lines_in_one_bank():
    assert probe.shape(probe.PATTERNS["s32"])["bank_max"] == 32


def test_on_the_h200_one_bank_costs_four_times_32_banks_for_32_lines():
    rows = _rows()
    assert 3.5 < rows["s32"]["per_load"] / rows["s33"]["per_load"] < 4.1


def test_on_the_h200_nsight_data_wavefronts_are_the_most_words_in_a_bank():
    for case, r in _rows().items():
        m = r["metrics"]
        per_request = m["l1tex__data_pipe_lsu_wavefronts.sum"] / m["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
        if case != "base":
            assert abs(per_request - r["bank_max"]) < 0.15 * r["bank_max"] + 0.1, case
