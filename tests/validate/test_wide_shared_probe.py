"""validate/wide_shared_probe.py without a GPU: the lanes' element maps, its CUDA source compiled
through gpusim's NVRTC path and run functionally (the sums and read-backs every case writes), every
access of the loop kept in gpusim (2 repetitions instead of REPS), the GPU side importing nothing
of gpusim, and the rates and tables of a measured file as `measure` writes it."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpusim
from validate import wide_shared_probe as probe

CASES = {c["case"]: c for c in probe.cases((1, 4, 32))}
LD_WF = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
ST_WF = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
ROOT = Path(__file__).resolve().parents[2]


def short(name: str, reps: int = 2) -> dict:
    """The case `name` at `reps` repetitions (a base stays at 0)."""
    return dict(CASES[name], reps=0 if name.startswith("base") else reps)


def run(name: str, reps: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """What the case writes in gpusim's functional run, and what `expected` says it writes."""
    c = short(name, reps)
    out = np.full(probe.OUT_WORDS, -1.0, np.float32)
    gpusim.launch(gpusim.CudaSource(probe.SOURCE, c["kernel"]), 1, 32 * c["warps"],
                  (np.ones(4, np.float32), probe.PATTERN_TABLE.ravel().copy(), out, np.int32(reps),
                   np.int32(c["which"])), gpu="h100")
    return out[:32 * c["warps"]], probe.expected(c)


def test_half_bcast_is_two_addresses_lanes_0_to_15_on_the_first():
    e = probe.lane_elements("half_bcast")
    assert e[:16].tolist() == [0] * 16 and e[16:].tolist() == [1] * 16


