"""The scan-phase probe's committed H100 measurements (validate/scan_phases_probe.py;
data/measurements/scan_phases_h100_run5.json to _run8.json, docs/mechanisms_24.md sections 40 and 47): what the shared
data path does with conflicted loads after barriers and from few warps, and the probe's kernels
running in gpusim with the results a GPU gives."""
import json

import numpy as np

import gpusim
from validate import scan_phases_probe as probe
from validate.datadir import DATA_DIR

RUN = json.loads((DATA_DIR / "scan_phases_h100_run5.json").read_text())
ROWS = {r["case"]: r for r in RUN["kernels"]}
RUN6 = {r["case"]: r for r in json.loads((DATA_DIR / "scan_phases_h100_run6.json").read_text())["kernels"]}
RUN7 = {r["case"]: r for r in json.loads((DATA_DIR / "scan_phases_h100_run7.json").read_text())["kernels"]}
RUN8 = {r["case"]: r for r in json.loads((DATA_DIR / "scan_phases_h100_run8.json").read_text())["kernels"]}


def _cycles(case):
    return ROWS[case]["cycles_per_step"]


def _wavefronts_per_phase(case):
    m = ROWS[case]["metrics"]
    total = (m.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum") or 0) + \
        (m.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum") or 0)
    return total / 132 / (probe.REPS * probe.PHASES)


def test_a_barrier_before_each_conflicted_load_costs_the_path_nothing():
    assert _cycles("bar_k32") / _cycles("nobar_k32") < 1.03


def test_every_warp_of_four_blocks_gets_a_wavefront_a_cycle():
    assert 1.0 <= _cycles("bar_k32") / _wavefronts_per_phase("bar_k32") <= 1.1


def test_the_same_wavefronts_from_fewer_warps_with_more_conflicts_take_longer():
    shapes = ["few_k2_w16_l2", "few_k4_w8_l2", "few_k8_w4_l2", "few_k16_w2_l2", "few_k32_w1_l2"]
    assert all(abs(_wavefronts_per_phase(c) - 256) < 1 for c in shapes)
    assert [_cycles(c) for c in shapes] == sorted(_cycles(c) for c in shapes)


def test_a_second_warps_few_loads_cost_nothing_beside_one_warp_in_the_same_code():
    # run 6: the branchy two-warp code with warp B absent; section 40 had read run 5's +30 cycles (against a
    # predicated one-warp kernel) as the second warp's cost: it was the code's (docs/mechanisms_24.md section 47)
    alone = RUN6["two_k8l4_absent"]["cycles_per_step"]
    assert abs(RUN6["two_k8l4_k1l4_sp1"]["cycles_per_step"] - alone) < 3
    assert abs(RUN6["two_k8l4_k8l1_sp1"]["cycles_per_step"] - alone) < 3


def test_warps_on_one_sub_partition_take_what_warps_on_four_take():
    # run 7: a wavefront every 2 cycles is each warp's rate, not a sub-partition's port
    for k in (8, 16, 32):
        assert abs(RUN7[f"mask_k{k}_s4"]["cycles_per_step"] / RUN7[f"mask_k{k}_w4"]["cycles_per_step"] - 1) < 0.08


def test_warps_of_other_blocks_on_one_sub_partition_take_what_one_blocks_warps_take():
    # run 8: each block's warp 0 (sub-partition 0) of 4 blocks a SM, no barrier, against warps 0, 4, 8, 12 of one block
    for k in (2, 8, 32):
        assert abs(RUN8[f"mask_k{k}_w1_528"]["cycles_per_step"] / RUN8[f"mask_k{k}_s4"]["cycles_per_step"] - 1) < 0.05


def test_eight_warps_keep_the_path_at_k_plus_one_cycles_an_access():
    for k in (1, 2, 4, 8, 16, 32):
        per_access = RUN7[f"mask_k{k}_w8"]["cycles_per_step"] / 32          # 8 warps x 4 loads an iteration
        assert abs(per_access - (k + 1)) < 0.1 * (k + 1)


def test_the_textbook_scan_runs_at_two_cycles_a_wavefront_at_four_blocks_a_sm():
    assert 1.9 <= _cycles("scan_shared") / _wavefronts_per_phase("scan_shared") <= 2.1


def test_the_few_warps_kernel_sums_what_a_gpu_would():
    x = np.ones(1056 * 1024, np.float32)
    out = np.zeros(1056 * 1024, np.float32)
    gpusim.launch(gpusim.CudaSource(probe.SOURCE, "few_k8_w4_l2"), 1, 512, (x, out, np.int32(1)), gpu="h100")
    # threads of the first 4 warps load two ones a phase over 21 phases; the rest none
    assert (out[:128] == 42).all() and (out[128:512] == 0).all()
