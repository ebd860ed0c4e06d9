"""validate/shared_banks_probe.py without a GPU: its CUDA source compiles through gpusim's NVRTC path
and every shared access of the loop is kept (wavefronts and conflicts counted in gpusim, at 2
repetitions instead of REPS), the GPU side imports nothing of gpusim, and the derived rates and
the hypothesis table read a measured file as `measure` writes it."""
import json
import subprocess

from validate import shared_banks_probe as probe

CASES = {c["case"]: c for c in probe.CASES}
LD_WF = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
ST_WF = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"


def predicted(*names: str, reps: int = 2) -> dict[str, dict]:
    rows = probe.predict("h100", cases=[dict(CASES[n], reps=reps) for n in names])
    return {r["case"]: r for r in rows}


def test_forty_cases_named_once_each():
    assert len(probe.CASES) == 40 and len(CASES) == 40


def test_one_warp_32_way_same_bank_loads_are_32_wavefronts_each_none_hoisted():
    # 2 reps x 16 volatile loads of one warp, all 32 lanes in bank 0: 32 wavefronts, 31 conflicts each
    m = predicted("ld_k32_w1_same")["ld_k32_w1_same"]["metrics"]
    assert m[LD_WF] == 2 * 16 * 32
    assert m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 2 * 16 * 31


def test_stores_of_four_warps_in_their_own_banks_are_all_kept():
    # 4 warps x 32 volatile stores to one word a lane (32-way), plus the fill: 2,048 words conflict-free
    m = predicted("st_k32_w4_diff")["st_k32_w4_diff"]["metrics"]
    assert m[ST_WF] == 4 * 2 * 16 * 32 + probe.WORDS // 32


def test_a_dependent_chain_of_8_way_loads_is_8_wavefronts_a_step():
    case = dict(CASES["chain_k32_w4_diff"], k=8, shift=4, case="chain_k8_w4_diff")
    m = {r["case"]: r for r in probe.predict("h100", cases=[dict(case, reps=2)])}["chain_k8_w4_diff"]
    assert m["wavefronts_per_inst"] == 8.0


def test_ncu_grid_size_reads_as_blocks():
    assert probe._grid_x("(528, 1, 1)") == 528 and probe._grid_x("") is None


def _measured_row(case: str, cycles: float, wavefronts: float) -> dict:
    c = CASES[case]
    return {**c, "cycles": cycles, "blocks": 1, "metrics": {LD_WF: wavefronts, "sm__cycles_elapsed.max": cycles}}


def test_rates_take_the_baseline_off_and_count_smsp_as_a_quarter_of_the_warps():
    steps = probe.REPS * probe.UNROLL
    rows = probe.derive([_measured_row("base_k1_w1_all", 1000, 0), _measured_row("base_k1_w32_all", 3000, 0),
                         _measured_row("ld_k32_w4_same", 1000 + 64 * 4 * steps, 32 * 4 * steps),
                         _measured_row("ld_k32_w4_diff", 1000 + 32 * 4 * steps, 32 * 4 * steps)])
    same, diff = rows[2], rows[3]
    assert same["cycles_per_inst_sm"] == 64.0 and same["cycles_per_inst_smsp"] == 256.0
    assert diff["cycles_per_inst_sm"] == 32.0 and diff["wavefronts_per_inst"] == 32.0
    # the table's (a) line shows same/diff = 2.00 at W4 for a measured file
    assert "ld_k32: W4  2.00" in probe.table(rows)


def test_predict_puts_a_measured_file_beside_the_prediction(tmp_path):
    steps = 2 * probe.UNROLL
    doc = {"kernels": [_measured_row("ld_k32_w1_same", 97.0 * steps, 32 * steps)]}
    path = tmp_path / "shared_banks.json"
    path.write_text(json.dumps(doc))
    row = probe.predict("h100", str(path), cases=[dict(CASES["ld_k32_w1_same"], reps=2)])[0]
    assert row["measured_cycles_per_inst_sm"] == 97.0 and row["measured_wavefronts_per_inst"] == 32.0
    assert row["wavefronts_per_inst"] == 32.0


def test_measure_writes_a_case_a_kernel_triple_in_launch_order(tmp_path, monkeypatch):
    # ncu stood in for: 3 profiled launches a case, in CASES' order, cycles 100 x the case's index (+0, +1, +2)
    kernels = [{"kernel_name": c["kernel"], "grid": "(528, 1, 1)" if c["blocks_per_sm"] == 4 else "(1, 1, 1)",
                "metrics": {"sm__cycles_elapsed.max": 100.0 * i + j, "gpu__time_duration.sum": 10.0 * i}}
               for i, c in enumerate(probe.CASES) for j in range(probe.REPEATS)]
    done = subprocess.CompletedProcess(["ncu"], 0, stdout="")
    monkeypatch.setattr(probe.ncu, "profile_worker", lambda module, metrics, log: (["ncu", "--csv"], done, kernels))
    monkeypatch.setattr(probe.ncu, "gpu_identity", lambda: "NVIDIA H100 80GB HBM3, 570.00, 1980 MHz")
    doc = json.loads(probe.measure(str(tmp_path)).read_text())
    rows = {r["case"]: r for r in doc["kernels"]}
    assert doc["problems"] == [] and doc["provenance"]["command"] == "python -m validate.shared_banks_probe $OUT"
    assert rows["ld_k32_w4_same_4b"]["cycles"] == 100.0 * 36 + 1 and rows["ld_k32_w4_same_4b"]["blocks"] == 528