def test_quarter_is_four_addresses_eight_lanes_each_and_pairs_two_lanes_an_element():
    assert probe.lane_elements("quarter").tolist() == [l // 8 for l in range(32)]
    assert np.bincount(probe.lane_elements("pairs")).tolist() == [2] * 16


def test_the_seq_permutations_cover_elements_0_to_31_once():
    assert probe.lane_elements("seq_half_swapped")[:3].tolist() == [16, 17, 18]
    assert probe.lane_elements("seq_interleaved")[:5].tolist() == [0, 8, 16, 24, 1]
    for p in ("seq", "seq_half_swapped", "seq_interleaved"):
        assert sorted(probe.lane_elements(p).tolist()) == list(range(32)), p


def test_the_widest_pattern_ends_inside_the_1_kib_array():
    # stride2 of float4: lane 31 at element 62, bytes 992..1007
    assert (probe.lane_elements("stride2").max() + 1) * 16 == 1008 <= probe.WORDS * 4


def test_most_words_in_one_bank():
    assert probe.bank_words("bcast", 16) == 1 and probe.bank_words("pairs", 16) == 2
    assert probe.bank_words("seq", 16) == 4 and probe.bank_words("seq_interleaved", 16) == 4
    assert probe.bank_words("stride2", 8) == 4 and probe.bank_words("stride2", 4) == 2


def test_a_float4_load_of_interleaved_lanes_sums_each_lanes_element():
    # lane 1 at element 8 (word 32), lane 4 at element 1 (word 4): 2 reps x 16 loads of x
    out, expected = run("ld_seq_interleaved_b16_w4")
    assert out[1] == 32 * 32 and out[4] == 4 * 32 and out[32 + 1] == 32 * 32
    assert np.array_equal(out, expected)


def test_a_float2_half_broadcast_load_reads_element_1_in_the_upper_half():
    out, expected = run("ld_half_bcast_b8_w1")          # element 1 of 8 B: word 2
    assert out[:16].tolist() == [0.0] * 16 and out[16:].tolist() == [2 * 2 * 16.0] * 16
    assert np.array_equal(out, expected)


def test_float4_and_float2_stores_leave_the_last_value_in_every_lanes_element():
    out, expected = run("st_stride2_b16_w1", reps=3)
    assert out.tolist() == expected.tolist() == [2.0] * 32
    out, expected = run("st_pairs_b8_w4", reps=3)
    assert out.tolist() == expected.tolist() == [2.0] * 128


def _predicted(*names: str) -> dict[str, dict]:
    rows = probe.predict("h100", todo=[short(n) for n in ("base_w1", *names)])
    return {r["case"]: r for r in rows}


@pytest.mark.slow                       # 0.6-0.9 s: four kernels through the timing model
def test_gpusim_keeps_every_wide_access_of_the_loop_one_instruction_a_step():
    rows = _predicted("ld_bcast_b16_w1", "ld_seq_b16_w1", "st_stride2_b8_w1")
    assert rows["ld_bcast_b16_w1"]["wavefronts_per_inst"] == 2.0       # two half-warps, as the H200 counts
    assert rows["ld_seq_b16_w1"]["wavefronts_per_inst"] == 4.0
    assert rows["st_stride2_b8_w1"]["wavefronts_per_inst"] == 4.0
    m = rows["ld_seq_b16_w1"]["metrics"]          # 2 x 16 LDS.128 of 4 wavefronts, no conflict (as the H200 counts)
    assert m[LD_WF] == 2 * 16 * 4 and m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 0
    assert rows["st_stride2_b8_w1"]["metrics"][ST_WF] == 2 * 16 * 4 + probe.WORDS // 32       # + the fill


def test_the_gpu_side_imports_nothing_of_gpusim_or_isa():
    code = ("import sys, validate.wide_shared_probe; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('gpusim', 'isa')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _measured(case: str, cycles: float, wf: float, inst: float) -> dict:
    op = "st" if CASES[case]["op"] == "st" else "ld"
    return {**CASES[case], "cycles": cycles, "metrics": {f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum": wf,
                                                        f"smsp__inst_executed_op_shared_{op}.sum": inst}}


def test_rates_take_the_base_of_the_same_warps_off():
    n = 4 * probe.REPS * probe.UNROLL                  # warp instructions of the loop, W = 4
    rows = probe.derive([_measured("base_w1", 900, 0, 0), _measured("base_w4", 1000, 0, 0),
                         _measured("ld_bcast_b16_w4", 1000 + 2.5 * n, 2 * n, n),
                         _measured("st_seq_b16_w4", 1000 + 4 * n, 8 + 4 * n, 8 + n)])
    ld, st = rows[2], rows[3]
    assert ld["wavefronts_per_inst"] == 2.0 and ld["cycles_per_inst_sm"] == 2.5 and ld["shared_inst_per_step"] == 1.0
    assert st["wavefronts_per_inst"] == 4.0 + 8 / n and st["cycles_per_inst_sm"] == 4.0
    text = probe.table(rows)
    at = text.index("[meas] ld, W = 4")
    assert text[at:].splitlines()[2].split() == ["bcast", "-", "/", "-", "-", "/", "-", "2.00", "/", "2.5"]


def test_predict_puts_a_measured_file_beside_the_prediction(tmp_path):
    n = 2 * probe.UNROLL
    doc = {"provenance": {"warps": [1]},
           "kernels": [_measured("base_w1", 500, 0, 0), _measured("ld_bcast_b16_w1", 500 + 9.0 * n, 2 * n, n)]}
    path = tmp_path / "wide_shared.json"
    path.write_text(json.dumps(doc))
    rows = probe.predict("h100", str(path), todo=[short(c) for c in ("base_w1", "ld_bcast_b16_w1")])
    assert rows[1]["measured_wavefronts_per_inst"] == 2.0 and rows[1]["measured_cycles_per_inst_sm"] == 9.0
    assert rows[1]["wavefronts_per_inst"] == 2.0
    assert "wf/inst meas" in probe.table(rows)


def test_measure_writes_a_case_a_kernel_triple_in_launch_order_and_reports_wrong_outputs(tmp_path, monkeypatch):
    todo = probe.cases((1,))
    kernels = [{"kernel_name": c["kernel"], "grid": "(1, 1, 1)",
                "metrics": {"sm__cycles_elapsed.max": 100.0 * i + j, "gpu__time_duration.sum": 10.0 * i}}
               for i, c in enumerate(todo) for j in range(probe.REPEATS)]
    done = subprocess.CompletedProcess(["ncu"], 0, stdout="WRONG OUTPUT ld_seq_b4_w1: out [0.0]\n")
    monkeypatch.setattr(probe.ncu, "profile_worker", lambda module, metrics, log: (["ncu", "--csv"], done, kernels))
    monkeypatch.setattr(probe.ncu, "gpu_identity", lambda: "NVIDIA H100 80GB HBM3, 580.159.04, 1980 MHz")
    monkeypatch.setattr(probe, "_machine", lambda ncu_path: {"cupy": "14.2.0"})
    path, rows, problems = probe.measure(str(tmp_path), (1,))
    doc = json.loads(path.read_text())
    got = {r["case"]: r for r in doc["kernels"]}
    assert problems == doc["problems"] == ["WRONG OUTPUT ld_seq_b4_w1: out [0.0]"]
    assert doc["provenance"]["warps"] == [1] and doc["provenance"]["cupy"] == "14.2.0"
    assert len(got) == len(todo) == 1 + 2 * len(probe.PATTERNS) * len(probe.WIDTHS)
    assert got["ld_bcast_b4_w1"]["cycles"] == 100.0 * 1 + 1 and got["ld_bcast_b4_w1"]["cycles_all"] == [100, 101, 102]
